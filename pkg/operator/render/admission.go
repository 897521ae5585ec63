package render

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// Names of the ValidatingAdmissionPolicies, each with a binding of the same name.
const (
	LifecycleHooksPolicyName = "machine-api-lifecycle-hooks"
	// ProviderIDPolicyName keeps a Machine's spec.providerID once set.
	ProviderIDPolicyName = "machine-api-provider-id"
	// SelectorPolicyName keeps a MachineSet's (and MachineDeployment's) selector
	// immutable, not empty and matching its template's labels.
	SelectorPolicyName = "machine-api-selector"
)

// AdmissionPolicyNames are the names of every policy (and binding) AdmissionPolicies renders.
var AdmissionPolicyNames = []string{LifecycleHooksPolicyName, ProviderIDPolicyName, SelectorPolicyName}

// LifecycleHooksMessage is the rejection message of the policy.
const LifecycleHooksMessage = "lifecycle hooks cannot be added or changed once the Machine is being deleted; only removal is allowed"

// The policies' messages, the webhook's (pkg/webhooks) where its check is the same.
const (
	ProviderIDMessage        = "spec.providerID: Forbidden: is immutable once set"
	SelectorImmutableMessage = "spec.selector: Invalid value: field is immutable"
	EmptySelectorMessage     = "spec.selector: Required value: an empty selector would select every Machine in the namespace; set matchLabels or matchExpressions matching spec.template.metadata.labels"
	SelectorMismatchMessage  = "spec.template.metadata.labels: Invalid value: does not match spec.selector"
)

// AdmissionPolicies returns every ValidatingAdmissionPolicy, then their Deny bindings
// (apply order): the checks the API server runs itself, so no load on (or outage of) the webhook
// server skips them (the webhooks are failurePolicy Ignore, as OpenShift's).
func AdmissionPolicies() []client.Object {
	return policyObjects(machinePolicies())
}

// admissionPolicies are AdmissionPolicies plus the platform's (vSphere's failure domain
// policies), in apply order.
func admissionPolicies(cfg config.Config) []client.Object {
	pairs := machinePolicies()
	if rendersVSphereFailureDomainPolicies(cfg) {
		pairs = append(pairs, VSphereFailureDomainPolicies(cfg.Namespace)...)
	}
	return policyObjects(pairs)
}

func machinePolicies() []policyPair {
	var pairs []policyPair
	for _, f := range []func() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding){
		LifecycleHooksAdmissionPolicy, ProviderIDAdmissionPolicy, SelectorAdmissionPolicy,
	} {
		p, b := f()
		pairs = append(pairs, policyPair{p, b})
	}
	return pairs
}

// policyObjects: the policies, then their bindings, with the common labels.
func policyObjects(pairs []policyPair) []client.Object {
	var policies, bindings []client.Object
	for _, pair := range pairs {
		pair.policy.Labels, pair.binding.Labels = withCommonLabels(pair.policy.Labels), withCommonLabels(pair.binding.Labels)
		policies, bindings = append(policies, pair.policy), append(bindings, pair.binding)
	}
	return append(policies, bindings...)
}

// LifecycleHooksAdmissionPolicy returns the ValidatingAdmissionPolicy and its
// Deny binding that let a Machine being deleted lose lifecycle hooks but not
// gain or change one (upstream's webhook check, without a webhook server).
func LifecycleHooksAdmissionPolicy() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
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
	policy := admissionPolicy(LifecycleHooksPolicyName, []string{"machines"}, []admissionregistrationv1.OperationType{admissionregistrationv1.Update})
	policy.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{
		Name:       "machine-is-being-deleted",
		Expression: "has(oldObject.metadata.deletionTimestamp)",
	}}
	policy.Spec.Validations = []admissionregistrationv1.Validation{validation("preDrain"), validation("preTerminate")}
	return policy, denyBinding(LifecycleHooksPolicyName)
}

