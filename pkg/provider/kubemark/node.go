package kubemark

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"maps"
	"net/netip"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubemarkv1alpha1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/kubemark/v1alpha1"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// Names the provider writes on Nodes.
const (
	// ProviderIDScheme is the scheme of a kubemark providerID (ProviderID).
	ProviderIDScheme = "kubemark"
	// KwokNodeAnnotation, set to KwokNodeAnnotationValue, asks kwok to keep the Node Ready and run its pods.
	KwokNodeAnnotation      = "kwok.x-k8s.io/node"
	KwokNodeAnnotationValue = "fake"
	// SimulatedUnhealthyAnnotation (value: the spell's start, RFC 3339) marks a Node the health simulation
	// keeps unhealthy; the provider undoes what it did only on Nodes carrying it.
	SimulatedUnhealthyAnnotation = "kubemark.machine-api-operator.io/simulated-unhealthy-since"
	// LeaseHolderIdentity holds an unhealthy Node's Lease, so that kwok stops renewing it and the Node.
	LeaseHolderIdentity = "machine-api-kubemark-provider"
	// ReadyReasonSimulatedUnhealthy is the reason of the Ready=Unknown condition of an unhealthy Node.
	ReadyReasonSimulatedUnhealthy = "KubemarkSimulatedUnhealthy"
	// InstanceType is the value of the node.kubernetes.io/instance-type label.
	InstanceType = "kubemark"
	// OwnerAnnotation is the ownership mark on each Node the provider registers: its Machine's
	// "<namespace>/<name>/<uid>" (provider.Owner). The orphan collection deletes only Nodes that carry it.
	OwnerAnnotation = "kubemark.machine-api-operator.io/owner"
)

// ProviderID returns the providerID of a kubemark Machine: kubemark://<namespace>/<name>.
func ProviderID(namespace, name string) string {
	return fmt.Sprintf("%s://%s/%s", ProviderIDScheme, namespace, name)
}

// nodeIPNetwork is where node InternalIPs are drawn from: loopback, away from the local cluster's ranges.
var nodeIPNetwork = netip.MustParsePrefix("127.128.0.0/9")

// NodeIP returns the attempt-th candidate InternalIP of the Node of the Machine namespace/name: a stable
// function of its arguments, inside 127.128.0.0/9, never ending in .0 or .255.
func NodeIP(namespace, name string, attempt int) netip.Addr {
	h := fnv.New64a()
	_, _ = fmt.Fprintf(h, "%s/%s#%d", namespace, name, attempt) // a hash never fails a write
	sum := h.Sum64()
	const blocks = 1 << (32 - 9 - 8) // /24 blocks in a /9
	block := uint32(sum % blocks)
	host := uint32((sum/blocks)%254) + 1 // 1..254
	base := nodeIPNetwork.Addr().As4()
	ip := binary.BigEndian.Uint32(base[:]) + block<<8 + host
	return netip.AddrFrom4([4]byte(binary.BigEndian.AppendUint32(nil, ip)))
}

// maxIPAttempts bounds the search for a free InternalIP.
const maxIPAttempts = 1000

// pickNodeIP returns the first candidate IP for the Machine that is not used.
func pickNodeIP(namespace, name string, used func(ip string) (bool, error)) (netip.Addr, error) {
	for attempt := range maxIPAttempts {
		ip := NodeIP(namespace, name, attempt)
		inUse, err := used(ip.String())
		if err != nil {
			return netip.Addr{}, err
		}
		if !inUse {
			return ip, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("no free InternalIP for node %q after %d candidates in %s", name, maxIPAttempts, nodeIPNetwork)
}

// nodeLabels are the Machine's node labels (nodelink keeps them in sync later) and a kubelet's, which win.
func nodeLabels(m *machinev1beta1.Machine) map[string]string {
	labels := map[string]string{}
	maps.Copy(labels, m.Spec.Labels)
	maps.Copy(labels, map[string]string{
		corev1.LabelHostname:           m.Name,
		corev1.LabelOSStable:           "linux",
		corev1.LabelArchStable:         "amd64",
		corev1.LabelInstanceTypeStable: InstanceType,
	})
	return labels
}

// newNode returns the Node to register for the Machine; a ready one with a ready kubelet's conditions, so the
// node controllers have no not-ready taint to add and remove.
func newNode(m *machinev1beta1.Machine, spec *kubemarkv1alpha1.KubemarkMachineProviderSpec, ip netip.Addr, ready bool, now time.Time) *corev1.Node {
	resources := corev1.ResourceList{
		corev1.ResourceCPU:    spec.CPU.DeepCopy(),
		corev1.ResourceMemory: spec.Memory.DeepCopy(),
		corev1.ResourcePods:   spec.Pods.DeepCopy(),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        m.Name,
			Labels:      nodeLabels(m),
			Annotations: map[string]string{KwokNodeAnnotation: KwokNodeAnnotationValue, OwnerAnnotation: provider.OwnerOf(m).String()},
		},
		Spec: corev1.NodeSpec{ProviderID: ProviderID(m.Namespace, m.Name)},
		Status: corev1.NodeStatus{
			Capacity:    resources,
			Allocatable: resources.DeepCopy(),
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: ip.String()},
				{Type: corev1.NodeHostName, Address: m.Name},
			},
			NodeInfo:   corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "amd64"},
			Conditions: registrationConditions(ready, now),
		},
	}
}

// registrationConditions are the conditions a ready kubelet registers with; none for a node not ready.
func registrationConditions(ready bool, now time.Time) []corev1.NodeCondition {
	if !ready {
		return nil
	}
	at := metav1.NewTime(now.UTC().Truncate(time.Second))
	cond := func(t corev1.NodeConditionType, status corev1.ConditionStatus, reason, message string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: status, Reason: reason, Message: message, LastHeartbeatTime: at, LastTransitionTime: at}
	}
	return []corev1.NodeCondition{
		cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
	}
}

// machineAddresses are the Node's InternalIPs and Hostnames, in the Node's order.
func machineAddresses(node *corev1.Node) []corev1.NodeAddress {
	var out []corev1.NodeAddress
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP || a.Type == corev1.NodeHostName {
			out = append(out, a)
		}
	}
	return out
}

// IndexNodeInternalIP is the field index (on Nodes) of every InternalIP that an Actuator's NodeReader carries.
const IndexNodeInternalIP = "kubemark:node.status.addresses.internalIP"

// RegisterIndexes adds IndexNodeInternalIP to indexer (a manager's GetFieldIndexer()) before the cache starts.
func RegisterIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	err := indexer.IndexField(ctx, &corev1.Node{}, IndexNodeInternalIP, func(o client.Object) []string {
		if n, ok := o.(*corev1.Node); ok {
			return internalIPs(n)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("indexing Nodes by InternalIP: %w", err)
	}
	return nil
}

// internalIPs are the Node's InternalIP addresses.
func internalIPs(n *corev1.Node) []string {
	var ips []string
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && a.Address != "" {
			ips = append(ips, a.Address)
		}
	}
	return ips
}
