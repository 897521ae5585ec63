package machineset

import (
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

// ValidateMachineSet returns what makes ms unusable by the controller, each
// error naming its field:
//
//	spec.replicas: Required value
//	spec.replicas: Invalid value: -1: must be greater than or equal to 0
//	spec.selector.matchExpressions[0].operator: Invalid value: ...
//	spec.selector: Invalid value: "": must not be empty: an empty selector matches no Machines
//	spec.selector: Invalid value: "app=a": selector does not match template labels
//	spec.deletePolicy: Unsupported value: "Largest": supported values: "Random", "Newest", "Oldest"
//
// The admission webhook may call it too. An empty result means valid.
func ValidateMachineSet(ms *machinev1beta1.MachineSet) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if ms.Spec.Replicas == nil {
		errs = append(errs, field.Required(spec.Child("replicas"), "the number of Machines to keep"))
	} else if *ms.Spec.Replicas < 0 {
		errs = append(errs, field.Invalid(spec.Child("replicas"), *ms.Spec.Replicas, "must be greater than or equal to 0"))
	}
	if p := ms.Spec.DeletePolicy; p != "" {
		supported := false
		for _, s := range supportedDeletePolicies {
			supported = supported || string(s) == p
		}
		if !supported {
			errs = append(errs, field.NotSupported(spec.Child("deletePolicy"), p, supportedDeletePolicies))
		}
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

// selectorOf returns the MachineSet's selector; an invalid selector yields
// labels.Nothing(), and so does an empty one (an empty selector matches
// nothing).
func selectorOf(ms *machinev1beta1.MachineSet) labels.Selector {
	sel, err := metav1.LabelSelectorAsSelector(&ms.Spec.Selector)
	if err != nil || sel.Empty() {
		return labels.Nothing()
	}
	return sel
}
