package render

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/machine-api-operator/machine-api-operator/pkg/names"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// A platform provider image accepts OpenShift's flag contract only (an
// unknown flag exits), so its container gets exactly what OpenShift renders.

// ProviderMetricsProxyContainer is the kube-rbac-proxy sidecar that serves a
// provider image's metrics over HTTPS, as on OpenShift.
const ProviderMetricsProxyContainer = "kube-rbac-proxy-machine-mtrc"

// OpenShift's sidecar port for machine-mtrc and its Azure and GCP reconcilers.
const (
	providerMetricsProxyPort        = 8441
	providerMaxConcurrentReconciles = 10
)

// ProviderArgs are the arguments of a provider image's machine-controller
// container, as OpenShift's operator renders them.
func ProviderArgs(cfg config.Config) []string {
	args := append(openShiftOperandArgs(cfg), featureGatesArg(cfg))
	switch cfg.PlatformType {
	case configv1.AzurePlatformType, configv1.GCPPlatformType:
		args = append(args, "--max-concurrent-reconciles="+strconv.Itoa(providerMaxConcurrentReconciles))
	case configv1.BareMetalPlatformType:
		args = append(args, TLSArgs(cfg.TLS)...)
	}
	return args
}

// openShiftOperandArgs are the arguments every operand container gets on OpenShift.
func openShiftOperandArgs(cfg config.Config) []string {
	return []string{
		"--logtostderr=true",
		"--v=3",
		"--leader-elect=true",
		"--leader-elect-lease-duration=120s",
		"--namespace=" + cfg.Namespace,
	}
}

// FeatureGatesArg renders gates as --feature-gates takes them, sorted.
func FeatureGatesArg(gates map[string]bool) string {
	pairs := make([]string, 0, len(gates))
	for name, enabled := range gates {
		pairs = append(pairs, name+"="+strconv.FormatBool(enabled))
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

// TLSArgs are --tls-cipher-suites (if any) and --tls-min-version.
func TLSArgs(p config.TLSProfile) []string {
	var args []string
	if len(p.CipherSuites) > 0 {
		args = append(args, "--tls-cipher-suites="+strings.Join(p.CipherSuites, ","))
	}
	if p.MinVersion != "" {
		args = append(args, "--tls-min-version="+p.MinVersion)
	}
	return args
}

// providerContainer is the machine-controller container of a provider image:
// restricted, but with a writable root filesystem (the images need one).
func providerContainer(cfg config.Config) corev1.Container {
	sc := restrictedSecurityContext()
	sc.ReadOnlyRootFilesystem = nil
	return corev1.Container{
		Name:    MachineContainer,
		Image:   cfg.ProviderImage,
		Command: []string{"/machine-controller-manager"},
		Args:    ProviderArgs(cfg),
		Env:     append(proxyEnv(cfg), machineControllerEnv(cfg)...),
		Ports: []corev1.ContainerPort{
			tcpPort(portMachineWebhook, machineWebhookPort),
			tcpPort("machine-hlth", machineHealthPort),
		},
		Resources: requests(),
		VolumeMounts: []corev1.VolumeMount{
			{Name: trustedCAVolume, MountPath: trustedCADir, ReadOnly: true},
			{Name: boundSATokenVolume, MountPath: boundSATokenDir, ReadOnly: true},
			{Name: "machine-webhook-cert", MountPath: webhookCertDir, ReadOnly: true},
		},
		// As OpenShift: readiness on /healthz, liveness on /readyz.
		ReadinessProbe:           httpProbe("/healthz", machineHealthPort),
		LivenessProbe:            httpProbe("/readyz", machineHealthPort),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          sc,
	}
}

// Volumes of a provider image's container, as on OpenShift: the trusted CA
// bundle and a projected token for short-lived cloud credentials.
const (
	trustedCAVolume     = "trusted-ca"
	trustedCADir        = "/etc/pki/ca-trust/extracted/pem"
	trustedCAFile       = "tls-ca-bundle.pem"
	boundSATokenVolume  = "bound-sa-token"
	boundSATokenDir     = "/var/run/secrets/openshift/serviceaccount"
	boundSATokenPath    = "token"
	boundSATokenAud     = "openshift"
	boundSATokenSeconds = 3600
)

// providerVolumes: the trusted CA bundle is optional (OpenShift only).
func providerVolumes() []corev1.Volume {
	return []corev1.Volume{
		{Name: trustedCAVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: names.TrustedCAConfigMapName},
			Items:                []corev1.KeyToPath{{Key: names.TrustedCAKey, Path: trustedCAFile}},
			DefaultMode:          ptr.To[int32](420),
			Optional:             ptr.To(true),
		}}},
		{Name: boundSATokenVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
				Audience: boundSATokenAud, ExpirationSeconds: ptr.To[int64](boundSATokenSeconds), Path: boundSATokenPath,
			}}},
			DefaultMode: ptr.To[int32](420),
		}}},
	}
}

// providerMetricsProxied: a provider image's plain-HTTP metrics are served
// over HTTPS by the kube-rbac-proxy sidecar, if images.json has it.
func providerMetricsProxied(cfg config.Config) bool {
	return !providerIsOurs(cfg) && cfg.Images.KubeRBACProxy != ""
}

// providerMetricsProxy is the kube-rbac-proxy sidecar: SubjectAccessReview
// for GET /metrics, service-ca's certificate if any, else self-signed.
func providerMetricsProxy(cfg config.Config) corev1.Container {
	args := []string{
		fmt.Sprintf("--secure-listen-address=0.0.0.0:%d", providerMetricsProxyPort),
		fmt.Sprintf("--upstream=http://localhost:%d/", machineMetricsPort),
	}
	var mounts []corev1.VolumeMount
	if cfg.Webhook.ServiceCA {
		args = append(args, "--tls-cert-file="+metricsCertDir+"/tls.crt", "--tls-private-key-file="+metricsCertDir+"/tls.key")
		mounts = append(mounts, corev1.VolumeMount{Name: metricsCertVolume, MountPath: metricsCertDir, ReadOnly: true})
	}
	args = append(args, TLSArgs(cfg.TLS)...)
	args = append(args, "--logtostderr=true", "--v=3")
	sc := restrictedSecurityContext()
	sc.ReadOnlyRootFilesystem = nil
	return corev1.Container{
		Name:                     ProviderMetricsProxyContainer,
		Image:                    cfg.Images.KubeRBACProxy,
		Args:                     args,
		Ports:                    []corev1.ContainerPort{tcpPort(machineMetricsName, providerMetricsProxyPort)},
		Resources:                requests(),
		VolumeMounts:             mounts,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          sc,
	}
}

// machineMetricsServicePort is the pod's machine-mtrc port, 0 when nothing serves it.
func machineMetricsServicePort(cfg config.Config) int32 {
	switch {
	case providerIsOurs(cfg):
		return machineMetricsPort
	case providerMetricsProxied(cfg):
		return providerMetricsProxyPort
	}
	return 0
}
