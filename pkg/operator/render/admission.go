package render

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LifecycleHooksPolicyName names the ValidatingAdmissionPolicy and its binding.
const LifecycleHooksPolicyName = "machine-api-lifecycle-hooks"

// LifecycleHooksMessage is the rejection message of the policy.
const LifecycleHooksMessage = "lifecycle hooks cannot be added or changed once the Machine is being deleted; only removal is allowed"

// hookListUnchangedOrShrunk is CEL: every hook of the list existed, with the
// same owner, in the old object.
func hookListUnchangedOrShrunk(list string) string {
	return fmt.Sprintf("object.?spec.?lifecycleHooks.?%[1]s.orValue([]).all(h, "+
		"oldObject.?spec.?lifecycleHooks.?%[1]s.orValue([]).exists(o, o.name == h.name && o.owner == h.owner))", list)
}

// hookListChangedNames is CEL listing the names of added or changed hooks.
func hookListChangedNames(list string) string {
	return fmt.Sprintf("object.?spec.?lifecycleHooks.?%[1]s.orValue([]).filter(h, "+
		"!oldObject.?spec.?lifecycleHooks.?%[1]s.orValue([]).exists(o, o.name == h.name && o.owner == h.owner)).map(h, h.name).join(', ')", list)
}

// LifecycleHooksAdmissionPolicy returns the ValidatingAdmissionPolicy and its
// Deny binding that let a Machine being deleted lose lifecycle hooks but not
// gain or change one (upstream's webhook check, without a webhook server).
func LifecycleHooksAdmissionPolicy() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	fail := admissionregistrationv1.Fail
	validation := func(list string) admissionregistrationv1.Validation {
		return admissionregistrationv1.Validation{
			Expression: hookListUnchangedOrShrunk(list),
			Message:    LifecycleHooksMessage,
			MessageExpression: fmt.Sprintf("'%s: new or changed %s hook(s): ' + %s",
				LifecycleHooksMessage, list, hookListChangedNames(list)),
			Reason: ptr.To(metav1.StatusReasonForbidden),
		}
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   typeMeta(admissionregistrationv1.SchemeGroupVersion.String(), "ValidatingAdmissionPolicy"),
		ObjectMeta: metav1.ObjectMeta{Name: LifecycleHooksPolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
						Rule: admissionregistrationv1.Rule{
							APIGroups:   []string{"machine.openshift.io"},
							APIVersions: []string{"*"},
							Resources:   []string{"machines"},
						},
					},
				}},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name:       "machine-is-being-deleted",
				Expression: "has(oldObject.metadata.deletionTimestamp)",
			}},
			Validations: []admissionregistrationv1.Validation{validation("preDrain"), validation("preTerminate")},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   typeMeta(admissionregistrationv1.SchemeGroupVersion.String(), "ValidatingAdmissionPolicyBinding"),
		ObjectMeta: metav1.ObjectMeta{Name: LifecycleHooksPolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        LifecycleHooksPolicyName,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	return policy, binding
}

// LifecycleHooksAdmissionPolicyYAML renders the policy and the binding as a
// two-document YAML stream.
func LifecycleHooksAdmissionPolicyYAML() ([]byte, error) {
	policy, binding := LifecycleHooksAdmissionPolicy()
	var out []byte
	for _, obj := range []client.Object{policy, binding} {
		b, err := ToYAML(obj)
		if err != nil {
			return nil, err
		}
		out = append(append(out, "---\n"...), b...)
	}
	return out, nil
}
