package vsphere

import (
	"encoding/base64"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi/vim25/types"
)

const (
	on  = types.VirtualMachinePowerStatePoweredOn
	off = types.VirtualMachinePowerStatePoweredOff
)

func TestDecideCreate(t *testing.T) {
	ours := func(p types.VirtualMachinePowerState) vmState { return vmState{found: true, claimed: true, power: p} }
	byName := func(p types.VirtualMachinePowerState) vmState { return vmState{found: true, power: p} }
	grouped := func(p types.VirtualMachinePowerState, g groupMembership) vmState {
		return vmState{found: true, claimed: true, power: p, group: g}
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
		{"failed configure is reported, then retried", taskFailed, byName(off), createReportTask},
		{"clone without the Machine's config is configured", taskSucceeded, byName(off), createConfigure},
		{"a running VM of the name that is not ours", taskNone, byName(on), createConflict},
		{"expired task, no VM clones again", taskGone, vmState{}, createClone},
		{"cloned VM outside its VM group joins it", taskSucceeded, grouped(off, groupOutside), createJoinGroup},
		{"retry after lost status joins the group", taskNone, grouped(off, groupOutside), createJoinGroup},
		{"VM in its VM group is powered on", taskSucceeded, grouped(off, groupInside), createPowerOn},
		{"group edit running waits", taskRunning, grouped(off, groupOutside), createWait},
		{"failed group edit is reported, then retried", taskFailed, grouped(off, groupOutside), createReportTask},
		{"powered-on VM is done, groups are joined before power-on only", taskNone, grouped(on, groupOutside), createDone},
		{"unclaimed clone is configured before it joins", taskSucceeded, vmState{found: true, power: off, group: groupOutside}, createConfigure},
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

func TestDecideDelete(t *testing.T) {
	vm := func(p types.VirtualMachinePowerState) vmState { return vmState{found: true, claimed: true, power: p} }
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
		{"powered off: destroy", deletion{vm: vm(off)}, deleteDestroy},
		{"in its VM group: leave it first", deletion{vm: vmState{found: true, claimed: true, power: off, group: groupInside}}, deleteLeaveGroup},
		{"out of its VM group: destroy", deletion{vm: vmState{found: true, claimed: true, power: off, group: groupOutside}}, deleteDestroy},
		{"in its VM group and powered on: power off first", deletion{vm: vmState{found: true, claimed: true, power: on, group: groupInside}}, deletePowerOff},
		{"in its VM group with foreign disks: wait for them first", deletion{vm: vmState{found: true, claimed: true, power: off, group: groupInside}, extraDisks: true}, deleteWaitDisks},
	}
	for _, tc := range cases {
		if got := decideDelete(tc.d); got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestExistsAnswer(t *testing.T) {
	cases := []struct {
		name        string
		vm          vmState
		provisioned bool
		want        bool
	}{
		{"no VM", vmState{}, false, false},
		{"no VM on a provisioned Machine", vmState{}, true, false},
		{"powered on", vmState{found: true, claimed: true, power: on}, false, true},
		{"cloned, not yet powered on: Create again", vmState{found: true, claimed: true, power: off}, false, false},
		{"provisioned and stopped still exists", vmState{found: true, claimed: true, power: off}, true, true},
		{"unclaimed VM of the name", vmState{found: true, power: on}, true, false},
	}
	for _, tc := range cases {
		if got := existsAnswer(tc.vm, tc.provisioned); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFailureDomainFor(t *testing.T) {
	fds := []configv1.VSpherePlatformFailureDomainSpec{
		{Name: "a", Region: "r", Zone: "za", Server: "vc1", Topology: configv1.VSpherePlatformTopology{Datacenter: "DC0", ComputeCluster: "/DC0/host/C1", Datastore: "/DC0/datastore/ds1"}},
		{Name: "b", Region: "r", Zone: "zb", Server: "vc1", Topology: configv1.VSpherePlatformTopology{Datacenter: "DC0", ComputeCluster: "/DC0/host/C2", Datastore: "/DC0/datastore/ds2", ResourcePool: "/DC0/host/C2/Resources/pool"}},
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
		c := vmConfig("m", "uid", &machinev1beta1.VSphereMachineProviderSpec{NumCPUs: tc.cpus, NumCoresPerSocket: tc.cores}, nil)
		if c.NumCoresPerSocket == nil || *c.NumCoresPerSocket != tc.want {
			t.Errorf("cpus %d cores %d: got %v, want %d", tc.cpus, tc.cores, c.NumCoresPerSocket, tc.want)
		}
		if c.InstanceUuid != "uid" {
			t.Errorf("instance UUID %q, want the Machine's UID", c.InstanceUuid)
		}
	}
}
