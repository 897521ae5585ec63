package vsphere

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	"k8s.io/utils/ptr"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// vmProperties are the VM properties Update, Exists and Delete read, in one property-collector call.
var vmProperties = []string{"name", "config.uuid", "config.instanceUuid", "config.hardware.device", "runtime.powerState", "guest.net", "recentTask"}

// OwnerKey is the extraConfig key of the ownership mark written at clone time: the Machine's
// "<namespace>/<name>/<uid>" (provider.Owner). vmx keys are dotted words, so no "/" in the key.
const OwnerKey = "machineapi.owner"

// machineVM is a VM found for a Machine, with its properties.
type machineVM struct {
	obj    *object.VirtualMachine
	mo     mo.VirtualMachine
	byUUID bool           // found by instance UUID = the Machine's UID
	owner  provider.Owner // the ownership mark, read for a VM found by name only
}

// state is what the decisions need of the VM, seen from m: whose it is and, for a foreign one, whether m
// adopted it (its providerID is the VM's) or may adopt it (m has no providerID yet).
func (v *machineVM) state(m *machinev1beta1.Machine) vmState {
	if v == nil {
		return vmState{}
	}
	st := vmState{found: true, owner: ownerForeign, power: v.mo.Runtime.PowerState}
	configured := v.byUUID || v.mo.Config != nil && v.mo.Config.InstanceUuid == string(m.UID)
	switch {
	case configured: // ours, or OpenShift's clone: it set the instance UUID to the Machine's UID too
		st.owner = ownerMachine
	case v.owner.Owns(m):
		st.owner = ownerMarked
	}
	id := ptr.Deref(m.Spec.ProviderID, "")
	st.adopted = id != "" && id == v.providerID()
	st.adoptable = id == ""
	return st
}

// providerID is the VM's vsphere://<BIOS UUID>; empty before vCenter assigned one.
func (v *machineVM) providerID() string {
	if v.mo.Config == nil || v.mo.Config.Uuid == "" {
		return ""
	}
	return providerIDPrefix + strings.ToLower(v.mo.Config.Uuid)
}

// findMachineVM finds the Machine's VM as OpenShift does: by instance UUID (the Machine's UID), then by the
// Machine's name (here only in the workspace folder); nil when neither finds one.
func findMachineVM(ctx context.Context, s *session, m *machinev1beta1.Machine, folder string) (*machineVM, error) {
	uid := string(m.UID)
	ref, err := object.NewSearchIndex(s.client.Client).FindByUuid(ctx, s.datacenter, uid, true, new(true)) // by instance UUID
	if err != nil {
		return nil, fmt.Errorf("finding the VM with instance UUID %s: %w", uid, err)
	}
	if ref != nil {
		v := &machineVM{obj: object.NewVirtualMachine(s.client.Client, ref.Reference()), byUUID: true}
		if v, err = v.read(ctx, vmProperties); v != nil || err != nil {
			return v, err
		}
	}
	return findByName(ctx, s, folder, m.Name)
}

// read fills the VM's properties; nil when it is gone.
func (v *machineVM) read(ctx context.Context, props []string) (*machineVM, error) {
	if err := v.obj.Properties(ctx, v.obj.Reference(), props, &v.mo); err != nil {
		if fault.Is(err, &types.ManagedObjectNotFound{}) { // destroyed between the search and the read
			return nil, nil
		}
		return nil, fmt.Errorf("reading VM %s: %w", v.obj.Reference().Value, err)
	}
	return v, nil
}

// findByName finds the VM named name directly in the workspace folder (nil: none, or no such folder), with its
// ownership mark: one inventory-path lookup for an absolute folder (the installer's and OpenShift's form).
func findByName(ctx context.Context, s *session, folder, name string) (*machineVM, error) {
	dir := folder
	if !strings.HasPrefix(dir, "/") { // none (the datacenter's VM folder), or relative to the datacenter
		f, err := s.finder.FolderOrDefault(ctx, folder)
		if err != nil {
			var nf *find.NotFoundError
			if errors.As(err, &nf) {
				return nil, nil
			}
			return nil, lookupError("folder", "workspace.folder", folder, err)
		}
		dir = f.InventoryPath
	}
	p := path.Join(dir, name)
	ref, err := object.NewSearchIndex(s.client.Client).FindByInventoryPath(ctx, strings.TrimPrefix(p, "/"))
	if err != nil {
		return nil, fmt.Errorf("finding VM %s: %w", p, err)
	}
	if ref == nil || ref.Reference().Type != "VirtualMachine" {
		return nil, nil
	}
	v, err := (&machineVM{obj: object.NewVirtualMachine(s.client.Client, ref.Reference())}).read(ctx, append(slices.Clone(vmProperties), "config.extraConfig"))
	if err != nil || v == nil {
		return v, err
	}
	v.owner = ownerOf(v.mo.Config)
	return v, nil
}

// ownerOf reads the ownership mark of a VM's configuration (zero: none).
func ownerOf(c *types.VirtualMachineConfigInfo) provider.Owner {
	if c == nil {
		return provider.Owner{}
	}
	for _, o := range c.ExtraConfig {
		if ov := o.GetOptionValue(); ov != nil && ov.Key == OwnerKey {
			if s, ok := ov.Value.(string); ok {
				return provider.ParseOwner(s)
			}
		}
	}
	return provider.Owner{}
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
