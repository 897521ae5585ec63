package vspheretest

import (
	"sync"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	"k8s.io/utils/ptr"
)

// KeepCloneConfig makes vcsim apply a clone spec's configuration (instance UUID, extraConfig, annotation,
// CPUs, memory) to the clone before the clone task succeeds, as vCenter does. vcsim v0.54.0 copies the spec
// into a value it then drops (CloneVMTask's `dst, src := config, ...`), so without this every clone would
// lack the provider's ownership mark. hack/tools/govmomi/vcsim does the same for the local vSphere.
func KeepCloneConfig(r *simulator.Registry) {
	k := &cloneConfigs{pending: map[cloneKey]types.VirtualMachineConfigSpec{}}
	prev := r.Handler
	r.Handler = func(ctx *simulator.Context, m *simulator.Method) (mo.Reference, types.BaseMethodFault) {
		if req, ok := m.Body.(*types.CloneVM_Task); ok && req.Spec.Config != nil {
			numberNICs(req.Spec.Config.DeviceChange)
			spec := *req.Spec.Config
			spec.DeviceChange = nil // vcsim applies the device changes itself
			k.mu.Lock()
			k.pending[cloneKey{req.Folder, req.Name}] = spec
			k.mu.Unlock()
		}
		if prev != nil {
			return prev(ctx, m)
		}
		return nil, nil
	}
	r.AddHandler(k)
}

// numberNICs gives each added NIC that has none a unit number (7 on, PCI's offset), as vCenter does itself.
// vcsim v0.54.0 would otherwise attach it to the clone's PCI controller, which every VM of its default
// devices shares (esx.VirtualDevice): a clone appending to it raced with another VM's power-on copying it
// (seen under -race with concurrent Creates). The provider never sends a unit number.
func numberNICs(changes []types.BaseVirtualDeviceConfigSpec) {
	unit := int32(7)
	for _, c := range changes {
		spec := c.GetVirtualDeviceConfigSpec()
		if _, nic := spec.Device.(types.BaseVirtualEthernetCard); !nic || spec.Operation != types.VirtualDeviceConfigSpecOperationAdd {
			continue
		}
		if d := spec.Device.GetVirtualDevice(); d.UnitNumber == nil {
			d.UnitNumber = ptr.To(unit)
		}
		unit++
	}
}

type cloneKey struct {
	folder types.ManagedObjectReference
	name   string
}

// cloneConfigs holds the configuration of each clone in flight, by destination folder and name.
type cloneConfigs struct {
	mu      sync.Mutex
	pending map[cloneKey]types.VirtualMachineConfigSpec
}

func (k *cloneConfigs) Reference() types.ManagedObjectReference {
	return types.ManagedObjectReference{Type: "vspheretestCloneConfigs", Value: "keep-clone-config"}
}

func (k *cloneConfigs) PutObject(*simulator.Context, mo.Reference) {}

func (k *cloneConfigs) RemoveObject(*simulator.Context, types.ManagedObjectReference) {}

// UpdateObject reconfigures a clone when its task is about to be reported successful: the update runs
// under the task's lock, so no client sees the task succeed before the clone has its configuration.
func (k *cloneConfigs) UpdateObject(ctx *simulator.Context, obj mo.Reference, changes []types.PropertyChange) {
	task, ok := obj.(*mo.Task)
	if !ok || task.Info.State != types.TaskInfoStateSuccess || !stateChanged(changes) {
		return
	}
	ref, ok := task.Info.Result.(types.ManagedObjectReference)
	if !ok || ref.Type != "VirtualMachine" {
		return
	}
	vm, ok := ctx.Map.Get(ref).(*simulator.VirtualMachine)
	if !ok || vm.Parent == nil {
		return
	}
	key := cloneKey{*vm.Parent, vm.Name}
	k.mu.Lock()
	spec, ok := k.pending[key]
	delete(k.pending, key)
	k.mu.Unlock()
	if !ok {
		return
	}
	body, ok := vm.ReconfigVMTask(ctx, &types.ReconfigVM_Task{This: ref, Spec: spec}).(*methods.ReconfigVM_TaskBody)
	if !ok {
		return
	}
	if t, ok := ctx.Map.Get(body.Res.Returnval).(*simulator.Task); ok {
		t.Wait()
	}
}

func stateChanged(changes []types.PropertyChange) bool {
	for _, c := range changes {
		if c.Name == "info.state" {
			return true
		}
	}
	return false
}
