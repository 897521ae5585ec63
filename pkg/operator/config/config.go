// Package config turns the operator's inputs (images.json, the Infrastructure,
// Proxy and FeatureGate named "cluster", the release version) into one
// immutable Config value that rendering is a pure function of.
package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machine-api-operator/machine-api-operator/pkg/names"
)

// Fixed names shared with OpenShift's Machine API. They are defined in the
// leaf package names, which every binary may import; these are aliases for
// the operator's packages.
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

	// ManagedByLabel marks every object the operator applies, with value
	// ManagedByValue; pruning finds obsolete objects by it and nothing else.
	ManagedByLabel = names.ManagedByLabel
	ManagedByValue = names.ManagedByValue
	// FieldManager is the server-side apply field manager of the operator.
	FieldManager = names.FieldManager

	// WebhookServiceName fronts the machineset-controller webhook server;
	// WebhookCertSecretName holds its serving certificate.
	WebhookServiceName    = names.WebhookServiceName
	WebhookCertSecretName = names.WebhookCertSecretName
	// MachineWebhookServiceName / MachineWebhookCertSecretName: the same for
	// the machine-controller webhook port.
	MachineWebhookServiceName    = names.MachineWebhookServiceName
	MachineWebhookCertSecretName = names.MachineWebhookCertSecretName
	// WebhookConfigurationName names both admission webhook configurations.
	WebhookConfigurationName = names.WebhookConfigurationName
	// Metal3RemediationWebhookConfigurationName names the BareMetal
	// provider's metal3 remediation webhook configurations.
	Metal3RemediationWebhookConfigurationName = names.Metal3RemediationWebhookConfigurationName

	// FeatureGateDisableMachineHealthCheck turns the MHC controller off.
	FeatureGateDisableMachineHealthCheck = "MachineAPIOperatorDisableMachineHealthCheckController"
)

// Config is everything rendering needs. Build it with Build; treat it as
// immutable (it is passed by value and holds no pointers into the inputs).
type Config struct {
	// Namespace the operands run in.
	Namespace string
	// ReleaseVersion is reported in ClusterOperator status.versions; may be empty.
	ReleaseVersion string
	// PlatformType is Infrastructure status.platformStatus.type.
	PlatformType configv1.PlatformType
	// ExternalPlatformName is the External platform's name (e.g. "kubemark").
	ExternalPlatformName string
	// NoOp is true when the platform has no Machine API provider: nothing is
	// rendered and earlier objects are pruned. NoOpReason explains why.
	NoOp       bool
	NoOpReason string

	Images Images
	// ProviderImage runs the machine-controller container.
	ProviderImage string
	// TerminationHandlerImage is set on platforms with spot/preemptible
	// termination notices (AWS, GCP, Azure); empty elsewhere.
	TerminationHandlerImage string
	// MachineHealthCheckEnabled is false when the feature gate disables it.
	MachineHealthCheckEnabled bool
	// MaxConcurrentReconciles for the machine controller; 0 = its default.
	MaxConcurrentReconciles int

	Proxy ProxyEnv
	// Webhook says how webhook serving certificates are provided.
	Webhook WebhookTLS

	// FeatureGates are the resolved gates (name → enabled) of the FeatureGate
	// "cluster"; empty if it does not exist.
	FeatureGates map[string]bool
	// ProviderFeatureGates are the gates passed to the provider image as
	// --feature-gates: exactly ProviderFeatureGateNames, false when the
	// FeatureGate does not name them.
	ProviderFeatureGates map[string]bool

	// TLS is the TLS profile of the operand's TLS servers (see
	// ResolveTLSProfile).
	TLS TLSProfile

	// TrustedCAHash is a digest of the trusted CA bundle ConfigMap
	// (names.TrustedCAConfigMapName), "" when it does not exist; the
	// operand is rolled when it changes.
	TrustedCAHash string

	// OpenShift: the cluster version operator manages the cluster (the
	// ClusterVersion "version" exists). It installs the Machine API CRD
	// variants of the cluster's feature set from the release payload, so
	// the operator does not apply its own.
	OpenShift bool
	// NodeMaintenanceForeign: the NodeMaintenance CRD exists and this
	// operator did not install it (the node-maintenance-operator did).
	// Its CRD, the NodeMaintenance controller and its webhook are then not
	// rendered; NodeMaintenanceOwner names the CRD's field managers.
	NodeMaintenanceForeign bool
	NodeMaintenanceOwner   string
}

// OnOpenShift is true when the cluster is OpenShift: the cluster version
// operator manages it, or service-ca serves the webhook certificates. It
// adds what only OpenShift has: the control-plane nodeSelector, the
// system-node-critical priority class, the workload-partitioning
// annotation and the termination handler's SCC.
func (c Config) OnOpenShift() bool { return c.OpenShift || c.Webhook.ServiceCA }

// ProviderFeatureGateNames are the feature gates OpenShift's operator passes
// to the provider images (which know every one of them and refuse unknown
// ones), in --feature-gates order.
var ProviderFeatureGateNames = []string{"AWSDedicatedHosts", "AzureWorkloadIdentity", "MachineAPIMigration", "VSphereHostVMGroupZonal"}

// WebhookTLS says who issues the webhook serving certificates.
type WebhookTLS struct {
	// ServiceCA is true on OpenShift: the service-ca operator issues the
	// certificates (Service annotation) and injects the CA bundle (webhook
	// configuration annotation).
	ServiceCA bool
	// CABundle is the PEM CA bundle to put in the webhook configurations when
	// the operator issues the certificates itself (ServiceCA false).
	CABundle []byte
}

// ProxyEnv are the proxy variables set on every operand container.
type ProxyEnv struct {
	HTTPProxy  string
	HTTPSProxy string
	NoProxy    string
}

