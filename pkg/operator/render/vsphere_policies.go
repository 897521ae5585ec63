package render

import (
	configv1 "github.com/openshift/api/config/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// Names of the policies (each with a binding of its name) that refuse an Infrastructure
// update removing a vSphere failure domain still in use: OpenShift's names.
const (
	VSphereFailureDomainMachinePolicyName    = "vsphere-failure-domain-in-use-by-machine"
	VSphereFailureDomainCPMSPolicyName       = "vsphere-failure-domain-in-use-by-cpms"
	VSphereFailureDomainMachineSetPolicyName = "vsphere-failure-domain-in-use-by-machineset"
)

// VSphereFailureDomainPolicyNames are the names VSphereFailureDomainPolicies renders.
var VSphereFailureDomainPolicyNames = []string{
	VSphereFailureDomainMachinePolicyName, VSphereFailureDomainCPMSPolicyName, VSphereFailureDomainMachineSetPolicyName,
}

// FeatureGateVSphereMultiVCenterDay2 gates the failure domain policies, as in OpenShift
// (TechPreviewNoUpgrade and DevPreviewNoUpgrade at the pinned openshift/api).
const FeatureGateVSphereMultiVCenterDay2 = "VSphereMultiVCenterDay2"

// rendersVSphereFailureDomainPolicies: only on vSphere with the gate, as OpenShift's operator.
func rendersVSphereFailureDomainPolicies(cfg config.Config) bool {
	return cfg.PlatformType == configv1.VSpherePlatformType && cfg.FeatureGates[FeatureGateVSphereMultiVCenterDay2]
}

// CEL over the incoming Infrastructure, shared by the three policies.
const (
	infraFailureDomains = "object.spec.?platformSpec.?vsphere.?failureDomains.orValue([])"
	regionLabel         = "machine.openshift.io/region"
	zoneLabel           = "machine.openshift.io/zone"
)

// VSphereFailureDomainPolicies returns the three policies and their Deny bindings. A binding
// evaluates its policy once per param object (every Machine, ControlPlaneMachineSet or
// MachineSet in namespace) and allows the update when there is none.
func VSphereFailureDomainPolicies(namespace string) []policyPair {
	return []policyPair{
		vsphereFailureDomainPolicy(namespace, VSphereFailureDomainMachinePolicyName, "v1beta1", "Machine",
			labelledFailureDomain("params.?metadata"), labelledFailureDomainValidation("Machine")),
		vsphereFailureDomainPolicy(namespace, VSphereFailureDomainCPMSPolicyName, "v1", "ControlPlaneMachineSet",
			[]admissionregistrationv1.Variable{
				{Name: "fds", Expression: infraFailureDomains},
				// The CPMS names its failure domains; the Infrastructure must keep every name.
				{Name: "cpmsFDs", Expression: "params.?spec.?template.?machines_v1beta1_machine_openshift_io.?failureDomains.?vsphere.orValue([])"},
				{Name: "removed", Expression: "variables.cpmsFDs.filter(c, !variables.fds.exists(f, f.name == c.name)).map(c, c.name)"},
			},
			admissionregistrationv1.Validation{
				Expression: "size(variables.removed) == 0",
				MessageExpression: `"Infrastructure update would remove vSphere failure domain(s) still referenced by ControlPlaneMachineSet '" + ` +
					`params.metadata.name + "': [" + variables.removed.join(", ") + "]"`,
				Reason: ptr.To(metav1.StatusReasonInvalid),
			}),
		// A MachineSet's template labels: a set scaled to zero has no Machine to protect its domain.
		vsphereFailureDomainPolicy(namespace, VSphereFailureDomainMachineSetPolicyName, "v1beta1", "MachineSet",
			labelledFailureDomain("params.?spec.?template.?metadata"), labelledFailureDomainValidation("MachineSet")),
	}
}

// policyPair is a ValidatingAdmissionPolicy and its binding.
type policyPair struct {
	policy  *admissionregistrationv1.ValidatingAdmissionPolicy
	binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
}

// vsphereFailureDomainPolicy checks every UPDATE of an Infrastructure whose status says
// vSphere against each object of paramKind machine.openshift.io/<version> <kind> in namespace.
func vsphereFailureDomainPolicy(namespace, name, version, kind string, vars []admissionregistrationv1.Variable, v admissionregistrationv1.Validation) policyPair {
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   typeMeta(admissionregistrationv1.SchemeGroupVersion.String(), "ValidatingAdmissionPolicy"),
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			ParamKind:     &admissionregistrationv1.ParamKind{APIVersion: machineGroup + "/" + version, Kind: kind},
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
						Rule: admissionregistrationv1.Rule{
							APIGroups:   []string{configv1.GroupName},
							APIVersions: []string{"v1"},
							Resources:   []string{"infrastructures"},
						},
					},
				}},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name:       "is-vsphere-platform",
				Expression: "object.?status.?platformStatus.?type.orValue('') == '" + string(configv1.VSpherePlatformType) + "'",
			}},
			Variables:   vars,
			Validations: []admissionregistrationv1.Validation{v},
		},
	}
	binding := denyBinding(name)
	binding.Spec.ParamRef = &admissionregistrationv1.ParamRef{
		Namespace: namespace,
		// Every object of the kind in the namespace; none at all allows the update.
		Selector:                &metav1.LabelSelector{},
		ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction),
	}
	return policyPair{policy, binding}
}

// labelledFailureDomain: the region and zone labels under meta (CEL reaching an object's
// metadata), "" when absent, and the incoming failure domains.
func labelledFailureDomain(meta string) []admissionregistrationv1.Variable {
	return []admissionregistrationv1.Variable{
		{Name: "fds", Expression: infraFailureDomains},
		{Name: "region", Expression: meta + ".?labels[?'" + regionLabel + "'].orValue('')"},
		{Name: "zone", Expression: meta + ".?labels[?'" + zoneLabel + "'].orValue('')"},
	}
}

// labelledFailureDomainValidation: an object without both labels is not placed in a failure
// domain; one with both needs a failure domain of that region and zone to remain.
func labelledFailureDomainValidation(kind string) admissionregistrationv1.Validation {
	return admissionregistrationv1.Validation{
		Expression: "variables.region == '' || variables.zone == '' || " +
			"variables.fds.exists(fd, fd.region == variables.region && fd.zone == variables.zone)",
		MessageExpression: `"Infrastructure update would remove vSphere failure domain (region=" + variables.region + ", zone=" + ` +
			`variables.zone + ") that is still in use by ` + kind + ` '" + params.metadata.name + "'"`,
		Reason: ptr.To(metav1.StatusReasonInvalid),
	}
}
