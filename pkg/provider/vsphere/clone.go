package vsphere

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// guestinfo keys RHCOS reads (OpenShift's names).
const (
	guestInfoIgnitionData     = "guestinfo.ignition.config.data"
	guestInfoIgnitionEncoding = "guestinfo.ignition.config.data.encoding"
	guestInfoHostname         = "guestinfo.hostname"
	stealClock                = "stealclock.enable"
	ethernetCardType          = "vmxnet3"
	// minimumHWVersion is the oldest template hardware OpenShift clones.
	minimumHWVersion = 15
)

// deviceChanges grows the template's one disk to diskGiB for a full clone (only a full clone can), adds the
// data disks and replaces the template's NICs by one per network backing, in the devices' order (OpenShift's
// order of changes).
func deviceChanges(spec *machinev1beta1.VSphereMachineProviderSpec, devices object.VirtualDeviceList, linked bool,
	networks []types.BaseVirtualDeviceBackingInfo) ([]types.BaseVirtualDeviceConfigSpec, error) {
	var changes []types.BaseVirtualDeviceConfigSpec
	if !linked && spec.DiskGiB > 0 {
		disks := devices.SelectByType((*types.VirtualDisk)(nil))
		if len(disks) != 1 {
			return nil, provider.InvalidConfiguration("template %q has %d disks: a template with exactly one disk is needed to set diskGiB", spec.Template, len(disks))
		}
		disk := *disks[0].(*types.VirtualDisk)
		want := int64(spec.DiskGiB) * 1024 * 1024
		if disk.CapacityInKB > want {
			return nil, provider.InvalidConfiguration("diskGiB: can't resize template disk down, initial capacity is larger: %dKiB > %dKiB", disk.CapacityInKB, want)
		}
		disk.CapacityInKB = want
		changes = append(changes, &types.VirtualDeviceConfigSpec{Operation: types.VirtualDeviceConfigSpecOperationEdit, Device: &disk})
	}
	disks, err := dataDiskChanges(spec, devices)
	if err != nil {
		return nil, err
	}
	changes = append(changes, disks...)
	for _, nic := range devices.SelectByType((*types.VirtualEthernetCard)(nil)) {
		changes = append(changes, &types.VirtualDeviceConfigSpec{Operation: types.VirtualDeviceConfigSpecOperationRemove, Device: nic})
	}
	for i, backing := range networks {
		dev, err := object.EthernetCardTypes().CreateEthernetCard(ethernetCardType, backing)
		if err != nil {
			return nil, fmt.Errorf("creating a NIC for network %q: %w", spec.Network.Devices[i].NetworkName, err)
		}
		dev.GetVirtualDevice().Key = int32(-100 - i) // negative: vCenter assigns the real key
		changes = append(changes, &types.VirtualDeviceConfigSpec{Operation: types.VirtualDeviceConfigSpecOperationAdd, Device: dev})
	}
	return changes, nil
}

// vmConfig is the Machine's VM configuration without devices, with its ownership mark: the clone's, and what
// Create applies to a marked clone that did not get it. kargs (static network configuration) go to the guest
// when not empty.
func vmConfig(m *machinev1beta1.Machine, spec *machinev1beta1.VSphereMachineProviderSpec, userData []byte, kargs string) types.VirtualMachineConfigSpec {
	name := m.Name
	var cores *int32
	if c := cmp.Or(max(spec.NumCoresPerSocket, 0), spec.NumCPUs); c > 0 {
		cores = &c
	}
	extra := []types.BaseOptionValue{}
	if data := ignitionData(userData); data != "" {
		extra = append(extra,
			&types.OptionValue{Key: guestInfoIgnitionData, Value: data},
			&types.OptionValue{Key: guestInfoIgnitionEncoding, Value: "base64"})
	}
	extra = append(extra,
		&types.OptionValue{Key: guestInfoHostname, Value: name},
		&types.OptionValue{Key: stealClock, Value: "TRUE"})
	if kargs != "" {
		extra = append(extra, &types.OptionValue{Key: guestInfoNetworkKargs, Value: kargs})
	}
	extra = append(extra, &types.OptionValue{Key: OwnerKey, Value: provider.OwnerOf(m).String()})
	return types.VirtualMachineConfigSpec{
		Annotation:        name,
		InstanceUuid:      string(m.UID),
		Flags:             &types.VirtualMachineFlagInfo{DiskUuidEnabled: new(true)},
		ExtraConfig:       extra,
		NumCPUs:           spec.NumCPUs,
		NumCoresPerSocket: cores,
		MemoryMB:          spec.MemoryMiB,
	}
}

// ignitionData base64-encodes the user data after undoing any base64 layers it has (as OpenShift does).
func ignitionData(data []byte) string {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return ""
	}
	for range 5 {
		decoded, err := base64.StdEncoding.DecodeString(string(data))
		if err != nil || len(decoded) == 0 {
			break
		}
		data = bytes.TrimSpace(decoded)
	}
	return base64.StdEncoding.EncodeToString(data)
}

