package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks a providerSpec after Default; errors name fields below fldPath.
func (s *KubemarkMachineProviderSpec) Validate(fldPath *field.Path) field.ErrorList {
	errs := append(exactly(s.APIVersion, GroupVersion.String(), fldPath.Child("apiVersion")),
		exactly(s.Kind, ProviderSpecKind, fldPath.Child("kind"))...)
	errs = append(errs, positive(s.CPU, fldPath.Child("cpu"))...)
	errs = append(errs, positive(s.Memory, fldPath.Child("memory"))...)
	if errs2 := positive(s.Pods, fldPath.Child("pods")); len(errs2) > 0 {
		errs = append(errs, errs2...)
	} else if s.Pods != nil {
		if _, ok := s.Pods.AsInt64(); !ok {
			errs = append(errs, field.Invalid(fldPath.Child("pods"), s.Pods.String(), "must be a whole number"))
		}
	}
	errs = append(errs, notNegative(s.BootDelay, fldPath.Child("bootDelay"))...)
	if s.Health != nil {
		errs = append(errs, s.Health.Validate(fldPath.Child("health"))...)
	}
	return errs
}

// Validate checks a health policy after Default.
func (h *HealthPolicy) Validate(fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, notNegative(h.UnhealthyAfter, fldPath.Child("unhealthyAfter"))...)
	switch h.Mode {
	case HealthModeOnce, "":
		if h.UnhealthyFor != nil {
			errs = append(errs, field.Forbidden(fldPath.Child("unhealthyFor"), "may only be set when mode is Periodic"))
		}
	case HealthModePeriodic:
		if h.UnhealthyAfter != nil && h.UnhealthyAfter.Duration == 0 {
			errs = append(errs, field.Invalid(fldPath.Child("unhealthyAfter"), h.UnhealthyAfter.Duration.String(), "must be positive when mode is Periodic"))
		}
		if h.UnhealthyFor != nil && h.UnhealthyFor.Duration <= 0 {
			errs = append(errs, field.Invalid(fldPath.Child("unhealthyFor"), h.UnhealthyFor.Duration.String(), "must be positive"))
		}
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("mode"), h.Mode, []HealthMode{HealthModeOnce, HealthModePeriodic}))
	}
	return errs
}

// exactly requires got to be want.
func exactly(got, want string, p *field.Path) field.ErrorList {
	switch got {
	case want:
		return nil
	case "":
		return field.ErrorList{field.Required(p, "must be "+want)}
	}
	return field.ErrorList{field.Invalid(p, got, "must be "+want)}
}

func positive(q *resource.Quantity, p *field.Path) field.ErrorList {
	if q == nil || q.Sign() > 0 {
		return nil
	}
	return field.ErrorList{field.Invalid(p, q.String(), "must be positive")}
}

func notNegative(d *metav1.Duration, p *field.Path) field.ErrorList {
	if d == nil || d.Duration >= 0 {
		return nil
	}
	return field.ErrorList{field.Invalid(p, d.Duration.String(), "must not be negative")}
}
