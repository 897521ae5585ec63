package controllertest

import (
	"fmt"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machine"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider/vsphere/vspheretest"
)

// A Running Machine whose VM is destroyed in vCenter behind the Machine
// API's back goes Failed with InstanceExists=False (InstanceMissing), the
// state a MachineHealthCheck remediates; nothing clones a new VM for it.
// Breaks if: Exists answered true for a provisioned Machine without a VM, or
// the provider's Create were called again for it (a second VM).
func TestDestroyedVMFailsRunningMachine(t *testing.T) {
	f := newFixture(t, nil)
	m := f.machine(t, "worker-gone", vspheretest.Template)
	f.reconcileUntilPoweredOn(t, m, "worker-gone")
	f.vc.SetGuestIP("worker-gone", "10.1.0.9")
	f.reconcileUntil(t, m, "Provisioned", func(got *machinev1beta1.Machine) error {
		if phase(got) != machinev1beta1.PhaseProvisioned {
			return fmt.Errorf("phase %q", phase(got))
		}
		// nodelink's part: the Node registered by the VM's kubelet.
		got.Status.NodeRef = &corev1.ObjectReference{Kind: "Node", Name: "worker-gone"}
		return env.Client.Status().Update(f.ctx, got)
	})
	f.reconcileUntilPhase(t, m, machinev1beta1.PhaseRunning)

	vm := f.vc.VM("worker-gone")
	f.vc.Wait(vm.PowerOff(f.ctx))
	f.vc.Wait(vm.Destroy(f.ctx))

	f.reconcileUntilPhase(t, m, machinev1beta1.PhaseFailed)
	got := &machinev1beta1.Machine{}
	if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(m), got); err != nil {
		t.Fatal(err)
	}
	var exists *machinev1beta1.Condition
	for i := range got.Status.Conditions {
		if got.Status.Conditions[i].Type == machine.InstanceExistsCondition {
			exists = &got.Status.Conditions[i]
		}
	}
	if exists == nil || exists.Status != corev1.ConditionFalse || exists.Reason != machine.ReasonInstanceMissing {
		t.Errorf("InstanceExists = %+v, want False/%s", exists, machine.ReasonInstanceMissing)
	}
	if n := f.vc.VMsNamed("worker-gone"); n != 0 {
		t.Errorf("%d VMs named worker-gone after the Machine failed, want 0 (nothing re-cloned)", n)
	}
}
