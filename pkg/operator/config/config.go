// Package config turns the operator's inputs into one immutable Config value
// that rendering is a pure function of.
package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machine-api-operator/machine-api-operator/pkg/names"
)

// Fixed names shared with OpenShift's Machine API, aliases of package names.
const (
	DefaultNamespace       = names.DefaultNamespace
	ClusterOperatorName    = names.ClusterOperatorName
	ImagesConfigMapName    = names.ImagesConfigMapName
	ImagesConfigMapKey     = names.ImagesConfigMapKey
	ClusterConfigName      = names.ClusterConfigName
	KubemarkPlatformName   = names.KubemarkPlatformName
	OperatorLeaseName      = names.OperatorLeaseName
	OperandDeploymentName  = names.OperandDeploymentName
	TerminationHandlerName = names.TerminationHandlerName
	ManagedByLabel         = names.ManagedByLabel
	ManagedByValue         = names.ManagedByValue
	FieldManager           = names.FieldManager

	WebhookServiceName                        = names.WebhookServiceName
	WebhookCertSecretName                     = names.WebhookCertSecretName
	MachineWebhookServiceName                 = names.MachineWebhookServiceName
	MachineWebhookCertSecretName              = names.MachineWebhookCertSecretName
	WebhookConfigurationName                  = names.WebhookConfigurationName
	Metal3RemediationWebhookConfigurationName = names.Metal3RemediationWebhookConfigurationName

	// FeatureGateDisableMachineHealthCheck turns the MHC controller off.
	FeatureGateDisableMachineHealthCheck = "MachineAPIOperatorDisableMachineHealthCheckController"
)

// Config is everything rendering needs. Build it with Build; it holds no
// pointers into the inputs.
type Config struct {
	Namespace            string
	ReleaseVersion       string // may be empty
	PlatformType         configv1.PlatformType
	ExternalPlatformName string // e.g. "kubemark"
	// NoOp: the platform has no Machine API provider; nothing is rendered
	// but the CRDs. NoOpReason explains why.
	NoOp       bool
	NoOpReason string

	Images        Images
	ProviderImage string // runs the machine-controller container
	// TerminationHandlerImage is set on platforms with spot termination notices.
	TerminationHandlerImage   string
	MachineHealthCheckEnabled bool
	MaxConcurrentReconciles   int // for the machine controller; 0 = its default

	Proxy   ProxyEnv
	Webhook WebhookTLS

	// FeatureGates are the resolved gates of the FeatureGate "cluster".
	FeatureGates map[string]bool
	// ProviderFeatureGates are exactly ProviderFeatureGateNames, passed to the provider.
	ProviderFeatureGates map[string]bool
	TLS                  TLSProfile
	// TrustedCAHash digests the trusted CA bundle ("" if absent); a change rolls the operand.
	TrustedCAHash string

	// OpenShift: the ClusterVersion "version" exists; the CVO installs the
	// Machine API CRDs. See docs/architecture.md.
	OpenShift bool
	// NodeMaintenanceForeign: another component installed the NodeMaintenance
	// CRD (field managers NodeMaintenanceOwner); its controller is not rendered.
	NodeMaintenanceForeign bool
	NodeMaintenanceOwner   string
}

// OnOpenShift reports whether the CVO manages the cluster or service-ca serves the webhook
// certificates; it adds OpenShift's scheduling and SCC annotations.
func (c Config) OnOpenShift() bool { return c.OpenShift || c.Webhook.ServiceCA }

// ProviderFeatureGateNames are the gates OpenShift's operator passes to the
// provider images (which refuse unknown ones).
var ProviderFeatureGateNames = []string{"AWSDedicatedHosts", "AzureWorkloadIdentity", "MachineAPIMigration", "VSphereHostVMGroupZonal"}

// WebhookTLS says who issues the webhook serving certificates.
type WebhookTLS struct {
	ServiceCA bool   // service-ca issues them and injects the CA bundle
	CABundle  []byte // the operator's CA bundle otherwise
}

// ProxyEnv are the proxy variables set on every operand container.
type ProxyEnv struct {
	HTTPProxy  string
	HTTPSProxy string
	NoProxy    string
}

