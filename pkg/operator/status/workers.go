package status

import (
	"fmt"
	"slices"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// MinimumRunningWorkers is how many worker Machines must be Running before a
// fresh install reports Available, as on OpenShift.
const MinimumRunningWorkers = 2

// InstallGateApplies: the install gate holds Available back on a fresh
// install only (no version reported, never available), never on NoOp.
func InstallGateApplies(prev configv1.ClusterOperatorStatus, obs Observation) bool {
	if obs.NoOp || obs.OperandUnknown || len(prev.Versions) > 0 {
		return false
	}
	a := find(prev.Conditions, configv1.OperatorAvailable)
	return a == nil || a.Reason == ReasonInitializing
}

// CheckMinimumWorkers is OpenShift's install gate: every MachineSet has its
// replicas, and at least MinimumRunningWorkers are Running when more than one
// is expected. It returns "" when met, else what it waits for.
func CheckMinimumWorkers(sets []machinev1beta1.MachineSet, machines []machinev1beta1.Machine) string {
	expected, running := 0, 0
	var waiting []string
	for i := range sets {
		ms := &sets[i]
		replicas := 1
		if ms.Spec.Replicas != nil {
			replicas = int(*ms.Spec.Replicas)
		}
		selector, err := metav1.LabelSelectorAsSelector(&ms.Spec.Selector)
		if err != nil {
			return fmt.Sprintf("could not determine running Machines in MachineSet %q: invalid selector: %v", ms.Name, err)
		}
		var owned []*machinev1beta1.Machine
		for j := range machines {
			m := &machines[j]
			if m.Namespace == ms.Namespace && !selector.Empty() && selector.Matches(labels.Set(m.Labels)) {
				owned = append(owned, m)
			}
		}
		if len(owned) != replicas {
			return fmt.Sprintf("could not determine running Machines in MachineSet %q: replicas not satisfied for MachineSet: expected %d replicas, got %d current replicas",
				ms.Name, replicas, len(owned))
		}
		expected += replicas
		for _, m := range owned {
			if m.Status.Phase != nil && *m.Status.Phase == machinev1beta1.PhaseRunning {
				running++
			} else {
				waiting = append(waiting, m.Name)
			}
		}
	}
	if expected > 1 && running < MinimumRunningWorkers {
		// Sorted: a message in cache order would rewrite the status every sync.
		slices.Sort(waiting)
		return fmt.Sprintf("minimum worker replica count (%d) not yet met: current running replicas %d, waiting for %v",
			MinimumRunningWorkers, running, waiting)
	}
	return ""
}
