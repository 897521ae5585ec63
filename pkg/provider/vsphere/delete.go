package vsphere

import (
	"context"
	"errors"
	"fmt"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// excludeNodeDrainingAnnotation skips the drain, and with it the wait for the Node's volumes (OpenShift's).
const excludeNodeDrainingAnnotation = "machine.openshift.io/exclude-node-draining"

// Delete powers the VM off, waits for the Node's volumes to detach, takes it out of its VM group and
// destroys it, one step per call; a VM that is gone is success. The VM is the Machine's own or one it
// adopted by name (as OpenShift, which deletes the VM it finds); a foreign VM it never adopted is left.
func (a *Actuator) Delete(ctx context.Context, m *machinev1beta1.Machine) error {
	t, err := a.openVM(ctx, m, false)
	if err != nil {
		return err
	}
	s, vm := t.session, t.vm
	d := deletion{cloneRunning: t.task == taskRunning}
	var foreign []types.BaseVirtualDevice // disks not the VM's own
	var cluster *object.ClusterComputeResource
	state := vm.state(m)
	if d.vm, cluster, err = observeGroup(ctx, s, t.spec, vm, state); err != nil {
		if !provider.IsInvalidConfiguration(err) {
			return err
		}
		d.vm = state // no cluster for the group: the VM is in none of its groups
	}
	if vm != nil && !state.ours() && !state.adopted {
		log.FromContext(ctx).Info("leaving the VM of the Machine's name alone: it is not the Machine's and was never adopted", "vm", vm.mo.Name)
	}
	if vm != nil && (state.ours() || state.adopted) {
		if d.vmBusy, err = tasksRunning(ctx, s, vm.mo.RecentTask); err != nil {
			return fmt.Errorf("reading the tasks of VM %s: %w", vm.mo.Name, err)
		}
		if ref := m.Status.NodeRef; ref != nil && ref.Name != "" { // its volumes' disks would go with the VM
			node := &corev1.Node{}
			if err := a.client.Get(ctx, client.ObjectKey{Name: ref.Name}, node); err == nil {
				d.nodeVolumes = len(node.Status.VolumesAttached) > 0
			} else if !apierrors.IsNotFound(err) {
				return fmt.Errorf("reading node %s for attached volumes: %w", ref.Name, err)
			}
		}
		_, d.drainSkipped = m.Annotations[excludeNodeDrainingAnnotation]
		if c := vm.mo.Config; c != nil {
			devices := object.VirtualDeviceList(c.Hardware.Device)
			d.extraDisks = len(devices.SelectByType((*types.VirtualDisk)(nil))) > 1+len(t.spec.DataDisks)
			foreign = foreignDisks(vm.mo.Name, devices)
			d.detachable = len(foreign) > 0
		}
	}
	logger := log.FromContext(ctx)
	switch step := decideDelete(d); step {
	case deleteWait:
		return provider.RequeueAfter(a.poll, "a vCenter task of the VM is running")
	case deleteGone: // the VM is gone (or never was the Machine's): its addresses may go too
		return a.releaseClaims(ctx, m)
	case deleteWaitVolumes:
		return provider.RequeueAfter(a.poll, fmt.Sprintf("node %s has attached volumes, requeuing", m.Status.NodeRef.Name))
	case deleteWaitDisks:
		return errors.New("additional attached disks detected, block vm destruction and wait for disks to be detached")
	case deleteDetachDisks:
		// Removed from the VM, files kept (no file operation); the next call waits for the task (recentTask).
		spec := types.VirtualMachineConfigSpec{}
		var files []string
		for _, dev := range foreign {
			spec.DeviceChange = append(spec.DeviceChange, &types.VirtualDeviceConfigSpec{Operation: types.VirtualDeviceConfigSpecOperationRemove, Device: dev})
			if b, ok := dev.GetVirtualDevice().Backing.(types.BaseVirtualDeviceFileBackingInfo); ok {
				files = append(files, b.GetVirtualDeviceFileBackingInfo().FileName)
			}
		}
		task, err := vm.obj.Reconfigure(ctx, spec)
		if err != nil {
			return fmt.Errorf("failed to detach disks: %w", err)
		}
		logger.Info("drain was skipped for the machine, detaching disks before vm destruction to prevent data loss", "vm", vm.mo.Name, "disks", files, "task", task.Reference().Value)
		return provider.RequeueAfter(a.poll, "disks were detached, vm will be attempted to destroy in next reconciliation, requeuing")
	case deleteLeaveGroup:
		// No task ref: the next call sees the VM still in the group, and editVMGroup waits for the cluster.
		ref, err := a.editVMGroup(ctx, s, cluster, t.spec.Workspace.VMGroup, vm.obj.Reference(), false)
		if err != nil {
			return err
		}
		logger.Info("removing the VM from its VM group", "vm", vm.mo.Name, "vmGroup", t.spec.Workspace.VMGroup, "task", ref)
		return provider.RequeueAfter(a.poll, "removing the VM from VM group "+t.spec.Workspace.VMGroup)
	default: // deletePowerOff, deleteDestroy
		start, verb, doing := vm.obj.Destroy, "destroying", "destroying the VM"
		if step == deletePowerOff {
			start, verb, doing = vm.obj.PowerOff, "powering off", "powering the VM off"
		}
		task, err := start(ctx)
		if err != nil {
			return fmt.Errorf("%s VM %s: %w", verb, vm.mo.Name, err)
		}
		logger.Info(doing, "vm", vm.mo.Name, "task", task.Reference().Value)
		return provider.RequeueAfter(a.poll, doing)
	}
}