// Inputs are the observed inputs Build combines; nil means "does not exist".
type Inputs struct {
	Namespace          string
	ReleaseVersion     string
	Images             Images
	ImagesErr          error // loading images.json failed
	Infrastructure     *configv1.Infrastructure
	Proxy              *configv1.Proxy
	FeatureGate        *configv1.FeatureGate
	APIServer          *configv1.APIServer // its TLS profile
	TrustedCA          *corev1.ConfigMap   // the trusted CA bundle in Namespace
	Webhook            WebhookTLS
	OpenShift          bool // see Config.OpenShift
	NodeMaintenanceCRD *metav1.PartialObjectMetadata
}

// RendersOperand reports whether the platform has a provider this project can deploy.
func (c Config) RendersOperand() bool { return !c.NoOp }

// Build validates the inputs and derives the Config. Errors are InputErrors
// whose Reason says which input is wrong.
func Build(in Inputs) (Config, error) {
	if in.ImagesErr != nil {
		if ReasonOf(in.ImagesErr) == "" {
			return Config{}, &InputError{Reason: ReasonInvalidImagesJSON, Err: in.ImagesErr}
		}
		return Config{}, in.ImagesErr
	}
	if in.Infrastructure == nil {
		return Config{}, &InputError{Reason: ReasonInfrastructureNotFound,
			Err: errors.New(`infrastructures.config.openshift.io "cluster" not found: create it with status.platformStatus.type set to the cluster's platform`)}
	}
	ps := in.Infrastructure.Status.PlatformStatus
	if ps == nil || ps.Type == "" {
		return Config{}, &InputError{Reason: ReasonInvalidInfrastructure,
			Err: errors.New(`infrastructures.config.openshift.io "cluster" has no status.platformStatus.type: set the platform (for example AWS, None, or External with platformName kubemark)`)}
	}
	gates := ResolveFeatureGates(in.FeatureGate, in.ReleaseVersion)
	crds := ForCRDs(in)
	cfg := Config{
		Namespace:                 crds.Namespace,
		ReleaseVersion:            in.ReleaseVersion,
		PlatformType:              ps.Type,
		ExternalPlatformName:      externalPlatformName(in.Infrastructure),
		Images:                    in.Images,
		MachineHealthCheckEnabled: !gates[FeatureGateDisableMachineHealthCheck],
		Proxy:                     proxyEnv(in.Proxy),
		FeatureGates:              gates,
		ProviderFeatureGates:      providerFeatureGates(gates),
		TLS:                       ResolveTLSProfile(in.APIServer),
		TrustedCAHash:             configMapHash(in.TrustedCA),
		Webhook:                   in.Webhook,
		OpenShift:                 crds.OpenShift,
		NodeMaintenanceForeign:    crds.NodeMaintenanceForeign,
		NodeMaintenanceOwner:      crds.NodeMaintenanceOwner,
	}
	cfg.ProviderImage, cfg.NoOpReason = providerImage(cfg.PlatformType, cfg.ExternalPlatformName, in.Images)
	if cfg.ProviderImage == "" && cfg.NoOpReason == "" {
		// A broken images.json, not a reason to remove the running operand.
		return Config{}, &InputError{Reason: ReasonInvalidImagesJSON,
			Err: fmt.Errorf("images.json has no provider image for platform %s: set %q", platformLabel(cfg.PlatformType, cfg.ExternalPlatformName), providerImageKeys[cfg.PlatformType])}
	}
	if cfg.ProviderImage == "" {
		cfg.NoOp = true
		return cfg, nil
	}
	switch cfg.PlatformType {
	case configv1.GCPPlatformType, configv1.AzurePlatformType:
		cfg.MaxConcurrentReconciles = 10
		fallthrough
	case configv1.AWSPlatformType:
		// The provider image also holds the spot termination handler.
		cfg.TerminationHandlerImage = cfg.ProviderImage
	}
	return cfg, nil
}

// providerImageKeys maps a platform to its provider image's images.json key.
var providerImageKeys = map[configv1.PlatformType]string{
	configv1.AWSPlatformType:       "clusterAPIControllerAWS",
	configv1.AzurePlatformType:     "clusterAPIControllerAzure",
	configv1.GCPPlatformType:       "clusterAPIControllerGCP",
	configv1.OpenStackPlatformType: "clusterAPIControllerOpenStack",
	configv1.BareMetalPlatformType: "clusterAPIControllerBareMetal",
	configv1.VSpherePlatformType:   "clusterAPIControllerVSphere",
	configv1.IBMCloudPlatformType:  "clusterAPIControllerIBMCloud",
	configv1.PowerVSPlatformType:   "clusterAPIControllerPowerVS",
	configv1.NutanixPlatformType:   "clusterAPIControllerNutanix",
	configv1.ExternalPlatformType:  "clusterAPIControllerKubemark",
}

