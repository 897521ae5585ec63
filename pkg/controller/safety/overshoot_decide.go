package safety

// The overshoot freeze's decisions (docs/safety.md, "Overshoot freeze").

import (
	"fmt"
	"slices"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
)

// defaultMaxSurge is an unset RollingUpdate maxSurge (the Deployment default).
var defaultMaxSurge = intstr.FromString("25%")

// thresholds bound a MachineSet's Machine count: frozen at ≥ high, thawed at ≤ low.
type thresholds struct{ high, low int }

// overshootThresholds: high = 2×replicas + safetyUp, or under md (nil: standalone)
// md.replicas + maxSurge + safetyUp; low = high − safetyDown.
func overshootThresholds(replicas int, md *mdv1beta1.MachineDeployment, safetyUp, safetyDown int) (thresholds, error) {
	high := 2*replicas + safetyUp
	if md != nil {
		mdReplicas := int(ptr.Deref(md.Spec.Replicas, 1))
		surge, err := maxSurge(md, mdReplicas)
		if err != nil {
			return thresholds{}, fmt.Errorf("reading maxSurge of MachineDeployment %s: %w", md.Name, err)
		}
		high = mdReplicas + surge + safetyUp
	}
	return thresholds{high: high, low: high - safetyDown}, nil
}

// maxSurge is md's maxSurge for replicas, rounded up; 0 for strategies that never surge.
func maxSurge(md *mdv1beta1.MachineDeployment, replicas int) (int, error) {
	s := md.Spec.Strategy
	if s.Type != "" && s.Type != mdv1beta1.RollingUpdateStrategy {
		return 0, nil
	}
	v := defaultMaxSurge
	if s.RollingUpdate != nil {
		v = ptr.Deref(s.RollingUpdate.MaxSurge, v)
	}
	return intstr.GetScaledValueFromIntOrPercent(&v, replicas, true)
}

// countMachines counts the Machines backing ms as machine-controller-manager
// does (owner by name and UID, the template's labels), not those being deleted.
func countMachines(ms *machinev1beta1.MachineSet, machines []*machinev1beta1.Machine) int {
	template := labels.SelectorFromSet(ms.Spec.Template.Labels)
	n := 0
	for _, m := range machines {
		if m.DeletionTimestamp != nil || !template.Matches(labels.Set(m.Labels)) {
			continue
		}
		if slices.ContainsFunc(m.OwnerReferences, func(ref metav1.OwnerReference) bool {
			return ref.Kind == "MachineSet" && ref.Name == ms.Name && ref.UID == ms.UID
		}) {
			n++
		}
	}
	return n
}

// freezeMarks are a freeze's two marks, the label and Frozen=True: either means frozen.
type freezeMarks struct{ label, condition bool }

func (f freezeMarks) frozen() bool   { return f.label || f.condition }
func (f freezeMarks) complete() bool { return f.label && f.condition }

// marksOf reads the freeze marks of an object's labels and conditions.
func marksOf(objLabels map[string]string, conds []machinev1beta1.Condition) freezeMarks {
	return freezeMarks{
		label:     objLabels[FreezeLabel] == FreezeLabelValue,
		condition: conditions.IsTrue(conds, mdv1beta1.FrozenCondition),
	}
}

// MachineSetFrozen reports whether ms is frozen (label or condition): the
// machineset controller then creates no Machines.
func MachineSetFrozen(ms *machinev1beta1.MachineSet) bool {
	return marksOf(ms.Labels, ms.Status.Conditions).frozen()
}

// freezeDecision is an object's desired freeze state: reason and message are
// the Frozen condition's, or why it lifted; clearUnfreeze removes UnfreezeAnnotation.
type freezeDecision struct {
	frozen          bool
	reason, message string
	clearUnfreeze   bool
}

// changes reports whether applying d to an object with marks writes anything.
func (d freezeDecision) changes(marks freezeMarks) bool {
	if d.frozen {
		return !marks.complete()
	}
	return marks.frozen()
}

// decideOvershoot decides a MachineSet's freeze with hysteresis; UnfreezeAnnotation lifts
// it. Nothing freezes until settled: a scale-down's surplus may not be marked yet.
func decideOvershoot(name string, count int, th thresholds, marks freezeMarks, unfreezeRequested, settled bool) freezeDecision {
	switch {
	case unfreezeRequested:
		return freezeDecision{reason: ReasonUnfreezeAnnotation,
			message:       fmt.Sprintf("The freeze of MachineSet: %s was lifted by the %s annotation", name, UnfreezeAnnotation),
			clearUnfreeze: true}
	case count >= th.high && !settled && !marks.frozen():
		return freezeDecision{}
	case count >= th.high:
		return freezeDecision{frozen: true, reason: ReasonOverShootingReplicaCount,
			message: fmt.Sprintf("The number of machines backing MachineSet: %s is %d >= %d which is the Max-ScaleUp-Limit", name, count, th.high)}
	case count <= th.low:
		return freezeDecision{reason: ReasonUnderShootingReplicaCount,
			message: fmt.Sprintf("The number of machines backing MachineSet: %s is %d <= %d which is the lower threshold", name, count, th.low)}
	case marks.frozen():
		// A freeze holds between the thresholds; a missing mark is restored.
		return freezeDecision{frozen: true, reason: ReasonOverShootingReplicaCount,
			message: fmt.Sprintf("The number of machines backing MachineSet: %s is %d, above %d, the lower threshold", name, count, th.low)}
	}
	return freezeDecision{}
}

// decideDeployment: a MachineDeployment is frozen while any of its MachineSets is (with
// that set's reason when it froze now); its UnfreezeAnnotation lifts it.
func decideDeployment(name string, anySetFrozen bool, setDecision freezeDecision, setFrozeNow, unfreezeRequested bool) freezeDecision {
	switch {
	case unfreezeRequested:
		return freezeDecision{reason: ReasonUnfreezeAnnotation,
			message:       fmt.Sprintf("The freeze of MachineDeployment: %s was lifted by the %s annotation", name, UnfreezeAnnotation),
			clearUnfreeze: true}
	case setFrozeNow:
		return freezeDecision{frozen: true, reason: setDecision.reason, message: setDecision.message}
	case anySetFrozen:
		return freezeDecision{frozen: true, reason: ReasonMachineDeploymentStateSync,
			message: fmt.Sprintf("MachineDeployment: %s has a frozen MachineSet", name)}
	}
	reason := ReasonUnderShootingReplicaCount
	if setDecision.reason == ReasonUnfreezeAnnotation {
		reason = ReasonUnfreezeAnnotation
	}
	return freezeDecision{reason: reason, message: fmt.Sprintf("No MachineSet of MachineDeployment: %s is frozen", name)}
}
