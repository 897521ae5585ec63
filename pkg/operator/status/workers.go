package status

import (
	"fmt"
	"slices"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

// MinimumRunningWorkers is how many worker Machines must be Running before a
// fresh install reports Available, as on OpenShift.
const MinimumRunningWorkers = 2

// InstallGateApplies reports whether the install gate holds Available back on a fresh
// install only (no version reported, never available), never on NoOp.
func InstallGateApplies(prev configv1.ClusterOperatorStatus, obs Observation) bool {
	if obs.NoOp || obs.OperandUnknown || len(prev.Versions) > 0 {
		return false
	}
	a := find(prev.Conditions, configv1.OperatorAvailable)
	return a == nil || a.Reason == ReasonInitializing
}

// CheckMinimumWorkers is OpenShift's install gate ("" when met): every MachineSet
// has its replicas, MinimumRunningWorkers Running when more than one is expected.
func CheckMinimumWorkers(sets []machinev1beta1.MachineSet, machines []machinev1beta1.Machine) string {
	expected, running := 0, 0
	var waiting []string
	for i := range sets {
		ms := &sets[i]
		replicas := int(ptr.Deref(ms.Spec.Replicas, 1))
		selector, err := metav1.LabelSelectorAsSelector(&ms.Spec.Selector)
		if err != nil {
			return fmt.Sprintf("could not determine running Machines in MachineSet %q: invalid selector: %v", ms.Name, err)
		}
		owned := 0
		for j := range machines {
			m := &machines[j]
			switch {
			case m.Namespace != ms.Namespace || selector.Empty() || !selector.Matches(labels.Set(m.Labels)):
			case ptr.Deref(m.Status.Phase, "") == machinev1beta1.PhaseRunning:
				owned, running = owned+1, running+1
			default:
				owned, waiting = owned+1, append(waiting, m.Name)
			}
		}
		if owned != replicas {
			return fmt.Sprintf("could not determine running Machines in MachineSet %q: replicas not satisfied for MachineSet: expected %d replicas, got %d current replicas",
				ms.Name, replicas, owned)
		}
		expected += replicas
	}
	if expected > 1 && running < MinimumRunningWorkers {
		// Sorted: a message in cache order would rewrite the status every sync.
		slices.Sort(waiting)
		return fmt.Sprintf("minimum worker replica count (%d) not yet met: current running replicas %d, waiting for %v",
			MinimumRunningWorkers, running, waiting)
	}
	return ""
}
