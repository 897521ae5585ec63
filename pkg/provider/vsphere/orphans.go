package vsphere

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi/vapi/tags"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

var _ provider.InstanceLister = &Actuator{}

// orphanDeleteTimeout bounds DeleteInstance: power off and destroy are two vCenter tasks, polled like Delete's.
const orphanDeleteTimeout = 5 * time.Minute

// folderVMProperties are what the orphan listing reads of each VM of a workspace folder.
var folderVMProperties = []string{"name", "config.uuid", "config.instanceUuid", "config.template", "config.createDate", "config.extraConfig"}

// clusterFolder is a workspace folder the cluster's Machines clone into, with a Machine (source) whose
// providerSpec opens a session there.
type clusterFolder struct {
	source    *machinev1beta1.Machine
	spec      *machinev1beta1.VSphereMachineProviderSpec
	clusterID string
}

// ListInstances implements provider.InstanceLister: the tagged VMs with this provider's ownership mark in
// namespace's vSphere workspace folders (docs/safety.md), kept for DeleteInstance; an unreadable folder errs,
// the others are listed.
func (a *Actuator) ListInstances(ctx context.Context, namespace string) ([]provider.Instance, error) {
	out, listed := []provider.Instance{}, map[string]clusterFolder{}
	folders, err := a.clusterFolders(ctx, namespace)
	errs := []error{err}
	for _, f := range folders {
		vms, err := a.folderVMs(ctx, f)
		errs = append(errs, err)
		for _, vm := range vms {
			inst, ok := clusterInstance(vm, f.spec.Template, f.clusterID)
			if _, seen := listed[inst.ProviderID]; ok && !seen {
				listed[inst.ProviderID] = f
				out = append(out, inst)
			}
		}
	}
	a.orphans.Lock()
	a.orphans.listed = listed
	a.orphans.Unlock()
	return out, errors.Join(errs...)
}

// DeleteInstance implements provider.InstanceLister: it deletes the VM, if its folder still holds it with
// inst's providerID, name and mark (and tag), by Delete on a stand-in Machine whose UID is the VM's instance UUID.
func (a *Actuator) DeleteInstance(ctx context.Context, inst provider.Instance) error {
	a.orphans.Lock()
	f, ok := a.orphans.listed[inst.ProviderID]
	a.orphans.Unlock()
	logger := log.FromContext(ctx)
	if !ok {
		logger.Info("not deleting a VM this provider did not list", "vm", inst.Name, "providerID", inst.ProviderID)
		return nil
	}
	vms, err := a.folderVMs(ctx, f)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(vms, func(vm mo.VirtualMachine) bool {
		got, ok := clusterInstance(vm, f.spec.Template, f.clusterID)
		return ok && got.ProviderID == inst.ProviderID && got.Name == inst.Name && got.Owner == inst.Owner
	})
	if i < 0 || vms[i].Config.InstanceUuid == "" { // a listed VM has a Config (its BIOS UUID)
		logger.Info("not deleting a VM that is gone or changed since it was listed", "vm", inst.Name, "providerID", inst.ProviderID)
		return nil
	}
	target := vms[i].Name
	m := &machinev1beta1.Machine{TypeMeta: f.source.TypeMeta, Spec: *f.source.Spec.DeepCopy(), ObjectMeta: metav1.ObjectMeta{
		Namespace: f.source.Namespace, Name: target, UID: ktypes.UID(vms[i].Config.InstanceUuid), Labels: f.source.Labels}}
	ctx, cancel := context.WithTimeout(ctx, orphanDeleteTimeout)
	defer cancel()
	for {
		err := a.Delete(ctx, m)
		ra, ok := provider.AsRequeueAfter(err)
		if !ok {
			if err != nil {
				return fmt.Errorf("deleting orphan VM %s: %w", target, err)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("deleting orphan VM %s (%s): %w", target, ra.Error(), ctx.Err())
		case <-time.After(ra.After):
		}
	}
}

// clusterInstance decides whether a tagged VM of a workspace folder is one of the cluster's instances: one
// this provider cloned, with its ownership mark (the installer's VMs, a user's and OpenShift's clones have
// none), and never a template, the Machines' template or the installer's bootstrap VM.
func clusterInstance(vm mo.VirtualMachine, template, clusterID string) (provider.Instance, bool) {
	c := ptr.Deref(vm.Config, types.VirtualMachineConfigInfo{})
	owner := ownerOf(&c)
	switch {
	case c.Template, c.Uuid == "", owner.IsZero(), owner.Name != vm.Name:
	case vm.Name == path.Base(template), c.InstanceUuid == template:
	case vm.Name == clusterID+"-bootstrap", vm.Name == clusterID+"-boostrap": // the installer's (one release spelt it so), deleted by it
	default:
		return provider.Instance{ProviderID: providerIDPrefix + strings.ToLower(c.Uuid), Name: vm.Name,
			CreatedAt: ptr.Deref(c.CreateDate, time.Time{}), Owner: owner}, true
	}
	return provider.Instance{}, false
}

// clusterFolders collects the distinct workspace folders of namespace's vSphere Machines and MachineSets
// (one scaled to zero still names where its Machines were), read uncached.
func (a *Actuator) clusterFolders(ctx context.Context, namespace string) ([]clusterFolder, error) {
	var machines machinev1beta1.MachineList
	if err := a.client.List(ctx, &machines, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing Machines for their vSphere folders: %w", err)
	}
	var sets machinev1beta1.MachineSetList
	if err := a.client.List(ctx, &sets, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing MachineSets for their vSphere folders: %w", err)
	}
	sources := machines.Items
	for _, ms := range sets.Items {
		sources = append(sources, machinev1beta1.Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: ms.Namespace, Name: ms.Name, Labels: ms.Spec.Template.Labels},
			Spec:       ms.Spec.Template.Spec,
		})
	}
	var out []clusterFolder
	seen := map[string]bool{}
	for i := range sources {
		m := &sources[i]
		clusterID := m.Labels[machinev1beta1.MachineClusterIDLabel]
		spec, err := decodeSpec(m)
		if err != nil || clusterID == "" || spec.Kind != providerSpecKind {
			continue // another provider's, or one Create refuses: it made no VM
		}
		ws := spec.Workspace
		creds := ptr.Deref(spec.CredentialsSecret, corev1.LocalObjectReference{}).Name
		key := strings.Join([]string{m.Namespace, ws.Server, ws.Datacenter, ws.Folder, creds, clusterID, spec.Template}, "\x00")
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, clusterFolder{source: m, spec: spec, clusterID: clusterID})
	}
	return out, nil
}

