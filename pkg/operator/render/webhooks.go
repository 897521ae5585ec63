package render

import (
	"cmp"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// injectCABundleAnnotation asks service-ca to inject its CA bundle.
const injectCABundleAnnotation = "service.beta.openshift.io/inject-cabundle"

// Routing defaults are rendered so drift is reverted. failurePolicy Ignore:
// the server runs in the operand these webhooks guard.
const (
	webhookTimeoutSeconds = 10
	webhookAPIVersion     = "v1beta1"
)

// webhookSpec is one admission webhook.
type webhookSpec struct {
	name, path      string
	group, resource string
	service         string
	operations      []admissionregistrationv1.OperationType
	scope           admissionregistrationv1.ScopeType // "" is Namespaced
}

var (
	createUpdate = []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	createOnly   = []admissionregistrationv1.OperationType{admissionregistrationv1.Create}

	// Served by machineset-controller. MachineDeployments are defaulted on
	// update too, as a Deployment's strategy is.
	validatingWebhooks = []webhookSpec{
		machineWebhook("validation.machine.machine.openshift.io", "/validate-machine-openshift-io-v1beta1-machine", "machines", createUpdate),
		machineWebhook("validation.machineset.machine.openshift.io", "/validate-machine-openshift-io-v1beta1-machineset", "machinesets", createUpdate),
		machineWebhook("validation.machinedeployment.machine.openshift.io", "/validate-machine-openshift-io-v1beta1-machinedeployment", "machinedeployments", createUpdate),
	}
	// medik8s's name, path and rules; while it is down the controller still
	// refuses bad maintenances by status.
	nodeMaintenanceWebhook = webhookSpec{
		name: "vnodemaintenance.kb.io", path: "/validate-nodemaintenance-medik8s-io-v1beta1-nodemaintenance",
		group: nodeMaintenanceGroup, resource: "nodemaintenances", service: config.WebhookServiceName,
		operations: createUpdate, scope: admissionregistrationv1.ClusterScope,
	}
	mutatingWebhooks = []webhookSpec{
		machineWebhook("default.machine.machine.openshift.io", "/mutate-machine-openshift-io-v1beta1-machine", "machines", createOnly),
		machineWebhook("default.machineset.machine.openshift.io", "/mutate-machine-openshift-io-v1beta1-machineset", "machinesets", createOnly),
		machineWebhook("default.machinedeployment.machine.openshift.io", "/mutate-machine-openshift-io-v1beta1-machinedeployment", "machinedeployments", createUpdate),
	}

	// Served on BareMetal by the provider image, as OpenShift renders them.
	metal3ValidatingWebhooks = []webhookSpec{
		metal3Webhook("validation.metal3remediation.k8s.io", "/validate-infrastructure-cluster-x-k8s-io-v1beta1-metal3remediation", "metal3remediations"),
		metal3Webhook("validation.metal3remediationtemplate.k8s.io", "/validate-infrastructure-cluster-x-k8s-io-v1beta1-metal3remediationtemplate", "metal3remediationtemplates"),
	}
	metal3MutatingWebhooks = []webhookSpec{
		metal3Webhook("default.metal3remediation.k8s.io", "/mutate-infrastructure-cluster-x-k8s-io-v1beta1-metal3remediation", "metal3remediations"),
		metal3Webhook("default.metal3remediationtemplate.k8s.io", "/mutate-infrastructure-cluster-x-k8s-io-v1beta1-metal3remediationtemplate", "metal3remediationtemplates"),
	}
)

const metal3Group = "infrastructure.cluster.x-k8s.io"

// machineAPIValidatingWebhooks adds the NodeMaintenance webhook where this
// operator runs the NodeMaintenance controller.
func machineAPIValidatingWebhooks(cfg config.Config) []webhookSpec {
	out := slices.Clone(validatingWebhooks)
	if cfg.MachineHealthCheckEnabled && !cfg.NodeMaintenanceForeign {
		out = append(out, nodeMaintenanceWebhook)
	}
	return out
}

func machineWebhook(name, path, resource string, ops []admissionregistrationv1.OperationType) webhookSpec {
	return webhookSpec{name: name, path: path, group: machineGroup, resource: resource, service: config.WebhookServiceName, operations: ops}
}

func metal3Webhook(name, path, resource string) webhookSpec {
	return webhookSpec{name: name, path: path, group: metal3Group, resource: resource, service: config.MachineWebhookServiceName, operations: createUpdate}
}

func (w webhookSpec) clientConfig(cfg config.Config) admissionregistrationv1.WebhookClientConfig {
	cc := admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
		Namespace: cfg.Namespace,
		Name:      w.service,
		Path:      ptr.To(w.path),
		Port:      ptr.To[int32](webhookServicePort),
	}}
	if !cfg.Webhook.ServiceCA && len(cfg.Webhook.CABundle) > 0 {
		cc.CABundle = append([]byte(nil), cfg.Webhook.CABundle...)
	}
	return cc
}

func validatingWebhookConfiguration(cfg config.Config, name string, webhooks []webhookSpec) *admissionregistrationv1.ValidatingWebhookConfiguration {
	obj := &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   typeMeta("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"),
		ObjectMeta: objectMeta("", name, nil),
	}
	if cfg.Webhook.ServiceCA {
		obj.Annotations = map[string]string{injectCABundleAnnotation: "true"}
	}
	for _, w := range webhooks {
		obj.Webhooks = append(obj.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name:         w.name,
			ClientConfig: w.clientConfig(cfg),
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: slices.Clone(w.operations),
				Rule: admissionregistrationv1.Rule{
					APIGroups:   []string{w.group},
					APIVersions: []string{webhookAPIVersion},
					Resources:   []string{w.resource},
					Scope:       ptr.To(cmp.Or(w.scope, admissionregistrationv1.NamespacedScope)),
				},
			}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          ptr.To[int32](webhookTimeoutSeconds),
			AdmissionReviewVersions: []string{"v1"},
		})
	}
	return obj
}

// mutatingWebhookConfiguration has the validating one's webhooks, never reinvoked.
func mutatingWebhookConfiguration(cfg config.Config, name string, webhooks []webhookSpec) *admissionregistrationv1.MutatingWebhookConfiguration {
	v := validatingWebhookConfiguration(cfg, name, webhooks)
	obj := &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta: typeMeta("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"), ObjectMeta: v.ObjectMeta,
	}
	for _, w := range v.Webhooks {
		obj.Webhooks = append(obj.Webhooks, admissionregistrationv1.MutatingWebhook{
			Name: w.Name, ClientConfig: w.ClientConfig, Rules: w.Rules, FailurePolicy: w.FailurePolicy,
			MatchPolicy: w.MatchPolicy, SideEffects: w.SideEffects, TimeoutSeconds: w.TimeoutSeconds,
			AdmissionReviewVersions: w.AdmissionReviewVersions,
			ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
		})
	}
	return obj
}
