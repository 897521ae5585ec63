// Package render is a pure function from the operator's config.Config to the
// Kubernetes objects the operator applies with server-side apply.
//
// Rendering rules: quantities, durations and enums use their canonical
// spelling ("10m", "20Mi", "TCP", ...), so the golden files read like what
// the API server stores; nothing renders status, resourceVersion,
// managedFields or creationTimestamp, nor an empty struct, map or slice
// (TestNoEmptyValues guards this on the YAML output). Drift is detected from
// managedFields, not by comparing values (see package apply).
package render

import (
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/manifests"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// Labels every rendered object carries.
const (
	PartOfLabel = "app.kubernetes.io/part-of"
	PartOfValue = "machine-api"
)

// Names of the rendered operand objects that are not fixed in package config.
const (
	// ControllersServiceAccountName runs the operand Deployment; the RBAC
	// objects for it have the same name.
	ControllersServiceAccountName = "machine-api-controllers"
	// TerminationHandlerServiceAccountName runs the termination handler.
	TerminationHandlerServiceAccountName = "machine-api-termination-handler"
	// ControllersServiceName is the Service of the operand's metrics ports
	// (machine-mtrc, machineset-mtrc, mhc-mtrc, nodelink-mtrc), as on
	// OpenShift.
	ControllersServiceName = "machine-api-controllers"
	// ControllersMetricsCertSecretName holds the metrics serving certificate
	// OpenShift's service-ca issues for ControllersServiceName (only rendered
	// with service-ca; elsewhere the controllers serve self-signed ones).
	ControllersMetricsCertSecretName = "machine-api-controllers-tls"
)

// Render returns the objects to apply for cfg, in apply order: CRDs,
// ServiceAccounts, RBAC, Services (webhooks, metrics), Deployment, DaemonSet, webhook
// configurations. The CRDs are rendered on every platform (they are the API,
// not the operand; in NoOp mode they are the only objects), except those another component owns: the Machine API CRDs
// where the cluster version operator runs (cfg.OpenShift) and the
// NodeMaintenance CRD where the node-maintenance-operator installed it
// (cfg.NodeMaintenanceForeign). The MachineDeployment CRD is rendered
// everywhere.
func Render(cfg config.Config) ([]client.Object, error) {
	if cfg.Namespace == "" {
		return nil, fmt.Errorf("render: config has no namespace")
	}
	objs, err := CRDs(cfg)
	if err != nil {
		return nil, err
	}
	// NoOp: nothing that would act on Machines, and nothing that only
	// serves those controllers (RBAC, webhooks, Services); pruning removes
	// what an earlier config deployed.
	if !cfg.RendersOperand() {
		return objs, nil
	}
	if cfg.ProviderImage == "" || cfg.Images.MachineAPIOperator == "" {
		return nil, fmt.Errorf("render: config has no provider or machine-api-operator image (platform %s)", cfg.PlatformType)
	}

	objs = append(objs, serviceAccount(cfg, ControllersServiceAccountName))
	if cfg.TerminationHandlerImage != "" {
		objs = append(objs, serviceAccount(cfg, TerminationHandlerServiceAccountName))
	}
	objs = append(objs,
		clusterRole(cfg), clusterRoleBinding(cfg), role(cfg), roleBinding(cfg),
		webhookService(cfg, config.WebhookServiceName, config.WebhookCertSecretName, portWebhookServer),
		webhookService(cfg, config.MachineWebhookServiceName, config.MachineWebhookCertSecretName, portMachineWebhook),
		metricsService(cfg),
		deployment(cfg),
	)
	if cfg.TerminationHandlerImage != "" {
		objs = append(objs, terminationHandler(cfg))
	}
	objs = append(objs,
		validatingWebhookConfiguration(cfg, config.WebhookConfigurationName, machineAPIValidatingWebhooks(cfg)),
		mutatingWebhookConfiguration(cfg, config.WebhookConfigurationName, mutatingWebhooks))
	// BareMetal: the provider's metal3 remediation webhooks, as on OpenShift.
	if cfg.PlatformType == configv1.BareMetalPlatformType {
		objs = append(objs,
			validatingWebhookConfiguration(cfg, config.Metal3RemediationWebhookConfigurationName, metal3ValidatingWebhooks),
			mutatingWebhookConfiguration(cfg, config.Metal3RemediationWebhookConfigurationName, metal3MutatingWebhooks))
	}
	// Lifecycle hooks cannot be added or changed once a Machine is being
	// deleted; a ValidatingAdmissionPolicy enforces it without a webhook.
	policy, binding := LifecycleHooksAdmissionPolicy()
	policy.Labels = withCommonLabels(policy.Labels)
	binding.Labels = withCommonLabels(binding.Labels)
	objs = append(objs, policy, binding)
	return objs, nil
}

// CRDs returns the CRDs this operator owns on the cluster of cfg, as Render
// does; only cfg.OpenShift and cfg.NodeMaintenanceForeign matter, so the
// operator installs them even while its other inputs are missing or bad.
func CRDs(cfg config.Config) ([]client.Object, error) {
	crds, err := ownedCRDs(cfg)
	if err != nil {
		return nil, err
	}
	var objs []client.Object
	for _, crd := range crds {
		crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
		crd.Labels = withCommonLabels(crd.Labels)
		objs = append(objs, crd)
	}
	return objs, nil
}

// ownedCRDs are the CRDs this operator owns on the cluster of cfg.
func ownedCRDs(cfg config.Config) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	// On OpenShift the cluster version operator installs the Machine API
	// CRD variant of the cluster's feature set from the payload; applying
	// the embedded Default variant as well would fight it.
	if !cfg.OpenShift {
		machineCRDs, err := manifests.CRDs(manifests.MachineCRDs)
		if err != nil {
			return nil, fmt.Errorf("render: %w", err)
		}
		crds = append(crds, machineCRDs...)
	}
	// The NodeMaintenance API (this project's, medik8s-compatible) is
	// installed with the Machine API, on OpenShift too, unless the
	// node-maintenance-operator (which ships the same CRD) installed it.
	if !cfg.NodeMaintenanceForeign {
		nm, err := manifests.CRDs(manifests.NodeMaintenanceCRDs)
		if err != nil {
			return nil, fmt.Errorf("render: %w", err)
		}
		crds = append(crds, nm...)
	}
	// The MachineDeployment API is this project's addition to
	// machine.openshift.io: no payload carries it, so it is installed on
	// OpenShift too.
	md, err := manifests.CRDs(manifests.MachineDeploymentCRDs)
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	crds = append(crds, md...)
	return crds, nil
}

// withCommonLabels returns labels plus the managed-by and part-of labels
// (a new map; the argument is not modified).
func withCommonLabels(labels map[string]string) map[string]string {
	out := copyLabels(labels)
	out[config.ManagedByLabel] = config.ManagedByValue
	out[PartOfLabel] = PartOfValue
	return out
}

func serviceAccount(cfg config.Config, name string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:   typeMeta("v1", "ServiceAccount"),
		ObjectMeta: objectMeta(cfg.Namespace, name, nil),
	}
}