// ProviderIDAdmissionPolicy refuses an update that changes or clears a Machine's
// spec.providerID once set: the Machine would then own, and delete, another instance.
func ProviderIDAdmissionPolicy() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	policy := admissionPolicy(ProviderIDPolicyName, []string{"machines"}, []admissionregistrationv1.OperationType{admissionregistrationv1.Update})
	policy.Spec.Validations = []admissionregistrationv1.Validation{{
		Expression: "oldObject.spec.?providerID.orValue('') == '' || object.spec.?providerID.orValue('') == oldObject.spec.providerID",
		Message:    ProviderIDMessage,
		// The webhook's message: ... (was "<old>").
		MessageExpression: `'` + ProviderIDMessage + ` (was "' + oldObject.spec.providerID + '")'`,
		Reason:            ptr.To(metav1.StatusReasonInvalid),
	}}
	return policy, denyBinding(ProviderIDPolicyName)
}

// SelectorAdmissionPolicy keeps a MachineSet's or MachineDeployment's selector unchanged,
// not empty and matching its template's labels (else the set creates Machines it never sees,
// without end). Create checks ratchet on update, as the webhook's: a template that already
// failed them may be updated if its labels stay. An operator CEL cannot evaluate, or In/NotIn
// without values, is left to the webhook (the controller cannot use such a selector anyway).
func SelectorAdmissionPolicy() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	policy := admissionPolicy(SelectorPolicyName, []string{"machinesets", "machinedeployments"},
		[]admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update})
	sel, oldSel := selectorOf("object"), selectorOf("oldObject")
	labels := templateLabelsOf("object")
	// Variables are evaluated once, when used; oldObject is null on CREATE, so each use
	// of it is behind request.operation == 'UPDATE'.
	policy.Spec.Variables = []admissionregistrationv1.Variable{
		{Name: "empty", Expression: emptySelector(sel)},
		{Name: "checkable", Expression: checkableSelector(sel)},
		{Name: "matches", Expression: selectorMatches(sel, labels)},
		{Name: "sameSelector", Expression: "request.operation == 'UPDATE' && " + sameSelector(sel, oldSel)},
		{Name: "sameLabels", Expression: "request.operation == 'UPDATE' && " + labels + " == " + templateLabelsOf("oldObject")},
		{Name: "requirements", Expression: requirements(sel)},
		{Name: "oldRequirements", Expression: "request.operation == 'UPDATE' ? " + requirements(oldSel) + " : []"},
		{Name: "selectorText", Expression: formatSelector("variables.requirements")},
		{Name: "oldSelectorText", Expression: formatSelector("variables.oldRequirements")},
		{Name: "labelPairs", Expression: labels + ".map(k, [k, " + labels + "[k]])"},
		{Name: "labelsText", Expression: celSorted("variables.labelPairs", "x[0]", "x[0] + '=' + x[1]")},
	}
	policy.Spec.Validations = []admissionregistrationv1.Validation{
		{
			Expression:        "request.operation != 'UPDATE' || variables.sameSelector",
			Message:           SelectorImmutableMessage,
			MessageExpression: `'spec.selector: Invalid value: "' + variables.selectorText + '": field is immutable (was "' + variables.oldSelectorText + '")'`,
			Reason:            ptr.To(metav1.StatusReasonInvalid),
		},
		{
			// With the selector unchanged, an empty one was empty before.
			Expression: "!variables.empty || variables.sameSelector",
			Message:    EmptySelectorMessage,
			Reason:     ptr.To(metav1.StatusReasonInvalid),
		},
		{
			// Unchanged selector and labels: the object already had this mismatch.
			Expression: "variables.empty || !variables.checkable || variables.matches || variables.sameSelector && variables.sameLabels",
			Message:    SelectorMismatchMessage,
			MessageExpression: `'spec.template.metadata.labels: Invalid value: "' + variables.labelsText + ` +
				`'": does not match spec.selector "' + variables.selectorText + '"'`,
			Reason: ptr.To(metav1.StatusReasonInvalid),
		},
	}
	return policy, denyBinding(SelectorPolicyName)
}

// admissionPolicy is a failurePolicy Fail policy on machine.openshift.io resources.
func admissionPolicy(name string, resources []string, ops []admissionregistrationv1.OperationType) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   typeMeta(admissionregistrationv1.SchemeGroupVersion.String(), "ValidatingAdmissionPolicy"),
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: ops,
						Rule: admissionregistrationv1.Rule{
							APIGroups:   []string{"machine.openshift.io"},
							APIVersions: []string{"*"},
							Resources:   resources,
						},
					},
				}},
			},
		},
	}
}