// Inputs are the observed inputs Build combines. Nil pointers mean "does not
// exist". ImagesErr carries the failure to load images.json, if any.
type Inputs struct {
	Namespace      string
	ReleaseVersion string
	Images         Images
	ImagesErr      error
	Infrastructure *configv1.Infrastructure
	Proxy          *configv1.Proxy
	FeatureGate    *configv1.FeatureGate
	// APIServer is the APIServer "cluster" (its TLS profile).
	APIServer *configv1.APIServer
	// TrustedCA is the trusted CA bundle ConfigMap in Namespace.
	TrustedCA *corev1.ConfigMap
	Webhook   WebhookTLS
	// OpenShift: the ClusterVersion "version" exists (see Config.OpenShift).
	OpenShift bool
	// NodeMaintenanceCRD is the NodeMaintenance CRD's metadata, nil when it
	// does not exist.
	NodeMaintenanceCRD *metav1.PartialObjectMetadata
}

// RendersOperand is true when the operand (controllers, RBAC, webhooks) is
// rendered: the platform has a provider this project can deploy.
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
	ns := in.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	gates := ResolveFeatureGates(in.FeatureGate, in.ReleaseVersion)
	cfg := Config{
		Namespace:                 ns,
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
	}
	crds := ForCRDs(in)
	cfg.OpenShift, cfg.NodeMaintenanceForeign, cfg.NodeMaintenanceOwner = crds.OpenShift, crds.NodeMaintenanceForeign, crds.NodeMaintenanceOwner
	cfg.ProviderImage, cfg.NoOpReason = providerImage(cfg.PlatformType, cfg.ExternalPlatformName, in.Images)
	if cfg.ProviderImage == "" && cfg.NoOpReason == "" {
		// A supported platform without its image is a broken images.json,
		// not a reason to remove the running operand.
		return Config{}, &InputError{Reason: ReasonInvalidImagesJSON,
			Err: fmt.Errorf("images.json has no provider image for platform %s: set %q", platformLabel(cfg.PlatformType, cfg.ExternalPlatformName), providerImageKey(cfg.PlatformType))}
	}
	if cfg.ProviderImage == "" {
		cfg.NoOp = true
		return cfg, nil
	}
	switch cfg.PlatformType {
	case configv1.AWSPlatformType:
		cfg.TerminationHandlerImage = in.Images.ClusterAPIControllerAWS
	case configv1.GCPPlatformType:
		cfg.TerminationHandlerImage = in.Images.ClusterAPIControllerGCP
		cfg.MaxConcurrentReconciles = 10
	case configv1.AzurePlatformType:
		cfg.TerminationHandlerImage = in.Images.ClusterAPIControllerAzure
		cfg.MaxConcurrentReconciles = 10
	}
	return cfg, nil
}

// providerImageKeys is the platform table: the images.json key of each
// platform's machine-controller image. External counts only when its
// platformName is kubemark.
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

// providerImage maps the platform to its machine-controller image. An empty
// image with a reason means NoOp; an empty image without one means the
// platform's key is missing from images.json.
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

// providerImageKey is the images.json key of the platform's provider image.
func providerImageKey(t configv1.PlatformType) string { return providerImageKeys[t] }

func platformLabel(t configv1.PlatformType, externalName string) string {
	if t == configv1.ExternalPlatformType && externalName != "" {
		return fmt.Sprintf("%s/%s", t, externalName)
	}
	return string(t)
}

// externalPlatformName is spec.platformSpec.external.platformName: the
// Infrastructure status carries no name for External platforms.
func externalPlatformName(infra *configv1.Infrastructure) string {
	if ext := infra.Spec.PlatformSpec.External; ext != nil {
		return ext.PlatformName
	}
	return ""
}

// proxyEnv takes every value from status, the observed and validated
// configuration, so presence and value can never disagree.
func proxyEnv(p *configv1.Proxy) ProxyEnv {
	if p == nil {
		return ProxyEnv{}
	}
	return ProxyEnv{HTTPProxy: p.Status.HTTPProxy, HTTPSProxy: p.Status.HTTPSProxy, NoProxy: p.Status.NoProxy}
}

// ResolveFeatureGates returns the enabled state of every gate the FeatureGate
// "cluster" names for the release version. It falls back to the only status
// entry when there is exactly one, then to spec.customNoUpgrade (vanilla
// Kubernetes has nobody filling status). Gates not named are absent, so a
// lookup of an unknown gate is simply false.
func ResolveFeatureGates(fg *configv1.FeatureGate, releaseVersion string) map[string]bool {
	gates := map[string]bool{}
	if fg == nil {
		return gates
	}
	var chosen *configv1.FeatureGateDetails
	for i := range fg.Status.FeatureGates {
		if fg.Status.FeatureGates[i].Version == releaseVersion {
			chosen = &fg.Status.FeatureGates[i]
			break
		}
	}
	if chosen == nil && len(fg.Status.FeatureGates) == 1 {
		chosen = &fg.Status.FeatureGates[0]
	}
	if chosen != nil {
		for _, g := range chosen.Disabled {
			gates[string(g.Name)] = false
		}
		for _, g := range chosen.Enabled {
			gates[string(g.Name)] = true
		}
		return gates
	}
	if fg.Spec.FeatureSet == configv1.CustomNoUpgrade && fg.Spec.CustomNoUpgrade != nil {
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
	for _, data := range []map[string]string{cm.Data, stringMap(cm.BinaryData)} {
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(h, "%d:%s%d:%s", len(k), k, len(data[k]), data[k])
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func stringMap(m map[string][]byte) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = string(v)
	}
	return out
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
	var parts []string
	parts = append(parts, "platform "+platformLabel(c.PlatformType, c.ExternalPlatformName))
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