// providerImage maps the platform to its provider image, or to why it is
// NoOp ("" and "": the key is missing from images.json).
func providerImage(t configv1.PlatformType, externalName string, images Images) (string, string) {
	switch {
	case t == configv1.NonePlatformType:
		return "", "platform None has no Machine API provider"
	case t == configv1.ExternalPlatformType && externalName != KubemarkPlatformName:
		return "", fmt.Sprintf("External platform %q has no Machine API provider", externalName)
	}
	key, ok := providerImageKeys[t]
	if !ok {
		return "", fmt.Sprintf("platform %q has no Machine API provider", t)
	}
	return images.byKey(key), ""
}

func platformLabel(t configv1.PlatformType, externalName string) string {
	if t == configv1.ExternalPlatformType && externalName != "" {
		return fmt.Sprintf("%s/%s", t, externalName)
	}
	return string(t)
}

// externalPlatformName is in the spec: the status has none.
func externalPlatformName(infra *configv1.Infrastructure) string {
	if ext := infra.Spec.PlatformSpec.External; ext != nil {
		return ext.PlatformName
	}
	return ""
}

// proxyEnv takes every value from status (observed and validated).
func proxyEnv(p *configv1.Proxy) ProxyEnv {
	if p == nil {
		return ProxyEnv{}
	}
	return ProxyEnv{HTTPProxy: p.Status.HTTPProxy, HTTPSProxy: p.Status.HTTPSProxy, NoProxy: p.Status.NoProxy}
}

// ResolveFeatureGates returns the status gates of the release version (or the only
// entry), else spec.customNoUpgrade's (no status on vanilla); unnamed are false.
func ResolveFeatureGates(fg *configv1.FeatureGate, releaseVersion string) map[string]bool {
	gates := map[string]bool{}
	if fg == nil {
		return gates
	}
	details := fg.Status.FeatureGates
	i := slices.IndexFunc(details, func(d configv1.FeatureGateDetails) bool { return d.Version == releaseVersion })
	if i < 0 && len(details) == 1 {
		i = 0
	}
	if i >= 0 {
		for _, g := range details[i].Disabled {
			gates[string(g.Name)] = false
		}
		for _, g := range details[i].Enabled {
			gates[string(g.Name)] = true
		}
	} else if fg.Spec.FeatureSet == configv1.CustomNoUpgrade && fg.Spec.CustomNoUpgrade != nil {
		for _, g := range fg.Spec.CustomNoUpgrade.Disabled {
			gates[string(g)] = false
		}
		for _, g := range fg.Spec.CustomNoUpgrade.Enabled {
			gates[string(g)] = true
		}
	}
	return gates
}

// configMapHash is a short digest of a ConfigMap's data, "" for none.
func configMapHash(cm *corev1.ConfigMap) string {
	if cm == nil {
		return ""
	}
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
		_, _ = fmt.Fprintf(h, "%d:%s%d:%s", len(k), k, len(cm.Data[k]), cm.Data[k]) // a hash never fails a write
	}
	h.Write([]byte{0})
	for _, k := range slices.Sorted(maps.Keys(cm.BinaryData)) {
		_, _ = fmt.Fprintf(h, "%d:%s%d:%s", len(k), k, len(cm.BinaryData[k]), cm.BinaryData[k]) // a hash never fails a write
	}
	h.Write([]byte{0})
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// providerFeatureGates picks ProviderFeatureGateNames out of the resolved gates.
func providerFeatureGates(gates map[string]bool) map[string]bool {
	out := make(map[string]bool, len(ProviderFeatureGateNames))
	for _, name := range ProviderFeatureGateNames {
		out[name] = gates[name]
	}
	return out
}

// Describe is a short human summary used in Progressing messages and logs.
func (c Config) Describe() string {
	parts := []string{"platform " + platformLabel(c.PlatformType, c.ExternalPlatformName)}
	if c.NoOp {
		parts = append(parts, "NoOp")
	}
	if !c.MachineHealthCheckEnabled {
		parts = append(parts, "MachineHealthCheck disabled")
	}
	if c.Proxy != (ProxyEnv{}) {
		parts = append(parts, "proxy")
	}
	if c.NodeMaintenanceForeign {
		parts = append(parts, "NodeMaintenance by "+c.NodeMaintenanceOwner)
	}
	sort.Strings(parts[1:])
	return strings.Join(parts, ", ")
}