func denyBinding(name string) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   typeMeta(admissionregistrationv1.SchemeGroupVersion.String(), "ValidatingAdmissionPolicyBinding"),
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
}

// CEL building blocks over a selector held by root ("object" or "oldObject").
type celSelector struct{ labels, exprs string }

func selectorOf(root string) celSelector {
	return celSelector{
		labels: root + ".spec.?selector.?matchLabels.orValue({})",
		exprs:  root + ".spec.?selector.?matchExpressions.orValue([])",
	}
}

func templateLabelsOf(root string) string {
	return root + ".spec.?template.?metadata.?labels.orValue({})"
}

func emptySelector(s celSelector) string {
	return fmt.Sprintf("size(%s) == 0 && size(%s) == 0", s.labels, s.exprs)
}

// sameSelector is the webhook's semantic equality: an absent list or map equals an empty one.
func sameSelector(s, old celSelector) string {
	var parts []string
	parts = append(parts, s.labels+" == "+old.labels)
	for _, f := range []string{"e.key", "e.operator", "e.?values.orValue([])"} {
		parts = append(parts, fmt.Sprintf("%s.map(e, %s) == %s.map(e, %s)", s.exprs, f, old.exprs, f))
	}
	return strings.Join(parts, " && ")
}

// checkableSelector: every expression has an operator CEL evaluates, with values where needed.
func checkableSelector(s celSelector) string {
	return s.exprs + ".all(e, e.operator in ['In', 'NotIn'] ? size(e.?values.orValue([])) > 0 : e.operator in ['Exists', 'DoesNotExist'])"
}

// selectorMatches is labels.Selector.Matches of a checkable selector on the labels map.
func selectorMatches(s celSelector, labels string) string {
	has := func(k string) string { return k + " in " + labels }
	in := func(k string) string { return "(" + has(k) + " && " + labels + "[" + k + "] in e.values)" }
	return fmt.Sprintf("%s.all(k, %s && %s[k] == %s[k]) && %s.all(e, e.operator == 'In' ? %s : e.operator == 'NotIn' ? !%s : e.operator == 'Exists' ? %s : !(%s))",
		s.labels, has("k"), labels, s.labels, s.exprs, in("e.key"), in("e.key"), has("e.key"), has("e.key"))
}

// sortBound bounds the lists the messages sort: Kubernetes before 1.35 offers new
// expressions no sort(), so celSorted ranks with a fixed index list.
const sortBound = 32

// celSorted is CEL joining with ',' the rendering (CEL over x) of each element x of list
// in the order of key (CEL over x, a string): ranks 0..sortBound-1, each rank's elements
// in list order. Lists longer than sortBound render as "...".
func celSorted(list, key, rendering string) string {
	idx := make([]string, sortBound)
	for i := range idx {
		idx[i] = fmt.Sprint(i)
	}
	keyOf := func(v string) string { return strings.ReplaceAll(key, "x", v) }
	return fmt.Sprintf("(size(%[1]s) > %[2]d ? '...' : [%[3]s].map(i, %[1]s.filter(x, %[1]s.filter(y, %[4]s < %[5]s).size() == i)).filter(g, size(g) > 0).map(g, g.map(x, %[6]s).join(',')).join(','))",
		list, sortBound, strings.Join(idx, ", "), keyOf("y"), keyOf("x"), rendering)
}

// requirements are a selector's [key, requirement text] (metav1.FormatLabelSelector's):
// matchLabels as key=value, In/NotIn with their values sorted.
func requirements(s celSelector) string {
	values := celSorted("e.?values.orValue([])", "x", "x")
	req := fmt.Sprintf("e.operator == 'Exists' ? e.key : e.operator == 'DoesNotExist' ? '!' + e.key : e.key + (e.operator == 'In' ? ' in (' : ' notin (') + %s + ')'", values)
	// string(k): the map's keys are dyn after orValue({}), and list literals must be homogeneous.
	return fmt.Sprintf("%s.map(k, [string(k), string(k) + '=' + %s[k]]) + %s.map(e, [e.key, %s])", s.labels, s.labels, s.exprs, req)
}

// formatSelector joins requirements by key, "<none>" when there are none.
func formatSelector(reqs string) string {
	return fmt.Sprintf("size(%s) == 0 ? '<none>' : %s", reqs, celSorted(reqs, "x[0]", "x[1]"))
}
