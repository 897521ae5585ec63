package standin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Names the stand-in writes.
const (
	// StandInLabel marks the Nodes the stand-in registered; it changes no
	// other Node.
	StandInLabel = "vsphere.machine-api-operator.io/stand-in-kubelet"
	// GuestIPKey is vcsim's extraConfig key that sets the guest's IP address
	// (what VMware Tools reports on a real VM).
	GuestIPKey = "SET.guest.ipAddress"
	// kwokNodeAnnotation asks kwok to keep the Node Ready (kwokctl's binary
	// runtime manages every Node anyway).
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
)

// Kubelet is the stand-in for the kubelets of the VMs in one folder.
type Kubelet struct {
	// VCenter is a logged-in vCenter client.
	VCenter *vim25.Client
	// Folder is the inventory path of the cluster's VM folder
	// (/DC0/vm/<infrastructure name>); only VMs directly in it count.
	Folder string
	// Client writes Nodes.
	Client client.Client
}

// Run syncs every interval until ctx ends; a failed pass is logged through
// report and retried at the next tick.
func (k *Kubelet) Run(ctx context.Context, interval time.Duration, report func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := k.Sync(ctx); err != nil && ctx.Err() == nil {
			report(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sync is one pass: observe the VMs and Nodes, decide, act. It returns what
// it did.
func (k *Kubelet) Sync(ctx context.Context) (Plan, error) {
	vms, err := k.VMs(ctx)
	if err != nil {
		return Plan{}, err
	}
	nodes, err := k.nodes(ctx)
	if err != nil {
		return Plan{}, err
	}
	plan := Decide(vms, nodes)
	var errs []error
	for _, a := range plan.AssignIPs {
		errs = append(errs, k.assignIP(ctx, a))
	}
	for _, vm := range plan.CreateNodes {
		errs = append(errs, k.createNode(ctx, vm))
	}
	for _, name := range plan.DeleteNodes {
		if err := k.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting node %s: %w", name, err))
		}
	}
	return plan, errors.Join(errs...)
}

// VMs lists the VMs directly in the folder (templates excluded).
func (k *Kubelet) VMs(ctx context.Context) ([]VM, error) {
	folder, err := find.NewFinder(k.VCenter, false).Folder(ctx, k.Folder)
	if err != nil {
		return nil, fmt.Errorf("finding folder %s: %w", k.Folder, err)
	}
	v, err := view.NewManager(k.VCenter).CreateContainerView(ctx, folder.Reference(), []string{"VirtualMachine"}, false)
	if err != nil {
		return nil, fmt.Errorf("listing the VMs of %s: %w", k.Folder, err)
	}
	defer func() { _ = v.Destroy(context.WithoutCancel(ctx)) }()
	var mos []mo.VirtualMachine
	props := []string{"name", "config.uuid", "config.template", "config.hardware", "runtime.powerState", "guest.ipAddress"}
	if err := v.Retrieve(ctx, []string{"VirtualMachine"}, props, &mos); err != nil {
		return nil, fmt.Errorf("reading the VMs of %s: %w", k.Folder, err)
	}
	vms := make([]VM, 0, len(mos))
	for _, m := range mos {
		vm := VM{Ref: m.Self.Value, Name: m.Name, PoweredOn: m.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn}
		if c := m.Config; c != nil {
			if c.Template {
				continue
			}
			vm.BIOSUUID, vm.CPUs, vm.MemoryMiB = c.Uuid, c.Hardware.NumCPU, c.Hardware.MemoryMB
		}
		if m.Guest != nil {
			vm.GuestIP = m.Guest.IpAddress
		}
		vms = append(vms, vm)
	}
	return vms, nil
}

func (k *Kubelet) nodes(ctx context.Context) ([]Node, error) {
	var list corev1.NodeList
	if err := k.Client.List(ctx, &list, client.HasLabels{StandInLabel}); err != nil {
		return nil, fmt.Errorf("listing the stand-in's nodes: %w", err)
	}
	nodes := make([]Node, 0, len(list.Items))
	for _, n := range list.Items {
		nodes = append(nodes, Node{Name: n.Name, ProviderID: n.Spec.ProviderID})
	}
	return nodes, nil
}

// assignIP plays VMware Tools: the guest reports ip.
func (k *Kubelet) assignIP(ctx context.Context, a IPAssignment) error {
	vm := object.NewVirtualMachine(k.VCenter, types.ManagedObjectReference{Type: "VirtualMachine", Value: a.VM.Ref})
	task, err := vm.Reconfigure(ctx, types.VirtualMachineConfigSpec{
		ExtraConfig: []types.BaseOptionValue{&types.OptionValue{Key: GuestIPKey, Value: a.IP.String()}},
	})
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		return fmt.Errorf("setting the guest IP of VM %s to %s: %w", a.VM.Name, a.IP, err)
	}
	return nil
}

// createNode registers the VM's Node, as its kubelet would.
func (k *Kubelet) createNode(ctx context.Context, vm VM) error {
	node := NodeFor(vm)
	status := node.Status
	if err := k.Client.Create(ctx, node); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("registering node %s for VM %s: a node of that name exists and is not the stand-in's: %w", node.Name, vm.Name, err)
		}
		return fmt.Errorf("registering node %s for VM %s: %w", node.Name, vm.Name, err)
	}
	// A merge patch: kwok writes the new Node's conditions at the same time,
	// and an update would conflict with it.
	base := node.DeepCopy()
	node.Status = status
	if err := k.Client.Status().Patch(ctx, node, client.MergeFrom(base)); err != nil {
		// Without addresses the Node is useless: remove it, the next pass
		// registers it again.
		_ = k.Client.Delete(ctx, node)
		return fmt.Errorf("reporting the status of node %s: %w", node.Name, err)
	}
	return nil
}

// NodeFor is the Node a VM's kubelet registers (conditions are kwok's).
func NodeFor(vm VM) *corev1.Node {
	name := NodeName(vm.Name)
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(vm.CPUs), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(int64(vm.MemoryMiB)<<20, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				StandInLabel:                     "true",
				corev1.LabelHostname:             name,
				corev1.LabelOSStable:             "linux",
				corev1.LabelArchStable:           "amd64",
				"node-role.kubernetes.io/worker": "",
			},
			Annotations: map[string]string{kwokNodeAnnotation: "fake"},
		},
		Spec: corev1.NodeSpec{ProviderID: ProviderID(vm.BIOSUUID)},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: vm.GuestIP},
				{Type: corev1.NodeHostName, Address: name},
			},
			NodeInfo: corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "amd64"},
		},
	}
}
