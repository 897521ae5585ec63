package nodelink

import (
	"context"
	"fmt"
	"net/netip"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Field index names nodelink registers on the cache. They carry a "nodelink:"
// prefix so that another controller in the same manager can register its own
// index on the same field without an indexer conflict.
const (
	// IndexNodeProviderID indexes Nodes by spec.providerID (non-empty only).
	IndexNodeProviderID = "nodelink:node.spec.providerID"
	// IndexNodeInternalIP indexes Nodes by every InternalIP in
	// status.addresses (canonical form, see CanonicalIP).
	IndexNodeInternalIP = "nodelink:node.status.addresses.internalIP"
	// IndexMachineProviderID indexes Machines by spec.providerID (non-empty only).
	IndexMachineProviderID = "nodelink:machine.spec.providerID"
	// IndexMachineInternalIP indexes Machines by every InternalIP in
	// status.addresses (canonical form, see CanonicalIP).
	IndexMachineInternalIP = "nodelink:machine.status.addresses.internalIP"
	// IndexMachineNodeRef indexes Machines by status.nodeRef.name, so the
	// Machines that point at a Node that is gone can be found.
	IndexMachineNodeRef = "nodelink:machine.status.nodeRef.name"
)

// RegisterIndexes adds nodelink's field indexes to indexer (a manager's
// GetFieldIndexer()). SetupWithManager calls it; it must run before the
// cache starts.
func RegisterIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	indexes := []struct {
		obj   client.Object
		field string
		fn    client.IndexerFunc
	}{
		{&corev1.Node{}, IndexNodeProviderID, nodeProviderIDIndex},
		{&corev1.Node{}, IndexNodeInternalIP, nodeInternalIPIndex},
		{&machinev1beta1.Machine{}, IndexMachineProviderID, machineProviderIDIndex},
		{&machinev1beta1.Machine{}, IndexMachineInternalIP, machineInternalIPIndex},
		{&machinev1beta1.Machine{}, IndexMachineNodeRef, machineNodeRefIndex},
	}
	for _, ix := range indexes {
		if err := indexer.IndexField(ctx, ix.obj, ix.field, ix.fn); err != nil {
			return fmt.Errorf("registering index %s: %w", ix.field, err)
		}
	}
	return nil
}

func nodeProviderIDIndex(obj client.Object) []string {
	node, ok := obj.(*corev1.Node)
	if !ok || node.Spec.ProviderID == "" {
		return nil
	}
	return []string{node.Spec.ProviderID}
}

func nodeInternalIPIndex(obj client.Object) []string {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return nil
	}
	return internalIPs(node.Status.Addresses)
}

func machineProviderIDIndex(obj client.Object) []string {
	m, ok := obj.(*machinev1beta1.Machine)
	if !ok {
		return nil
	}
	if id := machineProviderID(m); id != "" {
		return []string{id}
	}
	return nil
}

func machineInternalIPIndex(obj client.Object) []string {
	m, ok := obj.(*machinev1beta1.Machine)
	if !ok {
		return nil
	}
	return internalIPs(m.Status.Addresses)
}

func machineNodeRefIndex(obj client.Object) []string {
	m, ok := obj.(*machinev1beta1.Machine)
	if !ok || m.Status.NodeRef == nil || m.Status.NodeRef.Name == "" {
		return nil
	}
	return []string{m.Status.NodeRef.Name}
}

func machineProviderID(m *machinev1beta1.Machine) string {
	if m.Spec.ProviderID == nil {
		return ""
	}
	return *m.Spec.ProviderID
}

// internalIPs returns the distinct InternalIP addresses, canonicalized, in
// the order they appear.
func internalIPs(addrs []corev1.NodeAddress) []string {
	var out []string
	seen := map[string]bool{}
	for _, a := range addrs {
		if a.Type != corev1.NodeInternalIP || a.Address == "" {
			continue
		}
		ip := CanonicalIP(a.Address)
		if !seen[ip] {
			seen[ip] = true
			out = append(out, ip)
		}
	}
	return out
}

// CanonicalIP returns the canonical text form of an IP address, so that
// "fd00:0::1" on a Machine and "fd00::1" on a Node match. Strings that are
// not IP addresses are returned unchanged.
func CanonicalIP(s string) string {
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return s
	}
	return ip.Unmap().WithZone("").String()
}
