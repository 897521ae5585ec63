package safety

// The overshoot freeze's decisions (docs/safety.md, "Overshoot freeze").

import (
	"fmt"
	"slices"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/rollingupdate"
)

// thresholds bound a MachineSet's Machine count: frozen at ≥ high, thawed at ≤ low.
// In int64: no replicas, surge or safety margin makes them wrap.
type thresholds struct{ high, low int64 }

// overshootThresholds: high = 2×replicas + safetyUp, or under md (nil: standalone)
// md.replicas + maxSurge + safetyUp; low = high − safetyDown. maxSurge is the one the
// MachineDeployment controller uses (at most md.replicas, package rollingupdate), so no
// surge lifts the threshold above a standalone set's of that size.
func overshootThresholds(replicas int64, md *mdv1beta1.MachineDeployment, safetyUp, safetyDown int) (thresholds, error) {
	high := 2*max(replicas, 0) + int64(safetyUp)
	if md != nil {
		surge, err := rollingupdate.Surge(md)
		if err != nil {
			return thresholds{}, fmt.Errorf("reading maxSurge of MachineDeployment %s: %w", md.Name, err)
		}
		high = rollingupdate.Replicas(md) + surge + int64(safetyUp)
	}
	return thresholds{high: high, low: high - int64(safetyDown)}, nil
}

// countMachines counts the Machines backing ms as machine-controller-manager
// does (owner by name and UID, the template's labels), not those being deleted.
func countMachines(ms *machinev1beta1.MachineSet, machines []*machinev1beta1.Machine) int64 {
	template := labels.SelectorFromSet(ms.Spec.Template.Labels)
	var n int64
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
		label:     objLabels[mdv1beta1.FreezeLabel] == mdv1beta1.FreezeLabelValue,
		condition: conditions.IsTrue(conds, mdv1beta1.FrozenCondition),
	}
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
func decideOvershoot(name string, count int64, th thresholds, marks freezeMarks, unfreezeRequested, settled bool) freezeDecision {
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
