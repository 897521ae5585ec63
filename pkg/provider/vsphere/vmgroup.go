package vsphere

import (
	"context"
	"fmt"
	"slices"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// vmGroup is the cluster VM group (DRS) the providerSpec names, read from the cluster owning the resource pool.
type vmGroup struct {
	name        string
	clusterName string
	found       bool                           // the cluster has a VM group of that name
	members     []types.ManagedObjectReference // its VMs
	busy        bool                           // a task on the cluster is queued or running
}

// has reports whether the group lists the VM.
func (g *vmGroup) has(vm types.ManagedObjectReference) bool {
	return g.found && slices.Contains(g.members, vm)
}

// groupCluster finds the cluster owning the VM's resource pool, the workspace one it was cloned into
// (OpenShift looks that up by path; the VM's own pool is two reads, not a walk of the inventory).
func groupCluster(ctx context.Context, vm *object.VirtualMachine, ws *machinev1beta1.Workspace) (*object.ClusterComputeResource, error) {
	pool, err := vm.ResourcePool(ctx)
	if err != nil {
		return nil, fmt.Errorf("finding the resource pool of VM %s for VM group %q: %w", vm.Reference().Value, ws.VMGroup, err)
	}
	owner, err := pool.Owner(ctx)
	if err != nil {
		return nil, fmt.Errorf("finding the cluster of resource pool %q for VM group %q: %w", ws.ResourcePool, ws.VMGroup, err)
	}
	cluster, ok := owner.(*object.ClusterComputeResource)
	if !ok {
		return nil, provider.InvalidConfiguration("workspace.vmGroup: resource pool %q belongs to %s, not a cluster; VM groups need a cluster's resource pool", ws.ResourcePool, owner.Reference())
	}
	return cluster, nil
}

// readVMGroup reads the cluster's VM group name and whether a task on the cluster runs.
func readVMGroup(ctx context.Context, s *session, cluster *object.ClusterComputeResource, name string) (*vmGroup, error) {
	var c mo.ClusterComputeResource
	if err := cluster.Properties(ctx, cluster.Reference(), []string{"name", "configurationEx", "recentTask"}, &c); err != nil {
		return nil, fmt.Errorf("reading the configuration of cluster %s for VM group %q: %w", cluster.Reference().Value, name, err)
	}
	g := &vmGroup{name: name, clusterName: c.Name}
	if cfg, ok := c.ConfigurationEx.(*types.ClusterConfigInfoEx); ok {
		for _, info := range cfg.Group {
			if vg, ok := info.(*types.ClusterVmGroup); ok && vg.Name == name {
				g.found, g.members = true, vg.Vm
				break
			}
		}
	}
	var err error
	if g.busy, err = tasksRunning(ctx, s, c.RecentTask); err != nil {
		return nil, fmt.Errorf("reading the tasks of cluster %s: %w", c.Name, err)
	}
	return g, nil
}

// tasksRunning reports whether any of the tasks is queued or running.
func tasksRunning(ctx context.Context, s *session, refs []types.ManagedObjectReference) (bool, error) {
	if len(refs) == 0 {
		return false, nil
	}
	var tasks []mo.Task
	if err := s.client.Retrieve(ctx, refs, []string{"info.state"}, &tasks); fault.Is(err, &types.ManagedObjectNotFound{}) {
		return false, nil // a task expired between the two reads
	} else if err != nil {
		return false, err
	}
	return slices.ContainsFunc(tasks, func(t mo.Task) bool { return stateOf(t.Info.State) == taskRunning }), nil
}

// editVMGroup adds the VM to its VM group, or removes it, and returns the reconfigure task ("": nothing to do).
// The VM list is replaced as a whole: one edit at a time per Actuator, none while a cluster task runs (a requeue).
func (a *Actuator) editVMGroup(ctx context.Context, s *session, cluster *object.ClusterComputeResource, name string, vm types.ManagedObjectReference, add bool) (string, error) {
	if !a.groupEdits.TryLock() {
		return "", provider.RequeueAfter(a.poll, "another VM group edit of this controller is in flight")
	}
	defer a.groupEdits.Unlock()
	g, err := readVMGroup(ctx, s, cluster, name)
	if err != nil {
		return "", err
	}
	switch {
	case !g.found && add:
		// OpenShift sends the edit anyway and vCenter rejects it; say what to do instead.
		return "", fmt.Errorf("VM group %q not found in cluster %s: create the VM group there or fix providerSpec.workspace.vmGroup", g.name, g.clusterName)
	case g.has(vm) == add:
		return "", nil
	case g.busy:
		return "", provider.RequeueAfter(a.poll, fmt.Sprintf("a vCenter task of cluster %s is running; VM group %q is edited after it", g.clusterName, g.name))
	}
	if last := a.lastGroupEdit; last.task != "" {
		state, info, err := readTask(ctx, s, last.task)
		if err != nil {
			return "", err
		}
		// Until the last edit's task ends and its VM shows in the group (for at most one API timeout: the VM
		// may since have gone), the members read may lack it: editing now would drop it.
		unseen := state == taskSucceeded && last.group == g.name && g.has(last.vm) != last.add &&
			info.CompleteTime != nil && a.now().Sub(*info.CompleteTime) < a.timeout
		if state == taskRunning || unseen {
			return "", provider.RequeueAfter(a.poll, fmt.Sprintf("a vCenter task of cluster %s is running (VM group edit %s); VM group %q is edited after it", g.clusterName, last.task, g.name))
		}
		a.lastGroupEdit = groupEdit{}
	}
	members := slices.DeleteFunc(slices.Clone(g.members), func(r types.ManagedObjectReference) bool { return r == vm })
	if add {
		members = append(members, vm)
	}
	spec := &types.ClusterConfigSpecEx{GroupSpec: []types.ClusterGroupSpec{{
		ArrayUpdateSpec: types.ArrayUpdateSpec{Operation: types.ArrayUpdateOperationEdit},
		Info:            &types.ClusterVmGroup{ClusterGroupInfo: types.ClusterGroupInfo{Name: g.name}, Vm: members},
	}}}
	task, err := cluster.Reconfigure(ctx, spec, true)
	if err != nil {
		return "", fmt.Errorf("editing VM group %q of cluster %s: %w", g.name, g.clusterName, err)
	}
	a.lastGroupEdit = groupEdit{task: task.Reference().Value, group: g.name, vm: vm, add: add}
	return a.lastGroupEdit.task, nil
}

// groupEdit is a VM group edit this Actuator started.
type groupEdit struct {
	task, group string
	vm          types.ManagedObjectReference
	add         bool
}

// observeGroup is the VM's state with its VM group membership, and the group's cluster, read only for a
// powered-off VM of the Machine's own (or adopted) whose providerSpec names a group: the one state in which
// Create or Delete acts on it.
func observeGroup(ctx context.Context, s *session, spec *machinev1beta1.VSphereMachineProviderSpec, vm *machineVM, state vmState) (vmState, *object.ClusterComputeResource, error) {
	if !state.ours() && !state.adopted || state.power != types.VirtualMachinePowerStatePoweredOff || spec.Workspace.VMGroup == "" {
		return state, nil, nil
	}
	cluster, err := groupCluster(ctx, vm.obj, spec.Workspace)
	if err != nil {
		return state, nil, err
	}
	g, err := readVMGroup(ctx, s, cluster, spec.Workspace.VMGroup)
	if err != nil {
		return state, nil, err
	}
	state.group = groupOutside
	if g.has(vm.obj.Reference()) {
		state.group = groupInside
	}
	return state, cluster, nil
}
