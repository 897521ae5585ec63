package webhooks

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
)

// A MachineDeployment's defaults, those of a Kubernetes Deployment.
const (
	DefaultMachineDeploymentReplicas int32 = 1
	DefaultMaxSurge                        = "25%"
	DefaultMaxUnavailable                  = "25%"
	DefaultRevisionHistoryLimit      int32 = 10
	DefaultProgressDeadlineSeconds   int32 = 600
)

var (
	strategyPath                = specPath.Child("strategy")
	rollingUpdatePath           = strategyPath.Child("rollingUpdate")
	progressDeadlineSecondsPath = specPath.Child("progressDeadlineSeconds")
)

// DefaultMachineDeployment defaults md as a Deployment, and its template as
// DefaultMachineSet (so its MachineSets get what that webhook would add).
func DefaultMachineDeployment(md *mdv1beta1.MachineDeployment, cluster ClusterInfo) Defaulted {
	d := defaultTemplated(&md.Labels, &md.Spec.Template, cluster)
	d.Spec = defaultMachineDeploymentSpec(&md.Spec)
	return d
}

// defaultMachineDeploymentSpec fills the spec fields but the template and returns their names.
func defaultMachineDeploymentSpec(spec *mdv1beta1.MachineDeploymentSpec) []string {
	var set []string
	add := func(name string, changed bool) {
		if changed {
			set = append(set, name)
		}
	}
	add("replicas", defaultPtr(&spec.Replicas, DefaultMachineDeploymentReplicas))
	add("strategy", defaultStrategy(&spec.Strategy))
	add("revisionHistoryLimit", defaultPtr(&spec.RevisionHistoryLimit, DefaultRevisionHistoryLimit))
	add("progressDeadlineSeconds", defaultPtr(&spec.ProgressDeadlineSeconds, DefaultProgressDeadlineSeconds))
	return set
}

// defaultStrategy fills s (rollingUpdate only for its type) and says whether it changed it.
func defaultStrategy(s *mdv1beta1.MachineDeploymentStrategy) bool {
	changed := false
	if s.Type == "" {
		s.Type, changed = mdv1beta1.RollingUpdateStrategy, true
	}
	if s.Type != mdv1beta1.RollingUpdateStrategy {
		return changed
	}
	ru := defaultPtr(&s.RollingUpdate, mdv1beta1.RollingUpdateMachineDeployment{})
	surge := defaultPtr(&s.RollingUpdate.MaxSurge, intstr.FromString(DefaultMaxSurge))
	unavailable := defaultPtr(&s.RollingUpdate.MaxUnavailable, intstr.FromString(DefaultMaxUnavailable))
	return changed || ru || surge || unavailable
}

// ValidateMachineDeployment checks md as Kubernetes a Deployment, its selector and template as a MachineSet's.
func ValidateMachineDeployment(md *mdv1beta1.MachineDeployment, cluster ClusterInfo, secrets SecretLookup) (field.ErrorList, admission.Warnings) {
	errs := ValidateSelector(md.Spec.Selector, md.Spec.Template.Labels)
	errs = append(errs, validateStrategy(md.Spec.Strategy)...)
	if p := md.Spec.ProgressDeadlineSeconds; p != nil && *p <= md.Spec.MinReadySeconds {
		errs = append(errs, field.Invalid(progressDeadlineSecondsPath, *p,
			fmt.Sprintf("must be greater than minReadySeconds (%d)", md.Spec.MinReadySeconds)))
	}
	specErrs, warnings := validateMachineSpec(&md.Spec.Template.Spec, cluster, platformEnv{namespace: md.Namespace, secrets: secrets}, templateSpecPath)
	return append(errs, specErrs...), warnings
}

// ValidateMachineDeploymentUpdate checks an update as ValidateMachineSetUpdate does.
func ValidateMachineDeploymentUpdate(md, old *mdv1beta1.MachineDeployment, cluster ClusterInfo, secrets SecretLookup) (field.ErrorList, admission.Warnings) {
	return ratchet(validateSelectorUnchanged(md.Spec.Selector, old.Spec.Selector), md, old, cluster, secrets, ValidateMachineDeployment)
}

