package vsphere

import (
	"fmt"
	"regexp"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"
)

// maxUnitNumber bounds the unit numbers of a disk controller (OpenShift's limit: 30, the most any has).
const maxUnitNumber = 30

// dataDiskChanges adds one new disk per providerSpec.dataDisks entry, as OpenShift does: on the controller of
// the template's first disk, at that controller's next free unit numbers, persistent, with the entry's size and
// provisioning mode. vCenter names the files after the VM (<name>_1.vmdk, ...), which is how Delete tells them
// from volumes attached later.
func dataDiskChanges(spec *machinev1beta1.VSphereMachineProviderSpec, devices object.VirtualDeviceList) ([]types.BaseVirtualDeviceConfigSpec, error) {
	if len(spec.DataDisks) == 0 {
		return nil, nil
	}
	disks := devices.SelectByType((*types.VirtualDisk)(nil))
	if len(disks) == 0 {
		return nil, fmt.Errorf("error getting additional disk specs: template %q has no disk to put data disks beside: invalid disk count: 0", spec.Template)
	}
	primary := disks[0].GetVirtualDevice()
	controller, ok := devices.FindByKey(primary.ControllerKey).(types.BaseVirtualController)
	if !ok {
		return nil, fmt.Errorf("error getting additional disk specs: unable to find controller with key=%v", primary.ControllerKey)
	}
	units := freeUnits(controller, devices)
	key := devices.NewKey() // negative, below every key in use: vCenter assigns the real ones
	var changes []types.BaseVirtualDeviceConfigSpec
	for i, d := range spec.DataDisks {
		if i >= len(units) {
			return nil, fmt.Errorf("error getting additional disk specs: data disk %q: all unit numbers are already in-use", d.Name)
		}
		backing := &types.VirtualDiskFlatVer2BackingInfo{DiskMode: string(types.VirtualDiskModePersistent)}
		switch d.ProvisioningMode {
		case machinev1beta1.ProvisioningModeThin:
			backing.ThinProvisioned = new(true)
		case machinev1beta1.ProvisioningModeThick:
			backing.ThinProvisioned = new(false)
		case machinev1beta1.ProvisioningModeEagerlyZeroed:
			backing.ThinProvisioned, backing.EagerlyScrub = new(false), new(true)
		} // omitted: the datastore's default storage policy decides
		changes = append(changes, &types.VirtualDeviceConfigSpec{
			Operation:     types.VirtualDeviceConfigSpecOperationAdd,
			FileOperation: types.VirtualDeviceConfigSpecFileOperationCreate,
			Device: &types.VirtualDisk{
				VirtualDevice: types.VirtualDevice{
					Key: key - int32(i), Backing: backing,
					ControllerKey: controller.GetVirtualController().Key, UnitNumber: new(units[i]),
				},
				CapacityInKB: int64(d.SizeGiB) * 1024 * 1024,
			},
		})
	}
	return changes, nil
}

// freeUnits lists the controller's unit numbers no device (nor a SCSI controller itself) occupies, in order.
func freeUnits(controller types.BaseVirtualController, devices object.VirtualDeviceList) []int32 {
	used := make([]bool, maxUnitNumber)
	if scsi, ok := controller.(types.BaseVirtualSCSIController); ok {
		if u := scsi.GetVirtualSCSIController().ScsiCtlrUnitNumber; u >= 0 && u < maxUnitNumber {
			used[u] = true
		}
	}
	key := controller.GetVirtualController().Key
	for _, dev := range devices {
		if d := dev.GetVirtualDevice(); d.ControllerKey == key && d.UnitNumber != nil && *d.UnitNumber >= 0 && *d.UnitNumber < maxUnitNumber {
			used[*d.UnitNumber] = true
		}
	}
	var free []int32
	for u, taken := range used {
		if !taken {
			free = append(free, int32(u))
		}
	}
	return free
}

// foreignDisks are the VM's disks Delete detaches when draining was skipped, as OpenShift does: every disk
// whose file is not named after the VM ("<dir>/<name>.vmdk", "<dir>/<name>_<n>.vmdk": the clone's and the data
// disks), so volumes attached later survive the destroy. The VM's first disk is never one (vcsim keeps the
// template's file name for it).
func foreignDisks(name string, devices object.VirtualDeviceList) []types.BaseVirtualDevice {
	own := regexp.MustCompile(".*/" + regexp.QuoteMeta(name) + `(_\d*)?\.vmdk`)
	var out []types.BaseVirtualDevice
	for i, d := range devices.SelectByType((*types.VirtualDisk)(nil)) {
		b, ok := d.GetVirtualDevice().Backing.(types.BaseVirtualDeviceFileBackingInfo)
		if i == 0 || ok && own.MatchString(b.GetVirtualDeviceFileBackingInfo().FileName) {
			continue
		}
		out = append(out, d)
	}
	return out
}
