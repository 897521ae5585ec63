package vsphere

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"
	"k8s.io/utils/ptr"

	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// templateDevices is a template with a SCSI controller (its own unit 7) holding the OS disk at unit 0 and
// something else at unit 1, and an IDE controller.
func templateDevices() object.VirtualDeviceList {
	scsi := &types.VirtualLsiLogicController{VirtualSCSIController: types.VirtualSCSIController{
		VirtualController: types.VirtualController{VirtualDevice: types.VirtualDevice{Key: 1000}}, ScsiCtlrUnitNumber: 7}}
	ide := &types.VirtualIDEController{VirtualController: types.VirtualController{VirtualDevice: types.VirtualDevice{Key: 200}}}
	disk := &types.VirtualDisk{VirtualDevice: types.VirtualDevice{Key: 2000, ControllerKey: 1000, UnitNumber: ptr.To[int32](0)}, CapacityInKB: 10 << 20}
	cdrom := &types.VirtualCdrom{VirtualDevice: types.VirtualDevice{Key: 3000, ControllerKey: 1000, UnitNumber: ptr.To[int32](1)}}
	return object.VirtualDeviceList{ide, scsi, disk, cdrom}
}

// TestDataDiskChanges: each data disk is a new persistent disk file on the OS disk's controller, at its next
// free units (7 is the SCSI controller's own), with the size in KiB and OpenShift's backing per provisioning
// mode, and keys unique and negative. Breaks if: a disk were put on unit 7 or a taken unit, on another
// controller, or Thick/EagerlyZeroed set the wrong flags.
func TestDataDiskChanges(t *testing.T) {
	spec := &machinev1beta1.VSphereMachineProviderSpec{Template: "rhcos", DataDisks: []machinev1beta1.VSphereDisk{
		{Name: "thin", SizeGiB: 1, ProvisioningMode: machinev1beta1.ProvisioningModeThin},
		{Name: "thick", SizeGiB: 2, ProvisioningMode: machinev1beta1.ProvisioningModeThick},
		{Name: "zeroed", SizeGiB: 3, ProvisioningMode: machinev1beta1.ProvisioningModeEagerlyZeroed},
		{Name: "default", SizeGiB: 4},
		{Name: "d4", SizeGiB: 1}, {Name: "d5", SizeGiB: 1}, {Name: "d6", SizeGiB: 1},
	}}
	changes, err := dataDiskChanges(spec, templateDevices())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	keys := map[int32]bool{}
	for _, c := range changes {
		s := c.GetVirtualDeviceConfigSpec()
		d := s.Device.(*types.VirtualDisk)
		b := d.Backing.(*types.VirtualDiskFlatVer2BackingInfo)
		if s.Operation != types.VirtualDeviceConfigSpecOperationAdd || s.FileOperation != types.VirtualDeviceConfigSpecFileOperationCreate ||
			b.DiskMode != string(types.VirtualDiskModePersistent) || b.FileName != "" || d.Key >= 0 || keys[d.Key] {
			t.Errorf("change %+v, disk %+v, backing %+v: want a new persistent disk file with a fresh negative key", s, d, b)
		}
		keys[d.Key] = true
		got = append(got, fmt.Sprintf("ctl=%d unit=%d kib=%d thin=%v eager=%v", d.ControllerKey, *d.UnitNumber, d.CapacityInKB,
			ptrString(b.ThinProvisioned), ptrString(b.EagerlyScrub)))
	}
	want := []string{
		"ctl=1000 unit=2 kib=1048576 thin=true eager=nil",
		"ctl=1000 unit=3 kib=2097152 thin=false eager=nil",
		"ctl=1000 unit=4 kib=3145728 thin=false eager=true",
		"ctl=1000 unit=5 kib=4194304 thin=nil eager=nil",
		"ctl=1000 unit=6 kib=1048576 thin=nil eager=nil",
		"ctl=1000 unit=8 kib=1048576 thin=nil eager=nil",
		"ctl=1000 unit=9 kib=1048576 thin=nil eager=nil",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("data disks:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestDataDiskChangesErrors: OpenShift's errors when the template has no disk or the controller is full.
func TestDataDiskChangesErrors(t *testing.T) {
	spec := &machinev1beta1.VSphereMachineProviderSpec{Template: "rhcos", DataDisks: []machinev1beta1.VSphereDisk{{Name: "d", SizeGiB: 1}}}
	noDisk := object.VirtualDeviceList{templateDevices()[1]}
	if _, err := dataDiskChanges(spec, noDisk); err == nil || !strings.Contains(err.Error(), "invalid disk count: 0") {
		t.Errorf("no template disk: %v", err)
	}
	spec.DataDisks = make([]machinev1beta1.VSphereDisk, maxUnitNumber-2) // 30 units, minus 7 and the OS disk's and the CD's
	for i := range spec.DataDisks {
		spec.DataDisks[i] = machinev1beta1.VSphereDisk{Name: fmt.Sprint("d", i), SizeGiB: 1}
	}
	if _, err := dataDiskChanges(spec, templateDevices()); err == nil || !strings.Contains(err.Error(), "all unit numbers are already in-use") {
		t.Errorf("a full controller: %v", err)
	}
	if _, err := dataDiskChanges(spec, object.VirtualDeviceList{}); err == nil {
		t.Error("no devices at all: no error")
	}
	if c, err := dataDiskChanges(&machinev1beta1.VSphereMachineProviderSpec{}, noDisk); err != nil || c != nil {
		t.Errorf("no data disks: %v, %v; want nothing", c, err)
	}
}

func ptrString(b *bool) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprint(*b)
}

// A Machine with two data disks gets a VM with the template's disk (grown to diskGiB) plus both, on the OS
// disk's controller, with their sizes and provisioning modes, in files vCenter names after the VM; Delete then
// destroys it (data disks are not "additional attached disks"). Breaks if: data disks were left out of the
// clone's device changes, or Delete counted them as volumes to wait for.
func TestCreateWithDataDisks(t *testing.T) {
	e := newSimEnv(t)
	m := e.newMachine("worker-0", func(s *machinev1beta1.VSphereMachineProviderSpec) {
		s.DataDisks = []machinev1beta1.VSphereDisk{
			{Name: "images", SizeGiB: 30, ProvisioningMode: machinev1beta1.ProvisioningModeThin},
			{Name: "logs", SizeGiB: 5, ProvisioningMode: machinev1beta1.ProvisioningModeEagerlyZeroed},
		}
	})
	if err := e.until(m, e.a.Create, true); err != nil {
		t.Fatal(err)
	}
	devices := object.VirtualDeviceList(e.props(e.vm("worker-0"), "config.hardware.device").Config.Hardware.Device)
	disks := devices.SelectByType((*types.VirtualDisk)(nil))
	if len(disks) != 3 {
		t.Fatalf("%d disks, want the template's and 2 data disks", len(disks))
	}
	var got []string
	for _, d := range disks {
		vd := d.(*types.VirtualDisk)
		b := vd.Backing.(*types.VirtualDiskFlatVer2BackingInfo)
		got = append(got, fmt.Sprintf("gib=%d thin=%s eager=%s same-controller=%v file=%s",
			vd.CapacityInKB>>20, ptrString(b.ThinProvisioned), ptrString(b.EagerlyScrub), vd.ControllerKey == disks[0].GetVirtualDevice().ControllerKey, b.FileName))
	}
	t.Logf("disks:\n%s", strings.Join(got, "\n"))
	// vcsim reports eagerlyScrub=false on a thin disk where the spec left it unset.
	for i, want := range []string{"gib=20 ", "gib=30 thin=true ", "gib=5 thin=false eager=true same-controller=true"} {
		if !strings.HasPrefix(got[i], want) || i > 0 && !strings.Contains(got[i], "same-controller=true") {
			t.Errorf("disk %d: %s, want %s...", i, got[i], want)
		}
	}
	for _, d := range disks[1:] {
		if f := d.GetVirtualDevice().Backing.(*types.VirtualDiskFlatVer2BackingInfo).FileName; !strings.Contains(f, "/worker-0") {
			t.Errorf("data disk file %q is not named after the VM (Delete's test for the VM's own disks)", f)
		}
	}

	if err := e.until(m, e.a.Delete, false); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if n := e.vmsNamed("worker-0"); n != 0 {
		t.Errorf("%d VMs after Delete, want 0", n)
	}
}

// TestForeignDisks: the disks Delete detaches when draining was skipped are those whose files are not named
// after the VM, as OpenShift's filter, and never the first. Breaks if: a data disk (worker-0_1.vmdk) or the OS
// disk were detached (and then survive the VM as garbage), or a volume named otherwise were destroyed with it.
func TestForeignDisks(t *testing.T) {
	disk := func(key int32, file string) *types.VirtualDisk {
		return &types.VirtualDisk{VirtualDevice: types.VirtualDevice{Key: key, Backing: &types.VirtualDiskFlatVer2BackingInfo{
			VirtualDeviceFileBackingInfo: types.VirtualDeviceFileBackingInfo{FileName: file}}}}
	}
	devices := object.VirtualDeviceList{
		disk(1, "[ds] rhcos/disk1.vmdk"), // the OS disk, whatever its file
		disk(2, "[ds] worker-0/worker-0_1.vmdk"),
		disk(3, "[ds] worker-0/worker-0.vmdk"),
		disk(4, "[ds] kubevols/pvc-1234.vmdk"),
		disk(5, "[ds] worker-0/worker-0-other.vmdk"),
		disk(6, "[ds] worker-01/worker-01_1.vmdk"),
		&types.VirtualCdrom{VirtualDevice: types.VirtualDevice{Key: 7}},
	}
	var got []int32
	for _, d := range foreignDisks("worker-0", devices) {
		got = append(got, d.GetVirtualDevice().Key)
	}
	if want := []int32{4, 5, 6}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("foreign disks %v, want %v", got, want)
	}
}

// With draining skipped (machine.openshift.io/exclude-node-draining), Delete detaches a disk attached to the VM
// after its creation (a volume whose file is not named after the VM), and then destroys the VM
// with its own disks; without the annotation it waits for the detach instead. Breaks if: Delete destroyed the VM
// with the volume attached, or detached a data disk.
func TestDeleteDetachesVolumesWhenDrainSkipped(t *testing.T) {
	e := newSimEnv(t)
	m := e.newMachine("worker-0", func(s *machinev1beta1.VSphereMachineProviderSpec) {
		s.DataDisks = []machinev1beta1.VSphereDisk{{Name: "data", SizeGiB: 1}}
	})
	if err := e.until(m, e.a.Create, true); err != nil {
		t.Fatal(err)
	}
	vm := e.vm("worker-0")
	devices := object.VirtualDeviceList(e.props(vm, "config.hardware.device").Config.Hardware.Device)
	osDisk := devices.SelectByType((*types.VirtualDisk)(nil))[0].GetVirtualDevice()
	e.wait(vm.Reconfigure(e.ctx, types.VirtualMachineConfigSpec{DeviceChange: []types.BaseVirtualDeviceConfigSpec{&types.VirtualDeviceConfigSpec{
		Operation: types.VirtualDeviceConfigSpecOperationAdd, FileOperation: types.VirtualDeviceConfigSpecFileOperationCreate,
		Device: &types.VirtualDisk{CapacityInKB: 1 << 20, VirtualDevice: types.VirtualDevice{Key: -1, ControllerKey: osDisk.ControllerKey, UnitNumber: new(int32(9)),
			Backing: &types.VirtualDiskFlatVer2BackingInfo{DiskMode: string(types.VirtualDiskModePersistent),
				VirtualDeviceFileBackingInfo: types.VirtualDeviceFileBackingInfo{FileName: "[LocalDS_0] worker-0/pvc-1.vmdk"}}}},
	}}}))
	disks := func() []string {
		var out []string
		p := e.props(vm, "config.hardware.device")
		for _, d := range object.VirtualDeviceList(p.Config.Hardware.Device).SelectByType((*types.VirtualDisk)(nil)) {
			out = append(out, d.GetVirtualDevice().Backing.(*types.VirtualDiskFlatVer2BackingInfo).FileName)
		}
		return out
	}
	if n := len(disks()); n != 3 {
		t.Fatalf("disks %v before Delete, want the OS disk, the data disk and the volume", disks())
	}
	err := e.until(m, e.a.Delete, false)
	mustContain(t, err, "additional attached disks detected, block vm destruction and wait for disks to be detached")

	m.Annotations = map[string]string{excludeNodeDrainingAnnotation: ""}
	detached := false
	for range 20 {
		err := call(m, e.a.Delete, false)
		if err == nil {
			break
		}
		if requeued(err) && strings.Contains(err.Error(), "disks were detached") {
			poll.Eventually(t, 5*time.Second, "the volume detached, the VM's own disks kept", poll.Check(func() error {
				if got := disks(); len(got) != 2 || slices.ContainsFunc(got, func(f string) bool { return strings.Contains(f, "pvc-1") }) {
					return fmt.Errorf("disks %v", got)
				}
				return nil
			}))
			detached = true
		} else if !requeued(err) {
			t.Fatalf("Delete: %v", err)
		}
	}
	if !detached {
		t.Error("Delete never detached the volume")
	}
	if n := e.vmsNamed("worker-0"); n != 0 {
		t.Errorf("%d VMs after Delete, want 0", n)
	}
}