func validateStrategy(s mdv1beta1.MachineDeploymentStrategy) field.ErrorList {
	switch s.Type {
	case "", mdv1beta1.RollingUpdateStrategy:
	case mdv1beta1.RecreateStrategy, mdv1beta1.OnDeleteStrategy:
		if s.RollingUpdate != nil {
			return field.ErrorList{field.Forbidden(rollingUpdatePath,
				fmt.Sprintf("may not be specified when strategy type is %q; remove it or set type to %q", s.Type, mdv1beta1.RollingUpdateStrategy))}
		}
		return nil
	default:
		return field.ErrorList{field.NotSupported(strategyPath.Child("type"), s.Type, []string{
			string(mdv1beta1.RollingUpdateStrategy), string(mdv1beta1.RecreateStrategy), string(mdv1beta1.OnDeleteStrategy)})}
	}
	ru := s.RollingUpdate
	if ru == nil {
		return nil
	}
	surgePath, unavailablePath := rollingUpdatePath.Child("maxSurge"), rollingUpdatePath.Child("maxUnavailable")
	errs := validateIntOrPercent(ru.MaxSurge, surgePath)
	errs = append(errs, validateIntOrPercent(ru.MaxUnavailable, unavailablePath)...)
	// Both 0 or "0%" (a nil one is defaulted to 25%).
	if len(errs) == 0 && ru.MaxSurge != nil && ru.MaxUnavailable != nil && percent100(ru.MaxSurge) == 0 && percent100(ru.MaxUnavailable) == 0 {
		errs = append(errs, field.Invalid(unavailablePath, ru.MaxUnavailable.String(),
			"may not be 0 when maxSurge is 0: the rollout could neither add nor remove a Machine"))
	}
	return errs
}

var percent = regexp.MustCompile(`^[0-9]+%$`)

// validateIntOrPercent accepts nil (defaulted), a number from 0 to MaxRollingUpdateCount or a
// percentage up to MaxRollingUpdatePercent (docs/machinedeployment.md: larger ones were truncated).
func validateIntOrPercent(v *intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	switch {
	case v == nil:
		return nil
	case v.Type == intstr.Int && v.IntVal < 0:
		return field.ErrorList{field.Invalid(fldPath, v.IntVal, "must be greater than or equal to 0")}
	case v.Type == intstr.Int && v.IntVal > mdv1beta1.MaxRollingUpdateCount:
		return field.ErrorList{field.Invalid(fldPath, v.IntVal, fmt.Sprintf("must be less than or equal to %d", mdv1beta1.MaxRollingUpdateCount))}
	case v.Type == intstr.Int:
		return nil
	case !percent.MatchString(v.StrVal):
		return field.ErrorList{field.Invalid(fldPath, v.StrVal, "must be an integer or percentage (e.g '5%')")}
	}
	// Digits only: ParseInt fails only beyond int64, which is above the bound too.
	if p, err := strconv.ParseInt(strings.TrimSuffix(v.StrVal, "%"), 10, 64); err != nil || p > mdv1beta1.MaxRollingUpdatePercent {
		return field.ErrorList{field.Invalid(fldPath, v.StrVal, fmt.Sprintf("must not be greater than %d%%", mdv1beta1.MaxRollingUpdatePercent))}
	}
	return nil
}

// percent100 is v in percent of 100 ("25%" → 25); 0 when it is no number.
func percent100(v *intstr.IntOrString) int {
	n, _ := intstr.GetScaledValueFromIntOrPercent(v, 100, false)
	return n
}

// defaultMachineDeploymentEdits defaults the template on UPDATE only when the
// update changes it: a default added to an unchanged one would start a rollout.
func defaultMachineDeploymentEdits(md, old *mdv1beta1.MachineDeployment, cluster ClusterInfo) (Defaulted, []edit) {
	var d Defaulted
	if old != nil && equality.Semantic.DeepEqual(md.Spec.Template, old.Spec.Template) {
		d.Spec = defaultMachineDeploymentSpec(&md.Spec)
	} else {
		d = DefaultMachineDeployment(md, cluster)
	}
	edits := templatedEdits(d, md.Labels, &md.Spec.Template)
	values := map[string]any{"replicas": md.Spec.Replicas, "strategy": md.Spec.Strategy,
		"revisionHistoryLimit": md.Spec.RevisionHistoryLimit, "progressDeadlineSeconds": md.Spec.ProgressDeadlineSeconds}
	for _, f := range d.Spec {
		edits = append(edits, edit{[]string{"spec", f}, values[f]})
	}
	return d, edits
}
