package vsphere

import (
	"context"
	"fmt"
	"maps"
	"path"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// OpenShift's Machine labels for the failure domain.
const (
	RegionLabel = "machine.openshift.io/region"
	ZoneLabel   = "machine.openshift.io/zone"
)

const providerIDPrefix = "vsphere://"

// Update refreshes providerID (vsphere://<BIOS UUID>), addresses and providerStatus, and patches the
// instance-state annotation and region/zone labels; a VM found by name that is not the Machine's (the
// installer's) is adopted so, and only read and tagged.
func (a *Actuator) Update(ctx context.Context, m *machinev1beta1.Machine) error {
	t, err := a.openVM(ctx, m, true)
	if err != nil {
		return err
	}
	st, s, vm := t.status, t.session, t.vm
	if vm == nil || !updateFinds(vm.state(m)) {
		return fmt.Errorf("vm not found on update: vm with instance uuid %s not found", m.UID)
	}
	if vm.mo.Config == nil || vm.mo.Config.Uuid == "" {
		return fmt.Errorf("VM %s has no BIOS UUID yet", vm.mo.Name)
	}
	rc, err := s.rest(ctx, t.creds)
	if err != nil {
		return err
	}
	if err := reconcileTags(ctx, s, rc, vm.obj.Reference(), m.Labels[machinev1beta1.MachineClusterIDLabel], t.spec.TagIDs, a.now()); err != nil {
		return err
	}
	m.Spec.ProviderID = new(vm.providerID())
	addrs, err := addresses(vm, len(t.spec.Network.Devices))
	if err != nil {
		return err
	}
	m.Status.Addresses = addrs
	if _, err := a.ensureClaims(ctx, m, t.spec); err != nil { // a claim deleted or orphaned meanwhile, as OpenShift
		return err
	}
	a.observe(st, vm)
	_ = writeStatus(m, st, nil) // returns its error argument, nil here
	src := regionZoneSource{fd: failureDomainFor(t.spec.Workspace, t.settings.FailureDomains), cloudConfig: t.settings.HasCloudConfig}
	if rcat, zcat := t.settings.RegionCategory, t.settings.ZoneCategory; rcat != "" || zcat != "" {
		r, z, err := readTagsRegionZone(ctx, s, rc, vm.obj, rcat, zcat, a.now())
		if err != nil { // not fatal, as in OpenShift: the labels are a hint
			log.FromContext(ctx).Error(err, "reading the region and zone tags of the VM's host; the labels are left to the failure domain")
		} else {
			src.tagsRead, src.tagRegion, src.tagZone = true, r, z
		}
	}
	region, zone, set := decideRegionZone(src)
	return a.patchMetadata(ctx, m, vm.mo.Runtime.PowerState, region, zone, set)
}

// addresses lists each NIC's guest IPs (matched by MAC) as InternalIP and the VM name as InternalDNS. A VM
// with another number of NICs than the spec's devices is an error, as in OpenShift.
func addresses(vm *machineVM, want int) ([]corev1.NodeAddress, error) {
	var devices object.VirtualDeviceList
	if vm.mo.Config != nil {
		devices = vm.mo.Config.Hardware.Device
	}
	nics := devices.SelectByType((*types.VirtualEthernetCard)(nil))
	if len(nics) != want {
		return nil, fmt.Errorf("invalid network count: expected=%d current=%d", want, len(nics))
	}
	var out []corev1.NodeAddress
	for _, nic := range nics {
		if vm.mo.Guest == nil {
			break
		}
		for _, g := range vm.mo.Guest.Net {
			if strings.EqualFold(g.MacAddress, nic.(types.BaseVirtualEthernetCard).GetVirtualEthernetCard().MacAddress) {
				for _, ip := range g.IpAddress {
					out = append(out, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
				}
			}
		}
	}
	return append(out, corev1.NodeAddress{Type: corev1.NodeInternalDNS, Address: vm.mo.Name}), nil
}

// failureDomainFor finds the failure domain the workspace lies in: same server and datacenter, and its
// compute cluster holding the resource pool (or, without a resource pool, the same datastore). A host-group
// zone (VSphereHostVMGroupZonal: zones sharing one cluster) holds only a workspace of its VM group, and a
// workspace with a VM group lies only in such a zone.
func failureDomainFor(ws *machinev1beta1.Workspace, fds []configv1.VSpherePlatformFailureDomainSpec) *configv1.VSpherePlatformFailureDomainSpec {
	if ws == nil {
		return nil
	}
	for i := range fds {
		fd, top := &fds[i], fds[i].Topology
		if fd.Server != ws.Server || path.Base(top.Datacenter) != path.Base(ws.Datacenter) {
			continue
		}
		vmGroup := ""
		if za := fd.ZoneAffinity; za != nil && za.HostGroup != nil {
			vmGroup = za.HostGroup.VMGroup
		}
		if vmGroup != ws.VMGroup {
			continue
		}
		switch {
		case ws.ResourcePool != "" && (ws.ResourcePool == top.ResourcePool || strings.HasPrefix(ws.ResourcePool, strings.TrimSuffix(top.ComputeCluster, "/")+"/")):
			return fd
		case ws.ResourcePool == "" && ws.Datastore != "" && path.Base(ws.Datastore) == path.Base(top.Datastore):
			return fd
		}
	}
	return nil
}

// patchMetadata merge-patches the instance-state annotation (the VM's power state, as OpenShift writes it)
// and, when setLabels, the region and zone labels; a Machine in line costs no write.
func (a *Actuator) patchMetadata(ctx context.Context, m *machinev1beta1.Machine, power types.VirtualMachinePowerState,
	region, zone string, setLabels bool) error {
	before := m.ObjectMeta.DeepCopy()
	metav1.SetMetaDataAnnotation(&m.ObjectMeta, provider.InstanceStateAnnotation, string(power))
	if setLabels {
		metav1.SetMetaDataLabel(&m.ObjectMeta, RegionLabel, region)
		metav1.SetMetaDataLabel(&m.ObjectMeta, ZoneLabel, zone)
	}
	if maps.Equal(before.Annotations, m.Annotations) && maps.Equal(before.Labels, m.Labels) {
		return nil
	}
	patched := &machinev1beta1.Machine{ObjectMeta: *m.ObjectMeta.DeepCopy()}
	if err := a.client.Patch(ctx, patched, client.MergeFrom(&machinev1beta1.Machine{ObjectMeta: *before})); err != nil {
		return fmt.Errorf("patching the Machine's instance-state annotation and region/zone labels: %w", err)
	}
	return nil
}
