package machineset

import (
	"fmt"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
)

// TestFrozenMachineSetCreatesNothing: a MachineSet frozen by the overshoot
// check (label freeze=True) creates no Machines, still scales down, and
// creates the missing ones once the freeze lifts. Breaks if:
// reconcileReplicas passed frozen=false to decide.
func TestFrozenMachineSetCreatesNothing(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	freeze := func(ms *machinev1beta1.MachineSet) {
		if ms.Labels == nil {
			ms.Labels = map[string]string{}
		}
		ms.Labels[mdv1beta1.FreezeLabel] = mdv1beta1.FreezeLabelValue
	}
	ms := h.newMachineSet("frozen", 2, freeze)
	h.whenSettled("a frozen MachineSet creates nothing", func() error {
		if got := h.machineSet("frozen").Status.ObservedGeneration; got != ms.Generation {
			return fmt.Errorf("not reconciled yet: observedGeneration %d, want %d", got, ms.Generation)
		}
		if n := len(h.ownedBy(ms)); n != 0 {
			return fmt.Errorf("%d Machines, want 0", n)
		}
		return nil
	})

	h.updateMachineSet("frozen", func(ms *machinev1beta1.MachineSet) { delete(ms.Labels, mdv1beta1.FreezeLabel) })
	h.waitOwned(ms, 2)

	// Frozen again: scaling down still deletes.
	h.updateMachineSet("frozen", func(ms *machinev1beta1.MachineSet) { freeze(ms); ms.Spec.Replicas = new(int32(1)) })
	h.waitOwned(ms, 1)
}
