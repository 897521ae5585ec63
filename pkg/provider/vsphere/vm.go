package vsphere

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// vmProperties are the VM properties Update, Exists and Delete read, in one property-collector call.
var vmProperties = []string{"name", "config.uuid", "config.instanceUuid", "config.hardware.device", "runtime.powerState", "guest.net", "recentTask"}

// machineVM is a VM found for a Machine, with its properties.
type machineVM struct {
	obj     *object.VirtualMachine
	mo      mo.VirtualMachine
	claimed bool // found by instance UUID
}

func (v *machineVM) state() vmState {
	if v == nil {
		return vmState{}
	}
	return vmState{found: true, claimed: v.claimed, power: v.mo.Runtime.PowerState}
}

// findMachineVM finds the VM whose instance UUID is the Machine's UID; nil when there is none.
func findMachineVM(ctx context.Context, s *session, uid string) (*machineVM, error) {
	ref, err := object.NewSearchIndex(s.client.Client).FindByUuid(ctx, s.datacenter, uid, true, new(true)) // by instance UUID
	if err != nil {
		return nil, fmt.Errorf("finding the VM with instance UUID %s: %w", uid, err)
	}
	if ref == nil {
		return nil, nil
	}
	v := &machineVM{obj: object.NewVirtualMachine(s.client.Client, ref.Reference()), claimed: true}
	return v.read(ctx)
}

// read fills the VM's properties; nil when it is gone.
func (v *machineVM) read(ctx context.Context) (*machineVM, error) {
	if err := v.obj.Properties(ctx, v.obj.Reference(), vmProperties, &v.mo); err != nil {
		if fault.Is(err, &types.ManagedObjectNotFound{}) { // destroyed between the search and the read
			return nil, nil
		}
		return nil, fmt.Errorf("reading VM %s: %w", v.obj.Reference().Value, err)
	}
	return v, nil
}

// findCloneByName finds a VM with the Machine's name in the workspace folder (nil: none), claimed only if
// its instance UUID is the Machine's UID.
func findCloneByName(ctx context.Context, s *session, folder, name, uid string) (*machineVM, error) {
	p := path.Join(folder, name)
	vm, err := s.finder.VirtualMachine(ctx, p)
	if err != nil {
		var nf *find.NotFoundError
		if errors.As(err, &nf) {
			return nil, nil
		}
		return nil, fmt.Errorf("finding VM %s: %w", p, err)
	}
	v := &machineVM{obj: vm}
	v, err = v.read(ctx)
	if err != nil || v == nil {
		return v, err
	}
	v.claimed = v.mo.Config != nil && v.mo.Config.InstanceUuid == uid
	return v, nil
}

// readTask returns the state of the task ref names and its info.
func readTask(ctx context.Context, s *session, ref string) (taskState, *types.TaskInfo, error) {
	if ref == "" {
		return taskNone, nil, nil
	}
	var t mo.Task
	err := s.client.RetrieveOne(ctx, types.ManagedObjectReference{Type: "Task", Value: ref}, []string{"info"}, &t)
	switch {
	case fault.Is(err, &types.ManagedObjectNotFound{}):
		return taskGone, nil, nil
	case err != nil:
		return taskNone, nil, fmt.Errorf("reading vCenter task %s: %w", ref, err)
	}
	return stateOf(t.Info.State), &t.Info, nil
}

func stateOf(s types.TaskInfoState) taskState {
	switch s {
	case types.TaskInfoStateQueued, types.TaskInfoStateRunning:
		return taskRunning
	case types.TaskInfoStateSuccess:
		return taskSucceeded
	case types.TaskInfoStateError:
		return taskFailed
	}
	return taskNone
}

// taskError describes a failed task.
func taskError(info *types.TaskInfo) error {
	if info == nil {
		return errors.New("vCenter task failed")
	}
	msg := "unknown error"
	if info.Error != nil {
		msg = info.Error.LocalizedMessage
		if f := info.Error.Fault; f != nil {
			msg = fmt.Sprintf("%s (%T)", msg, f)
		}
	}
	return fmt.Errorf("vCenter task %s (%s) failed: %s", info.Key, info.DescriptionId, msg)
}
