// Package render is a pure function from config.Config to the objects applied, in
// canonical spelling (goldens read like what the server stores), nothing empty.
package render

import (
	"fmt"
	"maps"

	configv1 "github.com/openshift/api/config/v1"
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
	// ControllersServiceAccountName runs the operand; its RBAC has the same
	// name. Both ship in install/ (not rendered).
	ControllersServiceAccountName = "machine-api-controllers"
	// TerminationHandlerServiceAccountName runs the termination handler (install/).
	TerminationHandlerServiceAccountName = "machine-api-termination-handler"
	// ControllersServiceName is the Service of the operand's metrics ports.
	ControllersServiceName = "machine-api-controllers"
	// ControllersMetricsCertSecretName: service-ca's metrics certificate for it.
	ControllersMetricsCertSecretName = "machine-api-controllers-tls"
)

// Render returns the objects to apply for cfg, in apply order. The CRDs (see
// CRDs) are rendered on every platform; in NoOp mode they are all.
func Render(cfg config.Config) ([]client.Object, error) {
	if cfg.Namespace == "" {
		return nil, fmt.Errorf("render: config has no namespace")
	}
	objs, err := CRDs(cfg)
	if err != nil {
		return nil, err
	}
	if !cfg.RendersOperand() {
		return objs, nil
	}
	if cfg.ProviderImage == "" || cfg.Images.MachineAPIOperator == "" {
		return nil, fmt.Errorf("render: config has no provider or machine-api-operator image (platform %s)", cfg.PlatformType)
	}

	objs = append(objs,
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
	if cfg.PlatformType == configv1.BareMetalPlatformType {
		objs = append(objs,
			validatingWebhookConfiguration(cfg, config.Metal3RemediationWebhookConfigurationName, metal3ValidatingWebhooks),
			mutatingWebhookConfiguration(cfg, config.Metal3RemediationWebhookConfigurationName, metal3MutatingWebhooks))
	}
	objs = append(objs, admissionPolicies(cfg)...)
	return objs, nil
}

// CRDs returns the CRDs this operator owns per cfg.OpenShift (the CVO installs the
// Machine API's) and cfg.NodeMaintenanceForeign; MachineDeployment's always.
func CRDs(cfg config.Config) ([]client.Object, error) {
	sets := []manifests.CRDSet{manifests.MachineCRDs, manifests.NodeMaintenanceCRDs, manifests.MachineDeploymentCRDs}
	var objs []client.Object
	for i, owned := range []bool{!cfg.OpenShift, !cfg.NodeMaintenanceForeign, true} {
		if !owned {
			continue
		}
		crds, err := manifests.CRDs(sets[i])
		if err != nil {
			return nil, fmt.Errorf("render: %w", err)
		}
		for _, crd := range crds {
			crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
			crd.Labels = withCommonLabels(crd.Labels)
			objs = append(objs, crd)
		}
	}
	return objs, nil
}

// withCommonLabels returns a copy of labels plus managed-by and part-of.
func withCommonLabels(labels map[string]string) map[string]string {
	out := map[string]string{}
	maps.Copy(out, labels)
	out[config.ManagedByLabel] = config.ManagedByValue
	out[PartOfLabel] = PartOfValue
	return out
}
