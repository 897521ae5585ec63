package machineset

import (
	"slices"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedDeletePolicies = []machinev1beta1.MachineSetDeletePolicy{
	machinev1beta1.RandomMachineSetDeletePolicy,
	machinev1beta1.NewestMachineSetDeletePolicy,
	machinev1beta1.OldestMachineSetDeletePolicy,
}

// ValidateMachineSet returns what makes ms unusable by the controller (the
// replicas, delete policy and selector), each error naming its field.
func ValidateMachineSet(ms *machinev1beta1.MachineSet) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if ms.Spec.Replicas == nil {
		errs = append(errs, field.Required(spec.Child("replicas"), "the number of Machines to keep"))
	} else if *ms.Spec.Replicas < 0 {
		errs = append(errs, field.Invalid(spec.Child("replicas"), *ms.Spec.Replicas, "must be greater than or equal to 0"))
	}
	if p := ms.Spec.DeletePolicy; p != "" && !slices.Contains(supportedDeletePolicies, machinev1beta1.MachineSetDeletePolicy(p)) {
		errs = append(errs, field.NotSupported(spec.Child("deletePolicy"), p, supportedDeletePolicies))
	}
	errs = append(errs, validateSelector(ms, spec.Child("selector"))...)
	return errs
}

func validateSelector(ms *machinev1beta1.MachineSet, fld *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabelSelector(&ms.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, fld)
	if len(errs) > 0 {
		return errs
	}
	formatted := metav1.FormatLabelSelector(&ms.Spec.Selector)
	sel, err := metav1.LabelSelectorAsSelector(&ms.Spec.Selector)
	if err != nil {
		return field.ErrorList{field.Invalid(fld, formatted, err.Error())}
	}
	if sel.Empty() {
		return field.ErrorList{field.Invalid(fld, "", "must not be empty: an empty selector matches no Machines")}
	}
	if !sel.Matches(labels.Set(ms.Spec.Template.Labels)) {
		return field.ErrorList{field.Invalid(fld, formatted, "selector does not match template labels")}
	}
	return nil
}

// selectorOf returns the MachineSet's selector; an invalid or empty one matches nothing.
func selectorOf(ms *machinev1beta1.MachineSet) labels.Selector {
	sel, err := metav1.LabelSelectorAsSelector(&ms.Spec.Selector)
	if err != nil || sel.Empty() {
		return labels.Nothing()
	}
	return sel
}
