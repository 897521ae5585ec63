// Package deletepolicy orders a MachineSet's Machines for scale-down (spec.deletePolicy): the machineset
// controller deletes the first ones, and the MachineDeployment controller scales down the set whose Machines
// would go first.
package deletepolicy

import (
	"cmp"
	"hash/fnv"
	"slices"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

// Annotations read on Machines.
const (
	// DeleteMachineAnnotation (non-empty) makes a Machine the first to go on scale-down.
	DeleteMachineAnnotation = "machine.openshift.io/delete-machine"
	// LegacyDeleteMachineAnnotation is its older spelling, still honoured.
	LegacyDeleteMachineAnnotation = "machine.openshift.io/cluster-api-delete-machine"
)

// Delete classes, lowest deleted first.
const (
	classDeleting = iota
	classMarked
	classFailed
	classNodeless
	classOther
)

func deleteClass(m *machinev1beta1.Machine) int {
	switch {
	case m.DeletionTimestamp != nil:
		return classDeleting
	case m.Annotations[DeleteMachineAnnotation] != "" || m.Annotations[LegacyDeleteMachineAnnotation] != "":
		return classMarked
	case isFailed(m):
		return classFailed
	case m.Status.NodeRef == nil:
		return classNodeless
	default:
		return classOther
	}
}

// isFailed reports whether m has an errorReason or errorMessage, or phase Failed.
func isFailed(m *machinev1beta1.Machine) bool {
	return (m.Status.ErrorReason != nil && *m.Status.ErrorReason != "") ||
		(m.Status.ErrorMessage != nil && *m.Status.ErrorMessage != "") ||
		(m.Status.Phase != nil && *m.Status.Phase == "Failed")
}

// randomKey is the Random policy's sort key: FNV-1a 64 of the UID (or name).
func randomKey(m *machinev1beta1.Machine) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(cmp.Or(string(m.UID), m.Name)))
	return h.Sum64()
}

// MachinesToDelete returns the first n of machines in delete order: class,
// then policy (Oldest, Newest, else Random), then name.
func MachinesToDelete(policy machinev1beta1.MachineSetDeletePolicy, machines []*machinev1beta1.Machine, n int) []*machinev1beta1.Machine {
	if n <= 0 || len(machines) == 0 {
		return nil
	}
	byPolicy := func(a, b *machinev1beta1.Machine) int {
		switch policy {
		case machinev1beta1.OldestMachineSetDeletePolicy:
			return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
		case machinev1beta1.NewestMachineSetDeletePolicy:
			return b.CreationTimestamp.Compare(a.CreationTimestamp.Time)
		}
		return cmp.Compare(randomKey(a), randomKey(b))
	}
	out := slices.Clone(machines)
	slices.SortFunc(out, func(a, b *machinev1beta1.Machine) int {
		return cmp.Or(cmp.Compare(deleteClass(a), deleteClass(b)), byPolicy(a, b), cmp.Compare(a.Name, b.Name))
	})
	return out[:min(n, len(out))]
}
