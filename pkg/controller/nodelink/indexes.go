package nodelink

import (
	"context"
	"net/netip"
	"slices"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	kptr "k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/index"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/machinenode"
)

// Field indexes nodelink registers, with machinenode.IndexNodeProviderID; the "nodelink:" prefix lets another
// controller in the manager index the same field.
const (
	IndexNodeInternalIP    = "nodelink:node.status.addresses.internalIP" // canonical, see CanonicalIP
	IndexMachineProviderID = "nodelink:machine.spec.providerID"
	IndexMachineInternalIP = "nodelink:machine.status.addresses.internalIP"
)

// RegisterIndexes adds nodelink's field indexes to indexer before the cache starts.
func RegisterIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	return index.Register(ctx, indexer,
		index.Index{Object: &corev1.Node{}, Name: machinenode.IndexNodeProviderID, Extract: machinenode.NodeProviderIDIndex},
		index.Index{Object: &corev1.Node{}, Name: IndexNodeInternalIP, Extract: nodeInternalIPIndex},
		index.Index{Object: &machinev1beta1.Machine{}, Name: IndexMachineProviderID, Extract: machineProviderIDIndex},
		index.Index{Object: &machinev1beta1.Machine{}, Name: IndexMachineInternalIP, Extract: machineInternalIPIndex})
}

// indexOf adapts f to an IndexerFunc over T (nil for other types).
func indexOf[T client.Object](f func(T) []string) client.IndexerFunc {
	return func(o client.Object) []string {
		if t, ok := o.(T); ok {
			return f(t)
		}
		return nil
	}
}

var (
	nodeInternalIPIndex    = indexOf(func(n *corev1.Node) []string { return internalIPs(n.Status.Addresses) })
	machineProviderIDIndex = indexOf(func(m *machinev1beta1.Machine) []string { return nonEmpty(machineProviderID(m)) })
	machineInternalIPIndex = indexOf(func(m *machinev1beta1.Machine) []string { return internalIPs(m.Status.Addresses) })
)

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

func machineProviderID(m *machinev1beta1.Machine) string { return kptr.Deref(m.Spec.ProviderID, "") }

// internalIPs returns the distinct InternalIP addresses, canonical, in order.
func internalIPs(addrs []corev1.NodeAddress) []string {
	var out []string
	for _, a := range addrs {
		if ip := CanonicalIP(a.Address); a.Type == corev1.NodeInternalIP && a.Address != "" && !slices.Contains(out, ip) {
			out = append(out, ip)
		}
	}
	return out
}

// CanonicalIP returns an IP address's canonical form ("fd00:0::1" → "fd00::1"), other strings as they are.
func CanonicalIP(s string) string {
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return s
	}
	return ip.Unmap().WithZone("").String()
}
