package vspheretest

import (
	"slices"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// Cluster is the simulated cluster that owns ResourcePool.
const Cluster = "DC0_C0"

func (v *VCenter) cluster() *object.ClusterComputeResource {
	v.t.Helper()
	c, err := v.Finder.ClusterComputeResource(v.ctx, Cluster)
	if err != nil {
		v.t.Fatal(err)
	}
	return c
}

// CreateVMGroup adds a VM group (DRS) named name to Cluster, listing the named VMs.
func (v *VCenter) CreateVMGroup(name string, vms ...string) {
	v.t.Helper()
	refs := make([]types.ManagedObjectReference, 0, len(vms))
	for _, vm := range vms {
		refs = append(refs, v.VM(vm).Reference())
	}
	spec := &types.ClusterConfigSpecEx{GroupSpec: []types.ClusterGroupSpec{{
		ArrayUpdateSpec: types.ArrayUpdateSpec{Operation: types.ArrayUpdateOperationAdd},
		Info:            &types.ClusterVmGroup{ClusterGroupInfo: types.ClusterGroupInfo{Name: name}, Vm: refs},
	}}}
	v.Wait(v.cluster().Reconfigure(v.ctx, spec, true))
}

// VMGroupMembers returns the names of the VMs that Cluster's VM group name lists, in its order (a VM listed
// twice appears twice), and whether the group exists.
func (v *VCenter) VMGroupMembers(name string) ([]string, bool) {
	v.t.Helper()
	cfg, err := v.cluster().Configuration(v.ctx)
	if err != nil {
		v.t.Fatal(err)
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
		if err := v.Client.PropertyCollector().RetrieveOne(v.ctx, ref, []string{"name"}, &m); err != nil {
			names = append(names, ref.Value) // a VM that is gone shows as its reference
			continue
		}
		names = append(names, m.Name)
	}
	return names, true
}

// RemoveVMGroup removes Cluster's VM group name, as an administrator would.
func (v *VCenter) RemoveVMGroup(name string) {
	v.t.Helper()
	spec := &types.ClusterConfigSpecEx{GroupSpec: []types.ClusterGroupSpec{{
		ArrayUpdateSpec: types.ArrayUpdateSpec{Operation: types.ArrayUpdateOperationRemove, RemoveKey: name},
	}}}
	v.Wait(v.cluster().Reconfigure(v.ctx, spec, true))
}