// folderVMs reads the VMs directly in the folder that carry the cluster ID tag; none without such a tag.
func (a *Actuator) folderVMs(ctx context.Context, f clusterFolder) ([]mo.VirtualMachine, error) {
	t, err := a.open(ctx, f.source)
	if err != nil {
		return nil, fmt.Errorf("vSphere folder %q of %s/%s: %w", f.spec.Workspace.Folder, f.source.Namespace, f.source.Name, err)
	}
	s := t.session
	rc, err := s.rest(ctx, t.creds)
	if err != nil {
		return nil, err
	}
	tm := tags.NewManager(rc)
	tagID, err := s.clusterTagID(ctx, tm, f.clusterID, a.now())
	if err != nil || tagID == "" {
		return nil, err
	}
	attached, err := tm.ListAttachedObjects(ctx, tagID)
	if err != nil {
		return nil, fmt.Errorf("listing the VMs tagged %s: %w", f.clusterID, err)
	}
	tagged := map[string]bool{}
	for _, ref := range attached {
		tagged[ref.Reference().Value] = true // moref values name their type (vm-12)
	}
	folder, err := s.finder.FolderOrDefault(ctx, f.spec.Workspace.Folder)
	if err != nil {
		return nil, lookupError("folder", "workspace.folder", f.spec.Workspace.Folder, err)
	}
	children, err := folder.Children(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing folder %q: %w", f.spec.Workspace.Folder, err)
	}
	var refs []types.ManagedObjectReference
	for _, c := range children {
		if r := c.Reference(); r.Type == "VirtualMachine" && tagged[r.Value] {
			refs = append(refs, r)
		}
	}
	if len(refs) == 0 {
		return nil, nil
	}
	var vms []mo.VirtualMachine
	if err := s.client.Retrieve(ctx, refs, folderVMProperties, &vms); err != nil {
		return nil, fmt.Errorf("reading the VMs of folder %q: %w", f.spec.Workspace.Folder, err)
	}
	return vms, nil
}
