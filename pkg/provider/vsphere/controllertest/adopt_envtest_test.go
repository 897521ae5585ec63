package controllertest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machine"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider/vsphere"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider/vsphere/vspheretest"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// outsideVM clones the template into the workspace folder outside the Machine API (as the installer does for
// the control plane, or a user with govc): no ownership mark, vCenter's own instance UUID.
func (f *fixture) outsideVM(t *testing.T, name string, powerOn bool) *object.VirtualMachine {
	t.Helper()
	folder, err := f.vc.Finder.Folder(f.ctx, vspheretest.Folder)
	if err != nil {
		t.Fatal(err)
	}
	f.vc.Wait(f.vc.VM(vspheretest.Template).Clone(f.ctx, folder, name, types.VirtualMachineCloneSpec{}))
	vm := f.vc.VM(name)
	if powerOn {
		f.vc.Wait(vm.PowerOn(f.ctx))
	}
	return vm
}

// vmSnapshot is what the provider must never change on a VM that is not its own.
func (f *fixture) vmSnapshot(vm *object.VirtualMachine) string {
	p := f.vc.Props(vm, "config", "runtime.powerState")
	var extra []string
	for _, o := range p.Config.ExtraConfig {
		extra = append(extra, fmt.Sprintf("%s=%v", o.GetOptionValue().Key, o.GetOptionValue().Value))
	}
	return fmt.Sprintf("instanceUUID=%s biosUUID=%s annotation=%q cpus=%d memoryMiB=%d devices=%d power=%s extraConfig=%v",
		p.Config.InstanceUuid, p.Config.Uuid, p.Config.Annotation, p.Config.Hardware.NumCPU, p.Config.Hardware.MemoryMB,
		len(p.Config.Hardware.Device), p.Runtime.PowerState, extra)
}

// An installer-made, powered-on VM (created outside the Machine API, its instance UUID unrelated to the
// Machine's UID) under a Machine of its name is adopted by name, as on OpenShift: the Machine gets its
// providerID and becomes Running, and the VM's configuration, UUIDs and power state stay as they were.
// Deleting the Machine destroys that VM, as OpenShift does. Breaks if: the provider looked the VM up by
// instance UUID only (the Machine clones a second VM or fails on the duplicate name), or reconfigured or
// re-UUIDed an adopted VM (the snapshot changes).
func TestInstallerVMAdoptedByName(t *testing.T) {
	f := newFixture(t, nil)
	vm := f.outsideVM(t, "master-0", true)
	f.vc.SetGuestIP("master-0", "10.1.0.20")
	before := f.vmSnapshot(vm)
	bios := f.vc.Props(vm, "config.uuid").Config.Uuid

	m := f.machine(t, "master-0", vspheretest.Template)
	f.reconcileUntil(t, m, "Provisioned with the installer VM's providerID", func(got *machinev1beta1.Machine) error {
		if phase(got) != machinev1beta1.PhaseProvisioned {
			return fmt.Errorf("phase %q", phase(got))
		}
		if want := "vsphere://" + strings.ToLower(bios); ptr.Deref(got.Spec.ProviderID, "") != want {
			return fmt.Errorf("providerID %q, want %s", ptr.Deref(got.Spec.ProviderID, ""), want)
		}
		got.Status.NodeRef = &corev1.ObjectReference{Kind: "Node", Name: "master-0"} // nodelink's part
		return env.Client.Status().Update(f.ctx, got)
	})
	f.reconcileUntilPhase(t, m, machinev1beta1.PhaseRunning)
	for range 3 { // a few more reconciles of the Running Machine
		if _, err := f.r.Reconcile(f.ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(m)}); err != nil {
			t.Fatal(err)
		}
	}
	if after := f.vmSnapshot(vm); after != before {
		t.Errorf("the adopted VM changed:\nbefore %s\nafter  %s", before, after)
	}
	if n := f.vc.VMsNamed("master-0"); n != 1 {
		t.Errorf("%d VMs named master-0, want the installer's only", n)
	}

	f.deleteUntilGone(t, m)
	if n := f.vc.VMsNamed("master-0"); n != 0 {
		t.Errorf("%d VMs named master-0 after its Machine was deleted, want 0 (OpenShift deletes the VM it adopted)", n)
	}
}

// A powered-off VM outside the Machine API with a new Machine's name is never changed (not configured,
// re-UUIDed or powered on); the Machine says so in its conditions (providerStatus MachineCreation=False,
// VMNameConflict, with what to do; InstanceExists=False with the same message), and deleting
// the Machine leaves the VM. Breaks if: Create claimed a foreign powered-off VM of its name (as it did:
// createConfigure for any unclaimed VM), or Delete destroyed a VM the Machine never adopted.
func TestForeignStoppedVMLeftAlone(t *testing.T) {
	f := newFixture(t, nil)
	vm := f.outsideVM(t, "worker-taken", false)
	before := f.vmSnapshot(vm)

	m := f.machine(t, "worker-taken", vspheretest.Template)
	var got *machinev1beta1.Machine
	poll.Eventually(t, 20*time.Second, "the conflict reported", poll.Check(func() error {
		_, _ = f.r.Reconcile(f.ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(m)}) // errs while the conflict lasts
		got = &machinev1beta1.Machine{}
		if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(m), got); err != nil {
			return err
		}
		st := &machinev1beta1.VSphereMachineProviderStatus{}
		if err := decodeStatus(got, st); err != nil {
			return err
		}
		c := meta.FindStatusCondition(st.Conditions, string(machinev1beta1.MachineCreation))
		if c == nil || c.Reason != vsphere.ReasonVMNameConflict {
			return fmt.Errorf("MachineCreation %+v, want reason %s", c, vsphere.ReasonVMNameConflict)
		}
		return nil
	}))
	for range 3 {
		_, _ = f.r.Reconcile(f.ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(m)})
	}
	if after := f.vmSnapshot(vm); after != before {
		t.Errorf("the foreign VM changed:\nbefore %s\nafter  %s", before, after)
	}
	var exists *machinev1beta1.Condition
	for i := range got.Status.Conditions {
		if got.Status.Conditions[i].Type == machine.InstanceExistsCondition {
			exists = &got.Status.Conditions[i]
		}
	}
	if exists == nil || exists.Status != corev1.ConditionFalse || !strings.Contains(exists.Message, "rename or remove that VM") {
		t.Errorf("InstanceExists = %+v, want False with the conflict and what to do", exists)
	}
	if phase(got) == machinev1beta1.PhaseFailed || got.Spec.ProviderID != nil {
		t.Errorf("phase %q, providerID %v: want a Machine still Provisioning, without the VM's providerID", phase(got), got.Spec.ProviderID)
	}
	if n := f.vc.VMsNamed("worker-taken"); n != 1 {
		t.Errorf("%d VMs named worker-taken, want the foreign one only", n)
	}

	f.deleteUntilGone(t, m)
	if after := f.vmSnapshot(vm); after != before {
		t.Errorf("deleting the Machine changed the foreign VM:\nbefore %s\nafter  %s", before, after)
	}
}

// decodeStatus reads the Machine's providerStatus.
func decodeStatus(m *machinev1beta1.Machine, st *machinev1beta1.VSphereMachineProviderStatus) error {
	if m.Status.ProviderStatus == nil {
		return fmt.Errorf("no providerStatus yet (phase %q)", phase(m))
	}
	return json.Unmarshal(m.Status.ProviderStatus.Raw, st)
}
