package render

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/machine-api-operator/machine-api-operator/pkg/leaderelection"
	"github.com/machine-api-operator/machine-api-operator/pkg/names"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// Container names of the operand Deployment.
const (
	MachineSetContainer         = "machineset-controller"
	MachineContainer            = "machine-controller"
	NodeLinkContainer           = "nodelink-controller"
	MachineHealthCheckContainer = "machine-healthcheck-controller"
	TerminationHandlerContainer = "termination-handler"
)

// Port names and numbers, distinct in the pod, as upstream's (nodelink health
// 9444, keeping 9443 free). See docs/contract.md.
const (
	portWebhookServer  = "webhook-server"
	portMachineWebhook = "machine-webhook"

	webhookServerPort  = 8443
	machineWebhookPort = 8440
	webhookServicePort = 443

	machineSetHealthPort = 9441
	machineHealthPort    = 9440
	mhcHealthPort        = 9442
	nodeLinkHealthPort   = 9444

	machineSetMetricsPort = 8082
	machineMetricsPort    = 8081
	mhcMetricsPort        = 8083
	nodeLinkMetricsPort   = 8084

	machineSetMetricsName = "machineset-mtrc"
	machineMetricsName    = "machine-mtrc"
	mhcMetricsName        = "mhc-mtrc"
	nodeLinkMetricsName   = "nodelink-mtrc"

	webhookCertDir = "/etc/machine-api-operator/tls"

	// metricsCertVolume mounts ControllersMetricsCertSecretName (service-ca only).
	metricsCertVolume = "machine-api-controllers-tls"
	metricsCertDir    = "/etc/tls/private"
)

var controllerLabels = map[string]string{"api": "clusterapi", "k8s-app": "controller"}

// OpenShift-only scheduling of the operand (see config.OnOpenShift).
const (
	workloadManagementAnnotation = "target.workload.openshift.io/management"
	workloadManagementValue      = `{"effect": "PreferredDuringScheduling"}`
	requiredSCCAnnotation        = "openshift.io/required-scc"
	systemNodeCritical           = "system-node-critical"
	masterNodeLabel              = "node-role.kubernetes.io/master"
	// trustedCADependencyPrefix: the trusted CA bundle's hash on the pod
	// template rolls the pods (OpenShift's key: dep-<namespace>.<name>.configmap).
	trustedCADependencyPrefix = "operator.openshift.io/dep-"
)