// startClone resolves the providerSpec's objects and starts the clone; it returns the task's reference value.
func startClone(ctx context.Context, s *session, m *machinev1beta1.Machine, spec *machinev1beta1.VSphereMachineProviderSpec, userData []byte, kargs string) (string, error) {
	var tpl *object.VirtualMachine // by instance UUID or by name/path
	if ref, err := object.NewSearchIndex(s.client.Client).FindByUuid(ctx, s.datacenter, spec.Template, true, new(true)); err == nil && ref != nil {
		tpl = object.NewVirtualMachine(s.client.Client, ref.Reference())
	} else if tpl, err = s.finder.VirtualMachine(ctx, spec.Template); err != nil {
		return "", lookupError("template", "template", spec.Template, err)
	}
	var tplMo mo.VirtualMachine
	if err := tpl.Properties(ctx, tpl.Reference(), []string{"config.version", "config.hardware.device", "snapshot"}, &tplMo); err != nil {
		return "", fmt.Errorf("reading template %q: %w", spec.Template, err)
	}
	if tplMo.Config == nil {
		return "", fmt.Errorf("template %q has no configuration yet; retrying", spec.Template)
	}
	if v, err := strconv.Atoi(strings.TrimPrefix(tplMo.Config.Version, "vmx-")); err != nil || v < minimumHWVersion {
		return "", provider.InvalidConfiguration("template %q: hardware lower than %d is not supported, clone stopped. Detected machine template version is %q. Please update the machine template", spec.Template, minimumHWVersion, tplMo.Config.Version)
	}
	var snapshot *types.ManagedObjectReference
	if spec.CloneMode == machinev1beta1.LinkedClone {
		// No snapshot to link to: a full clone, as in OpenShift.
		if spec.Snapshot != "" {
			snapshot, _ = tpl.FindSnapshot(ctx, spec.Snapshot)
		} else if tplMo.Snapshot != nil {
			snapshot = tplMo.Snapshot.CurrentSnapshot
		}
	}
	ws := spec.Workspace
	folder, err := s.finder.FolderOrDefault(ctx, ws.Folder)
	if err != nil {
		return "", lookupError("folder", "workspace.folder", ws.Folder, err)
	}
	ds, err := s.finder.DatastoreOrDefault(ctx, ws.Datastore)
	if err != nil {
		return "", lookupError("datastore", "workspace.datastore", ws.Datastore, err)
	}
	pool, err := s.finder.ResourcePoolOrDefault(ctx, ws.ResourcePool)
	if err != nil {
		return "", lookupError("resource pool", "workspace.resourcePool", ws.ResourcePool, err)
	}
	networks, err := networkBackings(ctx, s, pool, spec.Network.Devices)
	if err != nil {
		return "", err
	}
	config := vmConfig(m, spec, userData, kargs)
	if config.DeviceChange, err = deviceChanges(spec, tplMo.Config.Hardware.Device, snapshot != nil, networks); err != nil {
		return "", err
	}
	moveType := types.VirtualMachineRelocateDiskMoveOptionsMoveAllDiskBackingsAndConsolidate
	if snapshot != nil {
		moveType = types.VirtualMachineRelocateDiskMoveOptionsCreateNewChildDiskBacking
	}
	task, err := tpl.Clone(ctx, folder, m.Name, types.VirtualMachineCloneSpec{ // powered off: Create powers it on
		Config: &config,
		Location: types.VirtualMachineRelocateSpec{
			Folder: new(folder.Reference()), Datastore: new(ds.Reference()), Pool: new(pool.Reference()),
			DiskMoveType: string(moveType),
		},
		Snapshot: snapshot,
	})
	if err != nil {
		return "", fmt.Errorf("starting the clone of template %q: %w", spec.Template, err)
	}
	return task.Reference().Value, nil
}

// lookupError turns a failed lookup into OpenShift's InvalidConfiguration messages, naming the object.
func lookupError(what, field, value string, err error) error {
	var nf *find.NotFoundError
	var multi *find.MultipleFoundError
	var defMulti *find.DefaultMultipleFoundError
	var defNF *find.DefaultNotFoundError
	switch {
	case errors.As(err, &nf), errors.As(err, &defNF):
		return provider.InvalidConfiguration("%s: %s %q not found, specify valid value", field, what, value)
	case errors.As(err, &multi), errors.As(err, &defMulti):
		return provider.InvalidConfiguration("%s: multiple %ss found for %q, specify one in config", field, what, value)
	}
	return fmt.Errorf("unable to get %s %q: %w", what, value, err)
}

// networkBackings finds each device's network among those of the resource pool's cluster (names may repeat
// across clusters).
func networkBackings(ctx context.Context, s *session, pool *object.ResourcePool, devices []machinev1beta1.NetworkDeviceSpec) ([]types.BaseVirtualDeviceBackingInfo, error) {
	if len(devices) == 0 {
		return nil, nil
	}
	owner, err := pool.Owner(ctx)
	if err != nil {
		return nil, fmt.Errorf("finding the cluster of resource pool %s: %w", pool.InventoryPath, err)
	}
	var cr mo.ComputeResource
	if err := s.client.RetrieveOne(ctx, owner.Reference(), []string{"network"}, &cr); err != nil {
		return nil, fmt.Errorf("listing the networks of %s: %w", owner.Reference().Value, err)
	}
	var nets []mo.Network
	if len(cr.Network) > 0 {
		if err := s.client.Retrieve(ctx, cr.Network, []string{"name"}, &nets); err != nil {
			return nil, fmt.Errorf("reading network names: %w", err)
		}
	}
	out := make([]types.BaseVirtualDeviceBackingInfo, 0, len(devices))
	for i, d := range devices {
		j := slices.IndexFunc(nets, func(n mo.Network) bool { return n.Name == d.NetworkName })
		if j < 0 {
			return nil, provider.InvalidConfiguration("network.devices[%d].networkName: unable to get network for %q (not a network of the resource pool's cluster)", i, d.NetworkName)
		}
		ref, ok := object.NewReference(s.client.Client, nets[j].Self).(object.NetworkReference)
		if !ok {
			return nil, fmt.Errorf("network %q is a %s, not a network", d.NetworkName, nets[j].Self.Type)
		}
		backing, err := ref.EthernetCardBackingInfo(ctx)
		if err != nil {
			return nil, fmt.Errorf("backing for network %q: %w", d.NetworkName, err)
		}
		out = append(out, backing)
	}
	return out, nil
}
