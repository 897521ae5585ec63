package webhooks

import (
	"fmt"
	"slices"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Field paths of the checked fields.
var (
	specPath           = field.NewPath("spec")
	providerIDPath     = specPath.Child("providerID")
	selectorPath       = specPath.Child("selector")
	templatePath       = specPath.Child("template")
	templateLabelsPath = templatePath.Child("metadata", "labels")
	templateSpecPath   = templatePath.Child("spec")
)

// ValidateMachine checks a new Machine: its providerSpec (for a provider this
// package knows) and its lifecycle hook names. secrets checks that the
// credentials Secret exists (a warning; nil: not checked).
func ValidateMachine(m *machinev1beta1.Machine, cluster ClusterInfo, secrets SecretLookup) (field.ErrorList, admission.Warnings) {
	return validateMachineSpec(&m.Spec, cluster, m.Namespace, m.Name, secrets, specPath)
}

// ValidateMachineUpdate checks an update of old to m. spec.providerID cannot
// change once set. The create checks apply to the parts the update changes;
// a part that was already invalid and is left unchanged only gives a
// warning, so controllers can still add finalizers or labels to an object
// created while the webhook was not called.
func ValidateMachineUpdate(m, old *machinev1beta1.Machine, cluster ClusterInfo, secrets SecretLookup) (field.ErrorList, admission.Warnings) {
	var errs field.ErrorList
	if id := ptrString(old.Spec.ProviderID); id != "" && ptrString(m.Spec.ProviderID) != id {
		errs = append(errs, field.Forbidden(providerIDPath, fmt.Sprintf("is immutable once set (was %q)", id)))
	}
	newErrs, warnings := ValidateMachine(m, cluster, secrets)
	oldErrs, _ := validateMachineSpec(&old.Spec, cluster, old.Namespace, old.Name, nil, specPath)
	specErrs, ratcheted := ratchet(newErrs, oldErrs)
	return append(errs, specErrs...), append(warnings, ratcheted...)
}

// ValidateMachineSet checks a new MachineSet: the selector is valid, not
// empty and matches spec.template.metadata.labels; the template's spec
// passes the Machine checks (under spec.template.spec; the platforms report
// OpenShift's providerSpec... paths, as for a Machine).
func ValidateMachineSet(ms *machinev1beta1.MachineSet, cluster ClusterInfo, secrets SecretLookup) (field.ErrorList, admission.Warnings) {
	errs := ValidateSelector(ms.Spec.Selector, ms.Spec.Template.Labels)
	// The template's Machines get their names later: OpenShift checks the
	// template as a Machine without a name.
	specErrs, warnings := validateMachineSpec(&ms.Spec.Template.Spec, cluster, ms.Namespace, "", secrets, templateSpecPath)
	return append(errs, specErrs...), warnings
}

// ValidateMachineSetUpdate checks an update of old to ms: spec.selector is
// immutable; the create checks apply as in ValidateMachineUpdate (errors for
// what the update changes, warnings for what was already wrong).
func ValidateMachineSetUpdate(ms, old *machinev1beta1.MachineSet, cluster ClusterInfo, secrets SecretLookup) (field.ErrorList, admission.Warnings) {
	errs := validateSelectorUnchanged(ms.Spec.Selector, old.Spec.Selector)
	newErrs, warnings := ValidateMachineSet(ms, cluster, secrets)
	oldErrs, _ := ValidateMachineSet(old, cluster, nil)
	setErrs, ratcheted := ratchet(newErrs, oldErrs)
	return append(errs, setErrs...), append(warnings, ratcheted...)
}

// validateSelectorUnchanged refuses a changed spec.selector: the object would
// lose the Machines (or MachineSets) it selected.
func validateSelectorUnchanged(sel, old metav1.LabelSelector) field.ErrorList {
	if equality.Semantic.DeepEqual(sel, old) {
		return nil
	}
	return field.ErrorList{field.Invalid(selectorPath, metav1.FormatLabelSelector(&sel),
		fmt.Sprintf("field is immutable (was %q)", metav1.FormatLabelSelector(&old)))}
}

// ValidateSelector checks a MachineSet selector against the labels of the
// Machines it creates: it must be a valid, non-empty label selector that
// matches templateLabels, or the MachineSet would not see its own Machines
// (and an empty one would adopt every Machine in the namespace).
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

// ValidateLifecycleHooks refuses a hook name used twice within preDrain or
// within preTerminate; fldPath is the path of lifecycleHooks.
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

// validateMachineSpec runs the checks of a Machine spec found at fldPath.
func validateMachineSpec(spec *machinev1beta1.MachineSpec, cluster ClusterInfo, namespace, name string, secrets SecretLookup, fldPath *field.Path) (field.ErrorList, admission.Warnings) {
	errs, warnings := ValidateProviderSpec(spec.ProviderSpec, cluster, namespace, name, secrets, fldPath.Child("providerSpec", "value"))
	return append(errs, ValidateLifecycleHooks(spec.LifecycleHooks, fldPath.Child("lifecycleHooks"))...), warnings
}

// ratchet splits the errors of the new object into those the update
// introduced (kept as errors) and those the old object already had with the
// same field and detail (turned into warnings).
func ratchet(errs, oldErrs field.ErrorList) (field.ErrorList, admission.Warnings) {
	var keep field.ErrorList
	var warnings admission.Warnings
	for _, e := range errs {
		if slices.ContainsFunc(oldErrs, func(o *field.Error) bool { return o.Error() == e.Error() }) {
			warnings = append(warnings, e.Error()+" (already invalid before this update; fix it)")
			continue
		}
		keep = append(keep, e)
	}
	return keep, warnings
}

// FinalizersOnlyRemoved is true when old is being deleted (deletionTimestamp
// set) and obj differs from it only by having fewer finalizers (ignoring
// resourceVersion and managedFields). Such an update is always admitted, so
// a broken object can still be deleted.
func FinalizersOnlyRemoved(obj, old client.Object) bool {
	if old.GetDeletionTimestamp() == nil {
		return false
	}
	for _, f := range obj.GetFinalizers() {
		if !slices.Contains(old.GetFinalizers(), f) {
			return false
		}
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

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
