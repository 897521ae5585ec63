package render

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// LifecycleHooksPolicyName names the ValidatingAdmissionPolicy and its binding.
const LifecycleHooksPolicyName = "machine-api-lifecycle-hooks"

// LifecycleHooksMessage is the rejection message of the policy.
const LifecycleHooksMessage = "lifecycle hooks cannot be added or changed once the Machine is being deleted; only removal is allowed"

// LifecycleHooksAdmissionPolicy returns the ValidatingAdmissionPolicy and its
// Deny binding that let a Machine being deleted lose lifecycle hooks but not
// gain or change one (upstream's webhook check, without a webhook server).
func LifecycleHooksAdmissionPolicy() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	fail := admissionregistrationv1.Fail
	validation := func(list string) admissionregistrationv1.Validation {
		// CEL: h existed, with the same owner, in the old object.
		hooks := fmt.Sprintf("object.?spec.?lifecycleHooks.?%s.orValue([])", list)
		existed := fmt.Sprintf("oldObject.?spec.?lifecycleHooks.?%s.orValue([]).exists(o, o.name == h.name && o.owner == h.owner)", list)
		return admissionregistrationv1.Validation{
			Expression: hooks + ".all(h, " + existed + ")",
			Message:    LifecycleHooksMessage,
			MessageExpression: fmt.Sprintf("'%s: new or changed %s hook(s): ' + %s.filter(h, !%s).map(h, h.name).join(', ')",
				LifecycleHooksMessage, list, hooks, existed),
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
