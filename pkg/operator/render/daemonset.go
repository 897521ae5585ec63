package render

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"maps"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

const (
	kubeletKubeconfig = "/var/lib/kubelet/kubeconfig"
	kubeletPKI        = "/var/lib/kubelet/pki"
	// InterruptibleInstanceLabel marks nodes of spot/preemptible instances.
	InterruptibleInstanceLabel = "machine.openshift.io/interruptible-instance"
)

var terminationHandlerLabels = map[string]string{"api": "clusterapi", "k8s-app": "termination-handler"}

// terminationHandler marks a spot instance's node Terminating before reclaim: host network,
// the kubelet's credentials (its own node only; no token, no RBAC). See docs/safety.md.
func terminationHandler(cfg config.Config) *appsv1.DaemonSet {
	env := append(proxyEnv(cfg),
		corev1.EnvVar{Name: "KUBECONFIG", Value: kubeletKubeconfig},
		corev1.EnvVar{Name: "NODE_NAME", ValueFrom: fieldRef("spec.nodeName")},
	)
	sc := restrictedSecurityContext()
	sc.RunAsNonRoot = nil // root: the kubelet credentials are 0600
	var annotations map[string]string
	var priorityClass string
	if cfg.OnOpenShift() {
		annotations = map[string]string{
			workloadManagementAnnotation: workloadManagementValue,
			requiredSCCAnnotation:        config.TerminationHandlerName,
		}
		priorityClass = systemNodeCritical
	}
	return &appsv1.DaemonSet{
		TypeMeta:   typeMeta("apps/v1", "DaemonSet"),
		ObjectMeta: objectMeta(cfg.Namespace, config.TerminationHandlerName, terminationHandlerLabels),
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(terminationHandlerLabels)},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type:          appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromString("10%"))},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels(terminationHandlerLabels), Annotations: annotations},
				Spec: corev1.PodSpec{
					ServiceAccountName:           TerminationHandlerServiceAccountName,
					PriorityClassName:            priorityClass,
					AutomountServiceAccountToken: ptr.To(false),
					HostNetwork:                  true,
					NodeSelector: map[string]string{
						InterruptibleInstanceLabel: "",
						"kubernetes.io/os":         "linux",
					},
					Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
					SecurityContext: &corev1.PodSecurityContext{
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:    TerminationHandlerContainer,
						Image:   cfg.TerminationHandlerImage,
						Command: []string{"/termination-handler"},
						Args: []string{
							"--logtostderr=true",
							"--v=3",
							"--node-name=$(NODE_NAME)",
							"--namespace=" + cfg.Namespace,
							"--poll-interval-seconds=5",
						},
						Env:       env,
						Resources: requests(),
						VolumeMounts: []corev1.VolumeMount{
							{Name: "kubeconfig", MountPath: kubeletKubeconfig, ReadOnly: true},
							{Name: "pki", MountPath: kubeletPKI, ReadOnly: true},
						},
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
						SecurityContext:          sc,
					}},
					Volumes: []corev1.Volume{
						hostPathVolume("kubeconfig", kubeletKubeconfig),
						hostPathVolume("pki", kubeletPKI),
					},
				},
			},
		},
	}
}

// hostPathVolume leaves type unset: the server defaults it to "" (no check).
func hostPathVolume(name, path string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}}
}
