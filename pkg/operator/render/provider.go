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

// A platform provider image (OpenShift's AWS, Azure, GCP, OpenStack,
// BareMetal, IBM Cloud, PowerVS or Nutanix machine controller) is not this
// project's: it accepts OpenShift's flag contract and nothing else (Go's flag
// package exits on an unknown flag), serves health on its default
// --health-addr :9440 and plain-HTTP metrics on its default
// --metrics-bind-address :8081, which OpenShift exposes through a
// kube-rbac-proxy sidecar. The machine-controller container therefore gets
// exactly what OpenShift's operator renders for it.

// ProviderMetricsProxyContainer is the kube-rbac-proxy sidecar that serves a
// provider image's metrics over HTTPS, as on OpenShift.
const ProviderMetricsProxyContainer = "kube-rbac-proxy-machine-mtrc"

const (
	// providerMetricsProxyPort is where the sidecar serves machine-mtrc
	// (OpenShift's port number for it).
	providerMetricsProxyPort = 8441
	// providerMaxConcurrentReconciles is what OpenShift's operator passes to
	// the Azure and GCP providers.
	providerMaxConcurrentReconciles = 10
)

// ProviderArgs are the arguments of a provider image's machine-controller
// container: OpenShift's common operand arguments and its feature gates,
// --max-concurrent-reconciles on Azure and GCP, the TLS arguments on
// BareMetal (whose provider serves the metal3 remediation webhooks).
func ProviderArgs(cfg config.Config) []string {
	args := append(openShiftOperandArgs(cfg), "--feature-gates="+FeatureGatesArg(cfg.ProviderFeatureGates))
	switch cfg.PlatformType {
	case configv1.AzurePlatformType, configv1.GCPPlatformType:
		args = append(args, "--max-concurrent-reconciles="+strconv.Itoa(providerMaxConcurrentReconciles))
	case configv1.BareMetalPlatformType:
		args = append(args, TLSArgs(cfg.TLS)...)
	}
	return args
}

// openShiftOperandArgs are the arguments every operand container gets on
// OpenShift; this project's binaries accept them too.
func openShiftOperandArgs(cfg config.Config) []string {
	return []string{
		"--logtostderr=true",
		"--v=3",
		"--leader-elect=true",
		"--leader-elect-lease-duration=120s",
		"--namespace=" + cfg.Namespace,
	}
}

// FeatureGatesArg renders gates as --feature-gates takes them:
// name=bool pairs sorted by name, comma-separated.
func FeatureGatesArg(gates map[string]bool) string {
	pairs := make([]string, 0, len(gates))
	for name, enabled := range gates {
		pairs = append(pairs, name+"="+strconv.FormatBool(enabled))
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

// TLSArgs are --tls-cipher-suites (omitted when the profile has no suite Go
// can configure, i.e. TLS 1.3 only) and --tls-min-version.
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

// providerContainer is the machine-controller container of a provider image.
// Its security context is restricted except for the root filesystem: the
// images are not built for a read-only one (OpenShift does not require it).
func providerContainer(cfg config.Config) corev1.Container {
	sc := restrictedSecurityContext()
	sc.ReadOnlyRootFilesystem = nil
	c := corev1.Container{
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
		// OpenShift probes readiness on /healthz and liveness on /readyz
		// of the provider's health address.
		ReadinessProbe:           httpProbe("/healthz", machineHealthPort),
		LivenessProbe:            httpProbe("/readyz", machineHealthPort),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          sc,
	}
	return c
}

// Volumes of a provider image's machine-controller container, as on
// OpenShift: the trusted CA bundle where the image's TLS stack reads it, and
// a projected ServiceAccount token for the cloud's short-lived credentials
// (the CredentialsRequests name the ServiceAccount).
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

// providerVolumes are the trusted CA bundle (optional: it exists only on
// OpenShift, where the network operator fills it) and the bound token.
// Values the server would default (modes, expiration) are explicit.
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

// providerMetricsProxied: a provider image serves plain-HTTP metrics on
// localhost:8081; the kube-rbac-proxy sidecar (images.json kubeRBACProxy)
// serves them over HTTPS with authentication and authorization, like this
// project's binaries do themselves. Without that image the provider's
// metrics are not exposed.
func providerMetricsProxied(cfg config.Config) bool {
	return !providerIsOurs(cfg) && cfg.Images.KubeRBACProxy != ""
}

// providerMetricsProxy is the kube-rbac-proxy sidecar in front of a provider
// image's metrics. It authorizes GET /metrics with a SubjectAccessReview (no
// --config-file, the same rule this project's metrics endpoints apply) and
// serves the service-ca certificate where there is one, else a self-signed
// one.
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

// machineMetricsServicePort is the machine-mtrc port of the pod: this project's
// machine controller serves it itself, a provider image's through the
// sidecar; 0 when nothing serves it.
func machineMetricsServicePort(cfg config.Config) int32 {
	switch {
	case providerIsOurs(cfg):
		return machineMetricsPort
	case providerMetricsProxied(cfg):
		return providerMetricsProxyPort
	}
	return 0
}
