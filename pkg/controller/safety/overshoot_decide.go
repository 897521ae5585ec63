package safety

// The overshoot freeze's decisions: pure functions of what the controller
// observed (docs/safety.md, "Overshoot freeze").

import (
	"fmt"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
)

// defaultMaxSurge is a RollingUpdate MachineDeployment's maxSurge when it
// is not set (the Deployment default; the webhook normally sets it).
var defaultMaxSurge = intstr.FromString("25%")

// thresholds bound a MachineSet's Machine count: at high or above it is
// frozen, at low or below the freeze lifts.
type thresholds struct{ high, low int }

// overshootThresholds returns the thresholds of a MachineSet of replicas,
// owned by md (nil for a standalone set): standalone high = 2×replicas +
// safetyUp; in a MachineDeployment high = md.replicas + maxSurge (percent
// rounded up) + safetyUp, as the deployment may surge; low = high −
// safetyDown.
func overshootThresholds(replicas int, md *mdv1beta1.MachineDeployment, safetyUp, safetyDown int) (thresholds, error) {
	high := 2*replicas + safetyUp
	if md != nil {
		mdReplicas := 1
		if md.Spec.Replicas != nil {
			mdReplicas = int(*md.Spec.Replicas)
		}
		surge, err := maxSurge(md, mdReplicas)
		if err != nil {
			return thresholds{}, fmt.Errorf("reading maxSurge of MachineDeployment %s: %w", md.Name, err)
		}
		high = mdReplicas + surge + safetyUp
	}
	return thresholds{high: high, low: high - safetyDown}, nil
}

// maxSurge is md's maxSurge for replicas, percentages rounded up; 0 for the
// Recreate and OnDelete strategies, which never surge.
func maxSurge(md *mdv1beta1.MachineDeployment, replicas int) (int, error) {
	s := md.Spec.Strategy
	if s.Type != "" && s.Type != mdv1beta1.RollingUpdateStrategy {
		return 0, nil
	}
	v := &defaultMaxSurge
	if s.RollingUpdate != nil && s.RollingUpdate.MaxSurge != nil {
		v = s.RollingUpdate.MaxSurge
	}
	return intstr.GetScaledValueFromIntOrPercent(v, replicas, true)
}

// countMachines counts the Machines backing ms as machine-controller-manager
// does: an ownerReference to ms (by name and UID) and the template's labels;
// Machines being deleted are on their way out and not counted.
func countMachines(ms *machinev1beta1.MachineSet, machines []*machinev1beta1.Machine) int {
	template := labels.SelectorFromSet(ms.Spec.Template.Labels)
	n := 0
	for _, m := range machines {
		if m.DeletionTimestamp != nil || !template.Matches(labels.Set(m.Labels)) {
			continue
		}
		for _, ref := range m.OwnerReferences {
			if ref.Kind == "MachineSet" && ref.Name == ms.Name && ref.UID == ms.UID {
				n++
				break
			}
		}
	}
	return n
}

// freezeMarks are the two marks of a freeze on an object: the freeze label
// and a Frozen=True condition. Either one means frozen.
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

// freezeDecision is the desired freeze state of an object.
type freezeDecision struct {
	// frozen is the desired state.
	frozen bool
	// reason and message are the Frozen condition's when frozen, and say
	// why the freeze lifted otherwise.
	reason, message string
	// clearUnfreeze: remove UnfreezeAnnotation.
	clearUnfreeze bool
}

// changes reports whether applying d to an object with marks writes
// anything: a freeze completes missing marks, an unfreeze removes present
// ones.
func (d freezeDecision) changes(marks freezeMarks) bool {
	if d.frozen {
		return !marks.complete()
	}
	return marks.frozen()
}

// decideOvershoot decides a MachineSet's freeze from its Machine count:
// frozen at count ≥ high, unfrozen at count ≤ low, unchanged in between
// (hysteresis); UnfreezeAnnotation lifts the freeze whatever the count (the
// next evaluation freezes again if the count is still high). settled says
// the MachineSet controller has acted on the set's latest spec
// (status.observedGeneration): until then a scale-down's surplus may not be
// marked for deletion yet, so nothing is frozen.
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
		// Between the thresholds a freeze holds; a missing mark is restored.
		return freezeDecision{frozen: true, reason: ReasonOverShootingReplicaCount,
			message: fmt.Sprintf("The number of machines backing MachineSet: %s is %d, above %d, the lower threshold", name, count, th.low)}
	}
	return freezeDecision{}
}

// decideDeployment decides a MachineDeployment's freeze: frozen while any
// of its MachineSets is (the set's reason and message when that set froze
// now, MachineDeploymentStateSync otherwise); UnfreezeAnnotation on it lifts
// the freeze (and is propagated to its sets by the caller).
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

// frozenCondition is the Frozen=True condition of a freeze decision.
func frozenCondition(d freezeDecision) machinev1beta1.Condition {
	return conditions.New(mdv1beta1.FrozenCondition, corev1.ConditionTrue, d.reason, "", d.message)
}
