package vsphere

import (
	"context"
	"errors"
	"fmt"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi/object"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machine"
)

// excludeNodeDrainingAnnotation skips the drain, and with it the wait for the Node's volumes (OpenShift's).
const excludeNodeDrainingAnnotation = "machine.openshift.io/exclude-node-draining"

// Delete powers the VM off, waits for the Node's volumes to detach, takes it out of its VM group and
// destroys it, one step per call; a VM that is gone is success.
func (a *Actuator) Delete(ctx context.Context, m *machinev1beta1.Machine) error {
	t, err := a.open(ctx, m)
	if err != nil {
		return err
	}
	s := t.session
	task, _, err := readTask(ctx, s, t.status.TaskRef)
	if err != nil {
		return err
	}
	d := deletion{cloneRunning: task == taskRunning}
	vm, err := findMachineVM(ctx, s, string(m.UID))
	if err != nil {
		return err
	}
	var cluster *object.ClusterComputeResource
	if d.vm, cluster, err = observeGroup(ctx, s, t.spec, vm); err != nil {
		if !machine.IsInvalidConfiguration(err) {
			return err
		}
		d.vm = vm.state() // no cluster for the group: the VM is in none of its groups
	}
	if vm != nil {
		if d.vmBusy, err = tasksRunning(ctx, s, vm.mo.RecentTask); err != nil {
			return fmt.Errorf("reading the tasks of VM %s: %w", vm.mo.Name, err)
		}
		if d.nodeVolumes, err = a.nodeHasVolumes(ctx, m); err != nil {
			return err
		}
		_, d.drainSkipped = m.Annotations[excludeNodeDrainingAnnotation]
		d.extraDisks = disks(vm) > 1+len(t.spec.DataDisks)
	}
	logger := log.FromContext(ctx)
	switch step := decideDelete(d); step {
	case deleteWait:
		return machine.RequeueAfter(a.poll, "a vCenter task of the VM is running")
	case deleteGone:
		return nil
	case deleteWaitVolumes:
		return machine.RequeueAfter(a.poll, fmt.Sprintf("node %s has attached volumes, requeuing", m.Status.NodeRef.Name))
	case deleteWaitDisks:
		return errors.New("additional attached disks detected, block vm destruction and wait for disks to be detached")
	case deleteLeaveGroup:
		// No task ref: the next call sees the VM still in the group, and editVMGroup waits for the cluster.
		ref, err := a.editVMGroup(ctx, s, cluster, t.spec.Workspace.VMGroup, vm.obj.Reference(), false)
		if err != nil {
			return err
		}
		logger.Info("removing the VM from its VM group", "vm", vm.mo.Name, "vmGroup", t.spec.Workspace.VMGroup, "task", ref)
		return machine.RequeueAfter(a.poll, "removing the VM from VM group "+t.spec.Workspace.VMGroup)
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
		return machine.RequeueAfter(a.poll, doing)
	}
}

// nodeHasVolumes reports whether the Machine's Node still lists attached volumes, whose disks destroying
// the VM could delete.
func (a *Actuator) nodeHasVolumes(ctx context.Context, m *machinev1beta1.Machine) (bool, error) {
	ref := m.Status.NodeRef
	if ref == nil || ref.Name == "" {
		return false, nil
	}
	node := &corev1.Node{}
	if err := a.client.Get(ctx, client.ObjectKey{Name: ref.Name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading node %s for attached volumes: %w", ref.Name, err)
	}
	return len(node.Status.VolumesAttached) > 0, nil
}
