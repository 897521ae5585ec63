package vsphere

import (
	"slices"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// otherVM is a VM of the simulated cluster that is not a Machine's.
const otherVM = "DC0_C0_RP0_VM1"

func inGroup(group string) func(*machinev1beta1.VSphereMachineProviderSpec) {
	return func(s *machinev1beta1.VSphereMachineProviderSpec) { s.Workspace.VMGroup = group }
}

// A Machine naming a VM group gets its VM into the group before power-on,
// next to the group's other VMs, once, however often Create runs.
func TestCreateJoinsVMGroupBeforePowerOn(t *testing.T) {
	e := newSimEnvWith(t, nil, Options{VMGroupZonal: true})
	reg := prometheus.NewRegistry()
	if err := e.a.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	e.CreateVMGroup("zone-a", otherVM)
	m := e.newMachine("worker-0", inGroup("zone-a"))
	for i := 0; ; i++ {
		err := call(m, e.a.Create, true)
		if e.vmsNamed("worker-0") == 1 {
			p := e.props(e.vm("worker-0"), "runtime.powerState")
			members, _ := e.VMGroupMembers("zone-a")
			if p.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn && !slices.Contains(members, "worker-0") {
				t.Fatalf("call %d: VM powered on while VM group zone-a lists only %v", i, members)
			}
		}
		if !requeued(err) {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		if i == 50 {
			t.Fatalf("still requeued after %d calls: %v", i, err)
		}
	}
	// A retry that lost its status (the VM found powered off, already in the
	// group), and calls after the VM runs, change nothing.
	e.Wait(e.vm("worker-0").PowerOff(e.ctx))
	lost := m.DeepCopy()
	lost.Status.ProviderStatus = nil
	for range 3 {
		if err := e.until(lost, e.a.Create, true); err != nil {
			t.Fatal(err)
		}
		if err := call(m, e.a.Create, true); err != nil {
			t.Fatal(err)
		}
	}
	members, _ := e.VMGroupMembers("zone-a")
	if want := []string{otherVM, "worker-0"}; !slices.Equal(members, want) {
		t.Errorf("VM group zone-a lists %v, want %v", members, want)
	}
	if n := requestCounts(t, reg)["soap ReconfigureComputeResource_Task success"]; n != 1 {
		t.Errorf("%d cluster reconfigures, want 1 (none for a VM already in the group)", n)
	}
	if p := e.props(e.vm("worker-0"), "runtime.powerState"); p.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOn {
		t.Errorf("VM is %s after the retries, want poweredOn", p.Runtime.PowerState)
	}
}

// Editing the group is idempotent: a VM already in it is not added twice
// and no reconfigure task is started.
func TestEditVMGroupIsIdempotent(t *testing.T) {
	e := newSimEnvWith(t, nil, Options{VMGroupZonal: true})
	e.CreateVMGroup("zone-a")
	m := e.newMachine("worker-0", inGroup("zone-a"))
	tgt, err := e.a.open(e.ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := groupCluster(e.ctx, e.vm(otherVM), tgt.spec.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	vm := e.vm(otherVM).Reference()
	for i, wantTask := range []bool{true, false, false} {
		ref, err := e.a.editVMGroup(e.ctx, tgt.session, cluster, "zone-a", vm, true)
		if err != nil {
			t.Fatal(err)
		}
		if (ref != "") != wantTask {
			t.Fatalf("edit %d: task %q, want a task: %v", i, ref, wantTask)
		}
		if ref != "" {
			var state taskState
			eventually(t, "the edit task", func() bool {
				state, _, err = readTask(e.ctx, tgt.session, ref)
				return err != nil || state != taskRunning
			})
			if err != nil || state != taskSucceeded {
				t.Fatalf("edit task %s: %v %v", ref, state, err)
			}
		}
	}
	if members, _ := e.VMGroupMembers("zone-a"); !slices.Equal(members, []string{otherVM}) {
		t.Errorf("VM group zone-a lists %v, want [%s]", members, otherVM)
	}
}

// While a task on the cluster runs (another edit of the group, say), an
// edit is requeued: the list it would read may lose that edit's VM.
func TestEditVMGroupWaitsForClusterTask(t *testing.T) {
	old := simulator.TaskDelay
	simulator.TaskDelay = simulator.DelayConfig{MethodDelay: map[string]int{"ReconfigureCluster": 1000, "LockHandoff": 0}}
	t.Cleanup(func() { simulator.TaskDelay = old })
	e := newSimEnvWith(t, nil, Options{VMGroupZonal: true})
	e.CreateVMGroup("zone-a")
	m := e.newMachine("worker-0", inGroup("zone-a"))
	tgt, err := e.a.open(e.ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := groupCluster(e.ctx, e.vm(otherVM), tgt.spec.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	first, second := e.vm(otherVM).Reference(), e.vm("DC0_H0_VM0").Reference()
	ref, err := e.a.editVMGroup(e.ctx, tgt.session, cluster, "zone-a", first, true)
	if err != nil || ref == "" {
		t.Fatalf("first edit: %q, %v", ref, err)
	}
	_, err = e.a.editVMGroup(e.ctx, tgt.session, cluster, "zone-a", second, true)
	if !requeued(err) {
		t.Fatalf("edit during the first one's task: %v, want a requeue", err)
	}
	mustContain(t, err, "a vCenter task of cluster DC0_C0 is running")
	eventually(t, "the second edit to start", func() bool {
		ref, err = e.a.editVMGroup(e.ctx, tgt.session, cluster, "zone-a", second, true)
		return !requeued(err)
	})
	if err != nil || ref == "" {
		t.Fatalf("second edit after the first: %q, %v", ref, err)
	}
	eventually(t, "the second edit's task", func() bool {
		state, _, err := readTask(e.ctx, tgt.session, ref)
		return err != nil || state != taskRunning
	})
	if members, _ := e.VMGroupMembers("zone-a"); !slices.Equal(members, []string{otherVM, "DC0_H0_VM0"}) {
		t.Errorf("VM group zone-a lists %v, want both VMs", members)
	}
}

// Without the VSphereHostVMGroupZonal gate a vmGroup is refused with
// OpenShift's message, before anything is cloned; the error is retried.
func TestCreateVMGroupNeedsFeatureGate(t *testing.T) {
	e := newSimEnv(t)
	e.CreateVMGroup("zone-a")
	m := e.newMachine("worker-0", inGroup("zone-a"))
	err := call(m, e.a.Create, true)
	if err == nil || err.Error() != "worker-0: vmGroup is only available with the VSphereHostVMGroupZonal feature gate" {
		t.Fatalf("Create: %v, want OpenShift's feature gate error", err)
	}
	if requeued(err) || provider.IsInvalidConfiguration(err) {
		t.Errorf("Create: %v is a requeue or fails the Machine; want a plain, retried error", err)
	}
	if n := e.vmsNamed("worker-0"); n != 0 {
		t.Errorf("%d VMs cloned without the gate, want 0", n)
	}
}

// A VM group the cluster does not have: OpenShift sends the edit anyway and
// vCenter rejects it; here Create says which group is missing, without a
// reconfigure, leaves the VM powered off and goes on once the group exists.
func TestCreateVMGroupMissing(t *testing.T) {
	e := newSimEnvWith(t, nil, Options{VMGroupZonal: true})
	m := e.newMachine("worker-0", inGroup("zone-x"))
	err := e.until(m, e.a.Create, true)
	mustContain(t, err, `VM group "zone-x" not found in cluster DC0_C0`, "create the VM group")
	if provider.IsInvalidConfiguration(err) {
		t.Errorf("%v fails the Machine; want it retried (the group may be created later)", err)
	}
	if _, found := e.VMGroupMembers("zone-x"); found {
		t.Error("a VM group zone-x was created; want none")
	}
	if p := e.props(e.vm("worker-0"), "runtime.powerState"); p.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOff {
		t.Errorf("VM is %s, want poweredOff until it is in its group", p.Runtime.PowerState)
	}
	e.CreateVMGroup("zone-x")
	if err := e.until(m, e.a.Create, true); err != nil {
		t.Fatalf("Create once the group exists: %v", err)
	}
	if members, _ := e.VMGroupMembers("zone-x"); !slices.Equal(members, []string{"worker-0"}) {
		t.Errorf("VM group zone-x lists %v, want [worker-0]", members)
	}
}

// Delete takes the VM out of its group before destroying it, as OpenShift
// does, and keeps the group's other VMs; a group that is gone does not
// block the delete.
func TestDeleteLeavesVMGroup(t *testing.T) {
	e := newSimEnvWith(t, nil, Options{VMGroupZonal: true})
	e.CreateVMGroup("zone-a", otherVM)
	m := e.newMachine("worker-0", inGroup("zone-a"))
	gone := e.newMachine("worker-1", inGroup("zone-gone"))
	e.CreateVMGroup("zone-gone")
	for _, m := range []*machinev1beta1.Machine{m, gone} {
		if err := e.until(m, e.a.Create, true); err != nil {
			t.Fatal(err)
		}
		now := metav1.Now()
		m.DeletionTimestamp = &now
	}
	e.RemoveVMGroup("zone-gone")
	for _, m := range []*machinev1beta1.Machine{m, gone} {
		if err := e.until(m, e.a.Delete, false); err != nil {
			t.Fatalf("Delete %s: %v", m.Name, err)
		}
		if n := e.vmsNamed(m.Name); n != 0 {
			t.Errorf("%d VMs named %s after Delete, want 0", n, m.Name)
		}
	}
	if members, _ := e.VMGroupMembers("zone-a"); !slices.Equal(members, []string{otherVM}) {
		t.Errorf("VM group zone-a lists %v after Delete, want [%s]", members, otherVM)
	}
}

// eventually polls cond every 10 ms for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A resource pool outside a cluster has no VM groups: Create fails the
// Machine after the clone, and Delete still destroys the VM.
func TestVMGroupOutsideACluster(t *testing.T) {
	e := newSimEnvWith(t, nil, Options{VMGroupZonal: true})
	m := e.newMachine("worker-0", func(s *machinev1beta1.VSphereMachineProviderSpec) {
		s.Workspace.VMGroup = "zone-a"
		s.Workspace.ResourcePool = "/DC0/host/DC0_H0/Resources"
	})
	err := e.until(m, e.a.Create, true)
	if !provider.IsInvalidConfiguration(err) {
		t.Fatalf("Create: %v, want InvalidConfiguration", err)
	}
	mustContain(t, err, `resource pool "/DC0/host/DC0_H0/Resources" belongs to`, "not a cluster")
	now := metav1.Now()
	m.DeletionTimestamp = &now
	if err := e.until(m, e.a.Delete, false); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if n := e.vmsNamed("worker-0"); n != 0 {
		t.Errorf("%d VMs after Delete, want 0", n)
	}
}

// cluster is the simulated cluster that owns vspheretest.ResourcePool.
func (e *simEnv) cluster() *object.ClusterComputeResource {
	e.t.Helper()
	c, err := e.Finder.ClusterComputeResource(e.ctx, "DC0_C0")
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// editGroups applies a VM group change to the cluster.
func (e *simEnv) editGroups(change types.ClusterGroupSpec) {
	e.t.Helper()
	e.Wait(e.cluster().Reconfigure(e.ctx, &types.ClusterConfigSpecEx{GroupSpec: []types.ClusterGroupSpec{change}}, true))
}

// CreateVMGroup adds a VM group (DRS) named name to the cluster, listing the named VMs.
func (e *simEnv) CreateVMGroup(name string, vms ...string) {
	e.t.Helper()
	refs := make([]types.ManagedObjectReference, 0, len(vms))
	for _, vm := range vms {
		refs = append(refs, e.VM(vm).Reference())
	}
	e.editGroups(types.ClusterGroupSpec{
		ArrayUpdateSpec: types.ArrayUpdateSpec{Operation: types.ArrayUpdateOperationAdd},
		Info:            &types.ClusterVmGroup{ClusterGroupInfo: types.ClusterGroupInfo{Name: name}, Vm: refs},
	})
}

// VMGroupMembers returns the names of the VMs that the cluster's VM group name lists, in its order (a VM
// listed twice appears twice), and whether the group exists.
func (e *simEnv) VMGroupMembers(name string) ([]string, bool) {
	e.t.Helper()
	cfg, err := e.cluster().Configuration(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	i := slices.IndexFunc(cfg.Group, func(g types.BaseClusterGroupInfo) bool {
		vg, ok := g.(*types.ClusterVmGroup)
		return ok && vg.Name == name
	})
	if i < 0 {
		return nil, false
	}
	names := []string{}
	for _, ref := range cfg.Group[i].(*types.ClusterVmGroup).Vm {
		var m mo.VirtualMachine
		if err := e.Client.PropertyCollector().RetrieveOne(e.ctx, ref, []string{"name"}, &m); err != nil {
			names = append(names, ref.Value) // a VM that is gone shows as its reference
			continue
		}
		names = append(names, m.Name)
	}
	return names, true
}

// RemoveVMGroup removes the cluster's VM group name, as an administrator would.
func (e *simEnv) RemoveVMGroup(name string) {
	e.t.Helper()
	e.editGroups(types.ClusterGroupSpec{ArrayUpdateSpec: types.ArrayUpdateSpec{Operation: types.ArrayUpdateOperationRemove, RemoveKey: name}})
}