// deployment renders config.OperandDeploymentName: control-plane nodes and
// system-node-critical only on OpenShift (vanilla may have neither).
func deployment(cfg config.Config) *appsv1.Deployment {
	containers := []corev1.Container{
		operandContainer(cfg, operand{
			name: MachineSetContainer, image: cfg.Images.MachineAPIOperator, command: "/machineset-controller",
			healthPort: machineSetHealthPort, metricsPort: machineSetMetricsPort, metricsName: machineSetMetricsName,
			webhookPort: portWebhookServer, webhookNumber: webhookServerPort, certVolume: "machineset-webhook-cert",
			extraArgs:   append(clientArgs(), featureGatesArg(cfg), "--webhook-client-ca-file="+webhookClientCADir+"/"+WebhookClientCAKey),
			extraMounts: []corev1.VolumeMount{{Name: webhookClientCAVolume, MountPath: webhookClientCADir, ReadOnly: true}},
		}),
	}
	if providerIsOurs(cfg) {
		args := append(clientArgs(), "--max-concurrent-reconciles="+strconv.Itoa(kubemarkWorkers), featureGatesArg(cfg))
		if kubemarkPlatform(cfg) {
			args = append(args, "--machine-safety-orphan-vms-period="+kubemarkOrphanPeriod)
		}
		containers = append(containers, operandContainer(cfg, operand{
			name: MachineContainer, image: cfg.ProviderImage, command: "/machine-controller-manager",
			healthPort: machineHealthPort, metricsPort: machineMetricsPort, metricsName: machineMetricsName,
			webhookPort: portMachineWebhook, webhookNumber: machineWebhookPort, certVolume: "machine-webhook-cert",
			extraArgs: args,
			extraEnv:  machineControllerEnv(cfg),
		}))
	} else {
		containers = append(containers, providerContainer(cfg))
	}
	containers = append(containers, operandContainer(cfg, operand{
		name: NodeLinkContainer, image: cfg.Images.MachineAPIOperator, command: "/nodelink-controller",
		healthPort: nodeLinkHealthPort, metricsPort: nodeLinkMetricsPort, metricsName: nodeLinkMetricsName,
		extraArgs: append(clientArgs(), fmt.Sprintf("--max-concurrent-reconciles=%d", nodeLinkWorkers)),
	}))
	if cfg.MachineHealthCheckEnabled {
		args := clientArgs()
		if cfg.NodeMaintenanceForeign { // another operator runs the NodeMaintenance controller
			args = append(args, "--node-maintenance=false")
		}
		containers = append(containers, operandContainer(cfg, operand{
			name: MachineHealthCheckContainer, image: cfg.Images.MachineAPIOperator, command: "/machine-healthcheck",
			healthPort: mhcHealthPort, metricsPort: mhcMetricsPort, metricsName: mhcMetricsName,
			extraArgs: args,
		}))
	}
	if providerMetricsProxied(cfg) {
		containers = append(containers, providerMetricsProxy(cfg))
	}
	volumes := []corev1.Volume{
		secretVolume("machineset-webhook-cert", config.WebhookCertSecretName),
		secretVolume("machine-webhook-cert", config.MachineWebhookCertSecretName),
		webhookClientCAVolumeSource(),
	}
	if cfg.Webhook.ServiceCA {
		volumes = append(volumes, secretVolume(metricsCertVolume, ControllersMetricsCertSecretName))
	}
	annotations := map[string]string{
		"kubectl.kubernetes.io/default-container": MachineContainer,
		requiredSCCAnnotation:                     "restricted-v2", // ignored off OpenShift
	}
	if !providerIsOurs(cfg) {
		volumes = append(volumes, providerVolumes()...)
		if cfg.TrustedCAHash != "" {
			annotations[trustedCADependencyPrefix+cfg.Namespace+"."+names.TrustedCAConfigMapName+".configmap"] = cfg.TrustedCAHash
		}
	}
	var nodeSelector map[string]string
	var priorityClass string
	if cfg.OnOpenShift() {
		annotations[workloadManagementAnnotation] = workloadManagementValue
		nodeSelector = map[string]string{masterNodeLabel: ""}
		priorityClass = systemNodeCritical
	}

	return &appsv1.Deployment{
		TypeMeta:   typeMeta("apps/v1", "Deployment"),
		ObjectMeta: objectMeta(cfg.Namespace, config.OperandDeploymentName, controllerLabels),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(controllerLabels)},
			// The API default, rendered so the spec has no empty strategy.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      podLabels(controllerLabels),
					Annotations: annotations,
				},
				Spec: corev1.PodSpec{
					ServiceAccountName: ControllersServiceAccountName,
					NodeSelector:       nodeSelector,
					PriorityClassName:  priorityClass,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Tolerations: []corev1.Toleration{
						{Key: "node-role.kubernetes.io/master", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
						{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
						{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists},
						{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](120)},
						{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](120)},
					},
					Containers: containers,
					Volumes:    volumes,
				},
			},
		},
	}
}

// operand describes one controller container of the Deployment.
type operand struct {
	name, image, command    string
	healthPort, metricsPort int32
	metricsName             string
	webhookPort             string // port name, "" if the container serves no webhook
	webhookNumber           int32
	certVolume              string // mounted at webhookCertDir when webhookPort is set
	extraArgs               []string
	extraEnv                []corev1.EnvVar
	extraMounts             []corev1.VolumeMount
}

// providerIsOurs: the machine-controller container runs this project's binary.
func providerIsOurs(cfg config.Config) bool {
	return cfg.ProviderImage == cfg.Images.MachineAPIOperator ||
		kubemarkPlatform(cfg)
}

func operandContainer(cfg config.Config, o operand) corev1.Container {
	args := append(openShiftOperandArgs(cfg),
		fmt.Sprintf("--health-probe-bind-address=:%d", o.healthPort),
		fmt.Sprintf("--metrics-bind-address=:%d", o.metricsPort))
	var ports []corev1.ContainerPort
	var mounts []corev1.VolumeMount
	if o.webhookPort != "" {
		ports = append(ports, tcpPort(o.webhookPort, o.webhookNumber))
		mounts = append(mounts, corev1.VolumeMount{Name: o.certVolume, MountPath: webhookCertDir, ReadOnly: true})
	}
	// Else they serve self-signed metrics certificates.
	if cfg.Webhook.ServiceCA {
		args = append(args, "--metrics-cert-dir="+metricsCertDir)
		mounts = append(mounts, corev1.VolumeMount{Name: metricsCertVolume, MountPath: metricsCertDir, ReadOnly: true})
	}
	args = append(args, TLSArgs(cfg.TLS)...)
	args = append(args, o.extraArgs...)
	mounts = append(mounts, o.extraMounts...)
	// Unique per pod: a shared name draws an API warning on every apply.
	healthName := strings.TrimSuffix(o.metricsName, "mtrc") + "hlth"
	ports = append(ports, tcpPort(healthName, o.healthPort), tcpPort(o.metricsName, o.metricsPort))

	// The pod is the leader-election identity: a restarted container takes its Lease back at once.
	env := append(append(proxyEnv(cfg), o.extraEnv...),
		corev1.EnvVar{Name: leaderelection.PodNameEnv, ValueFrom: fieldRef("metadata.name")},
		corev1.EnvVar{Name: leaderelection.PodUIDEnv, ValueFrom: fieldRef("metadata.uid")})

	return corev1.Container{
		Name:                     o.name,
		Image:                    o.image,
		Command:                  []string{o.command},
		Args:                     args,
		Env:                      env,
		Ports:                    ports,
		Resources:                requests(),
		VolumeMounts:             mounts,
		ReadinessProbe:           httpProbe("/readyz", o.healthPort),
		LivenessProbe:            httpProbe("/healthz", o.healthPort),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          restrictedSecurityContext(),
	}
}

