package vsphere

import (
	"fmt"
	"strings"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"
	"k8s.io/utils/ptr"
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
