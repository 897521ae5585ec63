package vsphere

import (
	"encoding/base64"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

const (
	on  = types.VirtualMachinePowerStatePoweredOn
	off = types.VirtualMachinePowerStatePoweredOff
)

// TestDecideCreate: Create's next step. Breaks if: a foreign VM (found by name, no mark of this Machine) were
// ever configured, joined to a group or powered on (its rows then give another step).
func TestDecideCreate(t *testing.T) {
	ours := func(p types.VirtualMachinePowerState) vmState {
		return vmState{found: true, owner: ownerMachine, power: p}
	}
	// A foreign VM of the Machine's name (the installer's, a user's), under a Machine without providerID.
	foreign := func(p types.VirtualMachinePowerState) vmState { return vmState{found: true, adoptable: true, power: p} }
	marked := func(p types.VirtualMachinePowerState) vmState {
		return vmState{found: true, owner: ownerMarked, power: p}
	}
	grouped := func(p types.VirtualMachinePowerState, g groupMembership) vmState {
		return vmState{found: true, owner: ownerMachine, power: p, group: g}
	}
	cases := []struct {
		name string
		task taskState
		vm   vmState
		want createStep
	}{
		{"fresh Machine clones", taskNone, vmState{}, createClone},
		{"clone task running waits", taskRunning, vmState{}, createWait},
		{"running task wins over a found VM", taskRunning, ours(off), createWait},
		{"cloned VM is powered on", taskSucceeded, ours(off), createPowerOn},
		{"retry after lost status finds the VM", taskNone, ours(off), createPowerOn},
		{"powered-on VM is done", taskSucceeded, ours(on), createDone},
		{"failed clone without VM is reported", taskFailed, vmState{}, createReportTask},
		{"failed power-on is reported, then retried", taskFailed, ours(off), createReportTask},
		{"failed configure is reported, then retried", taskFailed, marked(off), createReportTask},
		{"marked clone without the Machine's config is configured", taskSucceeded, marked(off), createConfigure},
		{"marked clone that runs is done", taskNone, marked(on), createDone},
		{"a running foreign VM is adopted, never changed", taskNone, foreign(on), createAdopt},
		{"a stopped foreign VM is a conflict, never configured", taskNone, foreign(off), createConflict},
		{"a stopped foreign VM after our duplicate clone failed", taskNone, foreign(off), createConflict},
		{"a suspended foreign VM is a conflict, never powered on", taskNone, foreign(types.VirtualMachinePowerStateSuspended), createConflict},
		{"a stopped foreign VM the Machine adopted earlier", taskNone, vmState{found: true, adopted: true, power: off}, createAdopt},
		{"a running foreign VM under a Machine with another providerID", taskNone, vmState{found: true, power: on}, createConflict},
		{"a stopped foreign VM in a VM group is never joined", taskNone, vmState{found: true, adoptable: true, power: off, group: groupOutside}, createConflict},
		{"expired task, no VM clones again", taskGone, vmState{}, createClone},
		{"cloned VM outside its VM group joins it", taskSucceeded, grouped(off, groupOutside), createJoinGroup},
		{"retry after lost status joins the group", taskNone, grouped(off, groupOutside), createJoinGroup},
		{"VM in its VM group is powered on", taskSucceeded, grouped(off, groupInside), createPowerOn},
		{"group edit running waits", taskRunning, grouped(off, groupOutside), createWait},
		{"failed group edit is reported, then retried", taskFailed, grouped(off, groupOutside), createReportTask},
		{"powered-on VM is done, groups are joined before power-on only", taskNone, grouped(on, groupOutside), createDone},
		{"marked clone is configured before it joins", taskSucceeded, vmState{found: true, owner: ownerMarked, power: off, group: groupOutside}, createConfigure},
	}
	for _, tc := range cases {
		if got := decideCreate(tc.task, tc.vm); got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestIgnoreFailedClone(t *testing.T) {
	found := vmState{found: true, power: off}
	cases := []struct {
		name string
		task taskState
		desc string
		vm   vmState
		want taskState
	}{
		{"duplicate clone while the first clone's VM exists", taskFailed, "VirtualMachine.clone", found, taskNone},
		{"vcsim's clone description", taskFailed, "VirtualMachine.cloneVm", found, taskNone},
		{"failed clone and no VM", taskFailed, "VirtualMachine.clone", vmState{}, taskFailed},
		{"failed power-on", taskFailed, "Datacenter.powerOnMultiVM", found, taskFailed},
		{"successful clone", taskSucceeded, "VirtualMachine.clone", found, taskSucceeded},
	}
	for _, tc := range cases {
		if got := ignoreFailedClone(tc.task, tc.desc, tc.vm); got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestDecideDelete: Delete's next step. Breaks if: a foreign VM the Machine never adopted were powered off or
// destroyed, or an adopted one were not.
func TestDecideDelete(t *testing.T) {
	vm := func(p types.VirtualMachinePowerState) vmState {
		return vmState{found: true, owner: ownerMachine, power: p}
	}
	cases := []struct {
		name string
		d    deletion
		want deleteStep
	}{
		{"no VM is success", deletion{}, deleteGone},
		{"clone still running waits for its VM", deletion{cloneRunning: true}, deleteWait},
		{"powered on: power off", deletion{vm: vm(on)}, deletePowerOff},
		{"suspended: power off", deletion{vm: vm(types.VirtualMachinePowerStateSuspended)}, deletePowerOff},
		{"a task on the VM runs", deletion{vm: vm(on), vmBusy: true}, deleteWait},
		{"node volumes attached", deletion{vm: vm(off), nodeVolumes: true}, deleteWaitVolumes},
		{"drain skipped ignores volumes", deletion{vm: vm(off), nodeVolumes: true, drainSkipped: true}, deleteDestroy},
		{"foreign disks block", deletion{vm: vm(off), extraDisks: true}, deleteWaitDisks},
		{"foreign disks, drain skipped: detach them", deletion{vm: vm(off), extraDisks: true, drainSkipped: true, detachable: true}, deleteDetachDisks},
		{"drain skipped, extra disks all named after the VM: wait", deletion{vm: vm(off), extraDisks: true, drainSkipped: true}, deleteWaitDisks},
		{"drain skipped, no extra disks: nothing to detach", deletion{vm: vm(off), drainSkipped: true, detachable: true}, deleteDestroy},
		{"drain skipped, still powered on: power off first", deletion{vm: vm(on), extraDisks: true, drainSkipped: true, detachable: true}, deletePowerOff},
		{"powered off: destroy", deletion{vm: vm(off)}, deleteDestroy},
		{"in its VM group: leave it first", deletion{vm: vmState{found: true, owner: ownerMachine, power: off, group: groupInside}}, deleteLeaveGroup},
		{"out of its VM group: destroy", deletion{vm: vmState{found: true, owner: ownerMachine, power: off, group: groupOutside}}, deleteDestroy},
		{"in its VM group and powered on: power off first", deletion{vm: vmState{found: true, owner: ownerMachine, power: on, group: groupInside}}, deletePowerOff},
		{"in its VM group with foreign disks: wait for them first", deletion{vm: vmState{found: true, owner: ownerMachine, power: off, group: groupInside}, extraDisks: true}, deleteWaitDisks},
		{"an adopted foreign VM is destroyed, as OpenShift", deletion{vm: vmState{found: true, adopted: true, power: off}}, deleteDestroy},
		{"an adopted running foreign VM is powered off first", deletion{vm: vmState{found: true, adopted: true, power: on}}, deletePowerOff},
		{"a foreign VM never adopted is left", deletion{vm: vmState{found: true, adoptable: true, power: on}}, deleteGone},
		{"a foreign VM of another providerID is left", deletion{vm: vmState{found: true, power: off}}, deleteGone},
		{"a marked clone is ours to destroy", deletion{vm: vmState{found: true, owner: ownerMarked, power: off}}, deleteDestroy},
	}
	for _, tc := range cases {
		if got := decideDelete(tc.d); got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestExistsAnswer. Breaks if: a stopped foreign VM counted for a new Machine (no conflict would be reported),
// or an adopted one stopped for maintenance did not (the Machine would go Failed).
func TestExistsAnswer(t *testing.T) {
	cases := []struct {
		name        string
		vm          vmState
		provisioned bool
		want        bool
	}{
		{"no VM", vmState{}, false, false},
		{"no VM on a provisioned Machine", vmState{}, true, false},
		{"powered on", vmState{found: true, owner: ownerMachine, power: on}, false, true},
		{"cloned, not yet powered on: Create again", vmState{found: true, owner: ownerMachine, power: off}, false, false},
		{"provisioned and stopped still exists", vmState{found: true, owner: ownerMachine, power: off}, true, true},
		{"foreign VM under a Machine with another providerID", vmState{found: true, power: on}, true, false},
		{"running foreign VM, Machine without providerID: adopt", vmState{found: true, adoptable: true, power: on}, false, true},
		{"stopped foreign VM, Machine without providerID: Create reports it", vmState{found: true, adoptable: true, power: off}, false, false},
		{"stopped foreign VM the Machine adopted (a master in maintenance)", vmState{found: true, adopted: true, power: off}, true, true},
		{"marked clone never powered on: Create again", vmState{found: true, owner: ownerMarked, power: off}, false, false},
	}
	for _, tc := range cases {
		if got := existsAnswer(tc.vm, tc.provisioned); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func hostGroupZone(name, zone, vmGroup string) configv1.VSpherePlatformFailureDomainSpec {
	return configv1.VSpherePlatformFailureDomainSpec{Name: name, Region: "r", Zone: zone, Server: "vc1",
		ZoneAffinity: &configv1.VSphereFailureDomainZoneAffinity{Type: configv1.HostGroupFailureDomainZone,
			HostGroup: &configv1.VSphereFailureDomainHostGroup{VMGroup: vmGroup, HostGroup: "hg-" + zone, VMHostRule: "rule-" + zone}},
		Topology: configv1.VSpherePlatformTopology{Datacenter: "DC0", ComputeCluster: "/DC0/host/C3", Datastore: "/DC0/datastore/ds3", ResourcePool: "/DC0/host/C3/Resources"}}
}

func TestFailureDomainFor(t *testing.T) {
	fds := []configv1.VSpherePlatformFailureDomainSpec{
		{Name: "a", Region: "r", Zone: "za", Server: "vc1", Topology: configv1.VSpherePlatformTopology{Datacenter: "DC0", ComputeCluster: "/DC0/host/C1", Datastore: "/DC0/datastore/ds1"}},
		{Name: "b", Region: "r", Zone: "zb", Server: "vc1", Topology: configv1.VSpherePlatformTopology{Datacenter: "DC0", ComputeCluster: "/DC0/host/C2", Datastore: "/DC0/datastore/ds2", ResourcePool: "/DC0/host/C2/Resources/pool"}},
		// Host-group zones of one cluster C3 (VSphereHostVMGroupZonal): told apart by their VM group only.
		hostGroupZone("h1", "zh1", "vmg-1"),
		hostGroupZone("h2", "zh2", "vmg-2"),
	}
	cases := []struct {
		name string
		ws   machinev1beta1.Workspace
		want string
	}{
		{"pool in cluster C1", machinev1beta1.Workspace{Server: "vc1", Datacenter: "DC0", ResourcePool: "/DC0/host/C1/Resources"}, "za"},
		{"named pool of b", machinev1beta1.Workspace{Server: "vc1", Datacenter: "/DC0", ResourcePool: "/DC0/host/C2/Resources/pool"}, "zb"},
		{"no pool, datastore of b", machinev1beta1.Workspace{Server: "vc1", Datacenter: "DC0", Datastore: "ds2"}, "zb"},
		{"other server", machinev1beta1.Workspace{Server: "vc2", Datacenter: "DC0", ResourcePool: "/DC0/host/C1/Resources"}, ""},
		{"cluster name prefix is not a match", machinev1beta1.Workspace{Server: "vc1", Datacenter: "DC0", ResourcePool: "/DC0/host/C10/Resources"}, ""},
		// Breaks if: the VM group is not compared (the first zone of the cluster, zh1, is answered for vmg-2).
		{"host-group zone by its VM group", machinev1beta1.Workspace{Server: "vc1", Datacenter: "DC0", ResourcePool: "/DC0/host/C3/Resources", VMGroup: "vmg-2"}, "zh2"},
		{"no VM group in a host-group cluster: no zone", machinev1beta1.Workspace{Server: "vc1", Datacenter: "DC0", ResourcePool: "/DC0/host/C3/Resources"}, ""},
		{"a VM group no zone has", machinev1beta1.Workspace{Server: "vc1", Datacenter: "DC0", ResourcePool: "/DC0/host/C3/Resources", VMGroup: "other"}, ""},
		{"a VM group outside host-group zones", machinev1beta1.Workspace{Server: "vc1", Datacenter: "DC0", ResourcePool: "/DC0/host/C1/Resources", VMGroup: "vmg-1"}, ""},
	}
	for _, tc := range cases {
		got := ""
		if fd := failureDomainFor(&tc.ws, fds); fd != nil {
			got = fd.Zone
		}
		if got != tc.want {
			t.Errorf("%s: zone %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestIgnitionData(t *testing.T) {
	plain := `{"ignition":{"version":"3.2.0"}}`
	want := base64.StdEncoding.EncodeToString([]byte(plain))
	once := want
	twice := base64.StdEncoding.EncodeToString([]byte(once))
	for _, in := range []string{plain, once, twice, plain + "\n"} {
		if got := ignitionData([]byte(in)); got != want {
			t.Errorf("ignitionData(%q) = %q, want %q", in, got, want)
		}
	}
	if got := ignitionData(nil); got != "" {
		t.Errorf("no user data gave %q, want no ignition keys", got)
	}
}

func TestVMConfigCoresPerSocket(t *testing.T) {
	cases := []struct {
		cpus, cores int32
		want        int32
	}{{4, 2, 2}, {4, 0, 4}}
	for _, tc := range cases {
		c := vmConfig(&machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", UID: "uid"}}, &machinev1beta1.VSphereMachineProviderSpec{NumCPUs: tc.cpus, NumCoresPerSocket: tc.cores}, nil, "")
		if c.NumCoresPerSocket == nil || *c.NumCoresPerSocket != tc.want {
			t.Errorf("cpus %d cores %d: got %v, want %d", tc.cpus, tc.cores, c.NumCoresPerSocket, tc.want)
		}
		if c.InstanceUuid != "uid" {
			t.Errorf("instance UUID %q, want the Machine's UID", c.InstanceUuid)
		}
	}
}

// TestVMState: whose a found VM is, seen from the Machine. Breaks if: a VM found by name without this
// Machine's mark counted as ours, a mark of a Machine of the same name but another UID (or namespace) counted,
// or a foreign VM counted as adopted by a Machine whose providerID is another VM's.
func TestVMState(t *testing.T) {
	m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "worker-0", UID: "uid-1"}}
	adopting := m.DeepCopy()
	adopting.Spec.ProviderID = new("vsphere://bios-1")
	other := m.DeepCopy()
	other.Spec.ProviderID = new("vsphere://bios-2")
	vm := func(byUUID bool, instanceUUID, mark string) *machineVM {
		return &machineVM{byUUID: byUUID, owner: provider.ParseOwner(mark), mo: mo.VirtualMachine{
			Config: &types.VirtualMachineConfigInfo{Uuid: "BIOS-1", InstanceUuid: instanceUUID}}}
	}
	cases := []struct {
		name string
		vm   *machineVM
		m    *machinev1beta1.Machine
		want vmState
	}{
		{"none", nil, m, vmState{}},
		{"found by instance UUID", vm(true, "uid-1", ""), m, vmState{found: true, owner: ownerMachine, adoptable: true}},
		{"by name, instance UUID is the UID (OpenShift's clone)", vm(false, "uid-1", ""), m, vmState{found: true, owner: ownerMachine, adoptable: true}},
		{"by name with this Machine's mark", vm(false, "x", "ns/worker-0/uid-1"), m, vmState{found: true, owner: ownerMarked, adoptable: true}},
		{"by name, mark of an earlier Machine of the name", vm(false, "x", "ns/worker-0/uid-0"), m, vmState{found: true, adoptable: true}},
		{"by name, mark of another namespace's Machine", vm(false, "x", "ns2/worker-0/uid-1"), m, vmState{found: true, adoptable: true}},
		{"by name, no mark (the installer's)", vm(false, "x", ""), m, vmState{found: true, adoptable: true}},
		{"installer's VM the Machine adopted", vm(false, "x", ""), adopting, vmState{found: true, adopted: true}},
		{"installer's VM, Machine has another providerID", vm(false, "x", ""), other, vmState{found: true}},
	}
	for _, tc := range cases {
		if got := tc.vm.state(tc.m); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestOwnerMark: the clone spec carries the Machine's mark, and ownerOf reads it back. Breaks if: the mark
// were dropped from vmConfig or written under another key.
func TestOwnerMark(t *testing.T) {
	m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "worker-0", UID: "uid-1"}}
	c := vmConfig(m, &machinev1beta1.VSphereMachineProviderSpec{}, nil, "")
	got := ownerOf(&types.VirtualMachineConfigInfo{ExtraConfig: c.ExtraConfig})
	if !got.Owns(m) || got.String() != "ns/worker-0/uid-1" {
		t.Errorf("mark %q, want ns/worker-0/uid-1", got)
	}
	for _, bad := range []string{"", "ns/worker-0", "ns//uid", "a/b/c/d"} {
		if o := provider.ParseOwner(bad); !o.IsZero() {
			t.Errorf("ParseOwner(%q) = %+v, want no mark", bad, o)
		}
	}
}