// Client and worker sizing of this project's operand binaries, measured by
// the scale benchmark. See docs/performance.md.
const (
	operandQPS      = 200
	operandBurst    = 400
	kubemarkWorkers = 50
	nodeLinkWorkers = 50
)

// clientArgs sizes the API client of this project's binaries.
func clientArgs() []string {
	return []string{fmt.Sprintf("--kube-api-qps=%d", operandQPS), fmt.Sprintf("--kube-api-burst=%d", operandBurst)}
}

// featureGatesArg passes the gates as OpenShift passes them to its own.
func featureGatesArg(cfg config.Config) string {
	return "--feature-gates=" + FeatureGatesArg(cfg.ProviderFeatureGates)
}

// kubemarkOrphanPeriod: kubemark's instances are free test Nodes, collected
// in minutes. See docs/safety.md.
const kubemarkOrphanPeriod = "1m"

// machineControllerEnv: the node it runs on and the release (omitted when unknown).
func machineControllerEnv(cfg config.Config) []corev1.EnvVar {
	env := []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: fieldRef("spec.nodeName")}}
	if cfg.ReleaseVersion != "" {
		env = append(env, corev1.EnvVar{Name: "RELEASE_VERSION", Value: cfg.ReleaseVersion})
	}
	return env
}

// proxyEnv returns the proxy variables that are set, in a fixed order.
func proxyEnv(cfg config.Config) []corev1.EnvVar {
	var env []corev1.EnvVar
	for _, v := range []struct{ name, value string }{
		{"HTTP_PROXY", cfg.Proxy.HTTPProxy},
		{"HTTPS_PROXY", cfg.Proxy.HTTPSProxy},
		{"NO_PROXY", cfg.Proxy.NoProxy},
	} {
		if v.value != "" {
			env = append(env, corev1.EnvVar{Name: v.name, Value: v.value})
		}
	}
	return env
}

// fieldRef renders apiVersion explicitly: the server defaults it to v1.
func fieldRef(path string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
}

// tcpPort renders the protocol: it is part of the ports' list-map key.
func tcpPort(name string, port int32) corev1.ContainerPort {
	return corev1.ContainerPort{Name: name, ContainerPort: port, Protocol: corev1.ProtocolTCP}
}

func requests() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("10m"),
		corev1.ResourceMemory: resource.MustParse("20Mi"),
	}}
}

// httpProbe probes the health port, server defaults explicit.
func httpProbe(path string, port int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: path, Port: intstr.FromInt32(port), Scheme: corev1.URISchemeHTTP,
		}},
		TimeoutSeconds:   5,
		PeriodSeconds:    10,
		SuccessThreshold: 1,
		FailureThreshold: 3,
	}
}

// restrictedSecurityContext satisfies the "restricted" Pod Security Standard
// and restricted-v2; no runAsUser (OpenShift assigns one).
func restrictedSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// The webhook client CA: with the ConfigMap present the machineset-controller serves only
// clients whose certificate it signed (the API server's); absent, any client (docs/openshift.md).
const (
	WebhookClientCAConfigMapName = "machine-api-webhook-client-ca"
	WebhookClientCAKey           = "ca.crt"
	webhookClientCAVolume        = "webhook-client-ca"
	webhookClientCADir           = "/etc/machine-api-operator/webhook-client-ca"
)

func webhookClientCAVolumeSource() corev1.Volume {
	return corev1.Volume{Name: webhookClientCAVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: WebhookClientCAConfigMapName},
		DefaultMode:          ptr.To[int32](420), Optional: ptr.To(true),
	}}}
}

// secretVolume mounts a required serving-certificate secret: no webhook
// server starts without a certificate.
func secretVolume(name, secret string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secret, DefaultMode: ptr.To[int32](420),
	}}}
}

// podLabels are the selector labels plus part-of; not managed-by, which would
// make pruning consider pods.
func podLabels(selector map[string]string) map[string]string {
	out := maps.Clone(selector)
	out[PartOfLabel] = PartOfValue
	return out
}
