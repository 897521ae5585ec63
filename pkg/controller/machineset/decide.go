package machineset

import (
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/deletepolicy"
	"github.com/machine-api-operator/machine-api-operator/pkg/nodeutil"
)

var machineSetKind = machinev1beta1.GroupVersion.WithKind("MachineSet")

// claims sorts a MachineSet's candidate Machines.
type claims struct {
	active   []*machinev1beta1.Machine // owned, matching: they count
	adopt    []*machinev1beta1.Machine // orphans that match, not being deleted
	release  []*machinev1beta1.Machine // owned, no longer matching
	deleting int                       // owned, being deleted
}

var controllerOf = metav1.GetControllerOfNoCopy

// machineSetOwner returns the MachineSet controlling m, if one does.
func machineSetOwner(m metav1.Object) (types.NamespacedName, bool) {
	ref := controllerOf(m)
	if ref == nil || ref.Kind != machineSetKind.Kind {
		return types.NamespacedName{}, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != machineSetKind.Group {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: m.GetNamespace(), Name: ref.Name}, true
}

// classifyMachines sorts machines (others' are ignored); sel is selectorOf(ms).
func classifyMachines(ms *machinev1beta1.MachineSet, sel labels.Selector, machines []*machinev1beta1.Machine) claims {
	var c claims
	for _, m := range machines {
		ref := controllerOf(m)
		matches := sel.Matches(labels.Set(m.Labels))
		switch {
		case ref != nil && ref.UID != ms.UID: // someone else's
		case ref != nil && m.DeletionTimestamp != nil:
			c.deleting++
		case ref != nil && matches:
			c.active = append(c.active, m)
		case ref != nil:
			c.release = append(c.release, m)
		case m.DeletionTimestamp == nil && matches:
			c.adopt = append(c.adopt, m)
		}
	}
	return c
}

// replicaAction is what decide wants done (remove in delete order; frozen:
// Machines are missing but none may be created).
type replicaAction struct {
	create int
	remove []*machinev1beta1.Machine
	wait   bool
	frozen bool
}

// decide compares the active Machines with the desired count. Creations are
// capped at maxCreate (no cap when <= 0); frozen stops them, not scale-down.
func decide(desired int, active []*machinev1beta1.Machine, satisfied bool, policy machinev1beta1.MachineSetDeletePolicy, maxCreate int, frozen bool) replicaAction {
	if !satisfied {
		return replicaAction{wait: true}
	}
	diff := len(active) - desired
	switch {
	case diff < 0 && frozen:
		return replicaAction{frozen: true}
	case diff < 0:
		n := -diff
		if maxCreate > 0 {
			n = min(n, maxCreate)
		}
		return replicaAction{create: n}
	case diff > 0:
		return replicaAction{remove: deletepolicy.MachinesToDelete(policy, active, diff)}
	}
	return replicaAction{}
}

// availability says whether a Node is ready, and available (Ready for minReady; else wait more).
func availability(node *corev1.Node, minReady time.Duration, now time.Time) (ready, available bool, wait time.Duration) {
	c := nodeutil.ReadyCondition(node)
	if c == nil || c.Status != corev1.ConditionTrue {
		return false, false, 0
	}
	if minReady <= 0 {
		return true, true, 0
	}
	availableAt := c.LastTransitionTime.Add(minReady)
	if !now.Before(availableAt) {
		return true, true, 0
	}
	return true, false, availableAt.Sub(now)
}

// computeStatus returns ms's status for the active Machines (errors cleared)
// and the time until the next ready Machine becomes available (0: none).
func computeStatus(ms *machinev1beta1.MachineSet, active []*machinev1beta1.Machine, nodeOf func(name string) *corev1.Node, now time.Time) (st machinev1beta1.MachineSetStatus, requeue time.Duration) {
	st = *ms.Status.DeepCopy()
	st.ErrorReason, st.ErrorMessage = nil, nil
	st.ObservedGeneration = ms.Generation
	st.LabelSelector = metav1.FormatLabelSelector(&ms.Spec.Selector)
	st.Replicas = int32(len(active))
	st.FullyLabeledReplicas, st.ReadyReplicas, st.AvailableReplicas = 0, 0, 0
	templateLabels := labels.SelectorFromSet(ms.Spec.Template.Labels)
	minReady := time.Duration(ms.Spec.MinReadySeconds) * time.Second
	for _, m := range active {
		if templateLabels.Matches(labels.Set(m.Labels)) {
			st.FullyLabeledReplicas++
		}
		if m.Status.NodeRef == nil || m.Status.NodeRef.Name == "" {
			continue
		}
		ready, available, wait := availability(nodeOf(m.Status.NodeRef.Name), minReady, now)
		if ready {
			st.ReadyReplicas++
		}
		if available {
			st.AvailableReplicas++
		} else if ready && (requeue == 0 || wait < requeue) {
			requeue = wait
		}
	}
	return st, requeue
}

func invalidStatus(ms *machinev1beta1.MachineSet, message string) machinev1beta1.MachineSetStatus {
	st := *ms.Status.DeepCopy()
	st.ErrorReason, st.ErrorMessage = ptr.To(machinev1beta1.InvalidConfigurationMachineSetError), &message
	st.ObservedGeneration = ms.Generation
	st.LabelSelector = metav1.FormatLabelSelector(&ms.Spec.Selector)
	return st
}
