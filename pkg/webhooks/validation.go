package webhooks

import (
	"fmt"
	"slices"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

var (
	specPath           = field.NewPath("spec")
	providerIDPath     = specPath.Child("providerID")
	selectorPath       = specPath.Child("selector")
	templatePath       = specPath.Child("template")
	templateLabelsPath = templatePath.Child("metadata", "labels")
	templateSpecPath   = templatePath.Child("spec")
)

// ValidateMachine checks a new Machine's providerSpec and lifecycle hook names.
func ValidateMachine(m *machinev1beta1.Machine, cluster ClusterInfo, secrets SecretLookup) (field.ErrorList, admission.Warnings) {
	env := platformEnv{namespace: m.Namespace, name: m.Name, secrets: secrets, controlPlane: isControlPlaneMachine(m.Labels)}
	return validateMachineSpec(&m.Spec, cluster, env, specPath)
}

// ValidateMachineUpdate checks an update: spec.providerID is immutable once set; the create checks ratchet.
func ValidateMachineUpdate(m, old *machinev1beta1.Machine, cluster ClusterInfo, secrets SecretLookup) (field.ErrorList, admission.Warnings) {
	var errs field.ErrorList
	if id := ptr.Deref(old.Spec.ProviderID, ""); id != "" && ptr.Deref(m.Spec.ProviderID, "") != id {
		errs = append(errs, field.Forbidden(providerIDPath, fmt.Sprintf("is immutable once set (was %q)", id)))
	}
	return ratchet(errs, m, old, cluster, secrets, ValidateMachine)
}

// ValidateMachineSet checks a new MachineSet's selector, and its template as a Machine.
func ValidateMachineSet(ms *machinev1beta1.MachineSet, cluster ClusterInfo, secrets SecretLookup) (field.ErrorList, admission.Warnings) {
	errs := ValidateSelector(ms.Spec.Selector, ms.Spec.Template.Labels)
	// As OpenShift: the template is checked as a Machine without a name or labels.
	specErrs, warnings := validateMachineSpec(&ms.Spec.Template.Spec, cluster, platformEnv{namespace: ms.Namespace, secrets: secrets}, templateSpecPath)
	return append(errs, specErrs...), warnings
}

// ValidateMachineSetUpdate checks an update: spec.selector is immutable; the create checks ratchet.
func ValidateMachineSetUpdate(ms, old *machinev1beta1.MachineSet, cluster ClusterInfo, secrets SecretLookup) (field.ErrorList, admission.Warnings) {
	return ratchet(validateSelectorUnchanged(ms.Spec.Selector, old.Spec.Selector), ms, old, cluster, secrets, ValidateMachineSet)
}

// validateSelectorUnchanged refuses a changed spec.selector, which would orphan what it selected.
func validateSelectorUnchanged(sel, old metav1.LabelSelector) field.ErrorList {
	if equality.Semantic.DeepEqual(sel, old) {
		return nil
	}
	return field.ErrorList{field.Invalid(selectorPath, metav1.FormatLabelSelector(&sel),
		fmt.Sprintf("field is immutable (was %q)", metav1.FormatLabelSelector(&old)))}
}

// ValidateSelector requires a valid selector matching templateLabels, or the MachineSet
// would not see its own Machines; an empty one would adopt every Machine in the namespace.
func ValidateSelector(sel metav1.LabelSelector, templateLabels map[string]string) field.ErrorList {
	errs := metav1validation.ValidateLabelSelector(&sel, metav1validation.LabelSelectorValidationOptions{}, selectorPath)
	if len(errs) > 0 {
		return errs
	}
	if len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0 {
		return field.ErrorList{field.Required(selectorPath, "an empty selector would select every Machine in the namespace; set matchLabels or matchExpressions matching spec.template.metadata.labels")}
	}
	selector, err := metav1.LabelSelectorAsSelector(&sel)
	if err != nil {
		return field.ErrorList{field.Invalid(selectorPath, metav1.FormatLabelSelector(&sel), err.Error())}
	}
	if !selector.Matches(labels.Set(templateLabels)) {
		return field.ErrorList{field.Invalid(templateLabelsPath, labels.Set(templateLabels).String(),
			fmt.Sprintf("does not match spec.selector %q", selector.String()))}
	}
	return nil
}

// ValidateLifecycleHooks refuses a hook name used twice within preDrain or preTerminate.
func ValidateLifecycleHooks(hooks machinev1beta1.LifecycleHooks, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, list := range []struct {
		name  string
		hooks []machinev1beta1.LifecycleHook
	}{{"preDrain", hooks.PreDrain}, {"preTerminate", hooks.PreTerminate}} {
		seen := map[string]bool{}
		for i, h := range list.hooks {
			if seen[h.Name] {
				errs = append(errs, field.Duplicate(fldPath.Child(list.name).Index(i).Child("name"), h.Name))
			}
			seen[h.Name] = true
		}
	}
	return errs
}

// validateMachineSpec checks spec as env's object holds it (cluster and arch are filled in).
func validateMachineSpec(spec *machinev1beta1.MachineSpec, cluster ClusterInfo, env platformEnv, fldPath *field.Path) (field.ErrorList, admission.Warnings) {
	errs, warnings := validateProviderSpec(spec.ProviderSpec, cluster, env, fldPath.Child("providerSpec", "value"))
	return append(errs, ValidateLifecycleHooks(spec.LifecycleHooks, fldPath.Child("lifecycleHooks"))...), warnings
}

// ratchet adds create's errors for obj to errs, but those old had are warnings:
// an object created while the webhook was not called can still be updated.
func ratchet[T any](errs field.ErrorList, obj, old T, cluster ClusterInfo, secrets SecretLookup,
	create func(T, ClusterInfo, SecretLookup) (field.ErrorList, admission.Warnings)) (field.ErrorList, admission.Warnings) {
	newErrs, warnings := create(obj, cluster, secrets)
	oldErrs, _ := create(old, cluster, nil)
	for _, e := range newErrs {
		if slices.ContainsFunc(oldErrs, func(o *field.Error) bool { return o.Error() == e.Error() }) {
			warnings = append(warnings, e.Error()+" (already invalid before this update; fix it)")
		} else {
			errs = append(errs, e)
		}
	}
	return errs, warnings
}

// FinalizersOnlyRemoved reports whether old is being deleted and obj only has fewer
// finalizers (ignoring resourceVersion and managedFields); always admitted.
func FinalizersOnlyRemoved(obj, old client.Object) bool {
	if old.GetDeletionTimestamp() == nil {
		return false
	}
	if !sets.New(old.GetFinalizers()...).HasAll(obj.GetFinalizers()...) {
		return false
	}
	n, ok1 := obj.DeepCopyObject().(client.Object)
	o, ok2 := old.DeepCopyObject().(client.Object)
	if !ok1 || !ok2 {
		return false
	}
	for _, x := range []client.Object{n, o} {
		x.SetFinalizers(nil)
		x.SetResourceVersion("")
		x.SetManagedFields(nil)
	}
	return equality.Semantic.DeepEqual(n, o)
}
