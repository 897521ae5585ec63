package vsphere

import (
	"testing"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

// vCenter answers the clone call only after the client gave up (the call's
// response is lost, the clone still happens): Create fails, is retried, and
// the Machine ends with exactly one VM, configured and powered on.
func TestCreateCloneResponseLost(t *testing.T) {
	slow := func(m *simulator.Model) { m.DelayConfig.MethodDelay = map[string]int{"CloneVM_Task": 600} }
	e := newSimEnvWith(t, slow, Options{APITimeout: 300 * time.Millisecond})
	m := e.newMachine("worker-0", nil)
	var errs int
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := call(m, e.a.Create, true)
		if err == nil {
			break
		}
		if !requeued(err) {
			errs++
		}
		if time.Now().After(deadline) {
			t.Fatalf("Create did not finish: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if errs == 0 {
		t.Fatal("no Create failed: the clone call was not cut off by the API timeout, the test proves nothing")
	}
	if n := e.vmsNamed("worker-0"); n != 1 {
		t.Fatalf("%d VMs named worker-0, want 1", n)
	}
	p := e.props(e.vm("worker-0"), "config.instanceUuid", "runtime.powerState")
	if p.Config.InstanceUuid != string(m.UID) || p.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOn {
		t.Errorf("VM instance UUID %s power %s; want %s poweredOn", p.Config.InstanceUuid, p.Runtime.PowerState, m.UID)
	}
}

// A VM destroyed behind the provider's back after the Machine was
// provisioned: Exists answers false, which the machine controller turns
// into Failed (InstanceMissing).
func TestExistsFalseWhenProvisionedVMIsDestroyed(t *testing.T) {
	e := newSimEnv(t)
	m := e.newMachine("worker-0", nil)
	if err := e.until(m, e.a.Create, true); err != nil {
		t.Fatal(err)
	}
	if err := call(m, e.a.Update, true); err != nil {
		t.Fatal(err)
	}
	if m.Spec.ProviderID == nil || len(m.Status.Addresses) == 0 {
		t.Fatalf("Update left providerID %v addresses %v, want both set", m.Spec.ProviderID, m.Status.Addresses)
	}
	vm := e.vm("worker-0")
	e.wait(vm.PowerOff(e.ctx))
	if ok, err := e.a.Exists(e.ctx, m); err != nil || !ok {
		t.Fatalf("Exists of a provisioned, stopped VM: %v, %v; want true", ok, err)
	}
	e.wait(vm.Destroy(e.ctx))
	if ok, err := e.a.Exists(e.ctx, m); err != nil || ok {
		t.Errorf("Exists after the VM was destroyed: %v, %v; want false", ok, err)
	}
}
