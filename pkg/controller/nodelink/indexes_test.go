package nodelink

import (
	"reflect"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/machinenode"
)

func addrs(pairs ...string) []corev1.NodeAddress {
	var out []corev1.NodeAddress
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, corev1.NodeAddress{Type: corev1.NodeAddressType(pairs[i]), Address: pairs[i+1]})
	}
	return out
}

func TestIndexFuncs(t *testing.T) {
	node := func(providerID string, a []corev1.NodeAddress) *corev1.Node {
		n := &corev1.Node{}
		n.Spec.ProviderID = providerID
		n.Status.Addresses = a
		return n
	}
	machine := func(providerID *string, a []corev1.NodeAddress, ref *corev1.ObjectReference) *machinev1beta1.Machine {
		m := &machinev1beta1.Machine{}
		m.Spec.ProviderID = providerID
		m.Status.Addresses = a
		m.Status.NodeRef = ref
		return m
	}
	dual := addrs("InternalIP", "10.0.0.1", "ExternalIP", "1.2.3.4", "Hostname", "h", "InternalIP", "fd00:0:0::1", "InternalIP", "10.0.0.1", "InternalIP", "")
	for _, tc := range []struct {
		name string
		fn   client.IndexerFunc
		obj  client.Object
		want []string
	}{
		{"node providerID", machinenode.NodeProviderIDIndex, node("p://1", nil), []string{"p://1"}},
		{"node empty providerID", machinenode.NodeProviderIDIndex, node("", nil), nil},
		{"node IPs: internal only, canonical, distinct, non-empty", nodeInternalIPIndex, node("", dual), []string{"10.0.0.1", "fd00::1"}},
		{"node no addresses", nodeInternalIPIndex, node("", nil), nil},
		{"machine providerID", machineProviderIDIndex, machine(ptr("p://1"), nil, nil), []string{"p://1"}},
		{"machine nil providerID", machineProviderIDIndex, machine(nil, nil, nil), nil},
		{"machine empty providerID", machineProviderIDIndex, machine(ptr(""), nil, nil), nil},
		{"machine IPs", machineInternalIPIndex, machine(nil, dual, nil), []string{"10.0.0.1", "fd00::1"}},
		{"wrong type", machineProviderIDIndex, node("p://1", nil), nil},
		{"wrong type for node", nodeInternalIPIndex, machine(nil, dual, nil), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.fn(tc.obj); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCanonicalIP(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.1":             "10.0.0.1",
		"FD00:0:0::0001":       "fd00::1",
		"::ffff:10.0.0.1":      "10.0.0.1",
		"not-an-ip":            "not-an-ip",
		"2001:db8:0:0:0:0:2:1": "2001:db8::2:1",
	} {
		if got := CanonicalIP(in); got != want {
			t.Errorf("CanonicalIP(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUpdatePredicates(t *testing.T) {
	baseNode := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"a": "1"}}}
	baseNode.Status.Addresses = addrs("InternalIP", "10.0.0.1")
	nodeWith := func(f func(*corev1.Node)) *corev1.Node { n := baseNode.DeepCopy(); f(n); return n }
	for _, tc := range []struct {
		name string
		new  *corev1.Node
		want bool
	}{
		{"heartbeat only", nodeWith(func(n *corev1.Node) {
			n.ResourceVersion = "2"
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		}), false},
		{"label", nodeWith(func(n *corev1.Node) { n.Labels["b"] = "2" }), true},
		{"annotation", nodeWith(func(n *corev1.Node) { n.Annotations = map[string]string{"x": "y"} }), true},
		{"taint", nodeWith(func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{taint("t", "", noSched)} }), true},
		{"providerID", nodeWith(func(n *corev1.Node) { n.Spec.ProviderID = "p://1" }), true},
		{"second IP", nodeWith(func(n *corev1.Node) { n.Status.Addresses = addrs("InternalIP", "10.0.0.1", "InternalIP", "fd00::1") }), true},
		{"external IP only", nodeWith(func(n *corev1.Node) { n.Status.Addresses = addrs("InternalIP", "10.0.0.1", "ExternalIP", "1.1.1.1") }), false},
		{"deleting", nodeWith(func(n *corev1.Node) { n.DeletionTimestamp = &metav1.Time{} }), true},
	} {
		t.Run("node "+tc.name, func(t *testing.T) {
			if got := nodeChanged(baseNode, tc.new); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}

	baseMachine := testMachine(map[string]string{"a": "1"}, nil)
	machineWith := func(f func(*machinev1beta1.Machine)) *machinev1beta1.Machine {
		m := baseMachine.DeepCopy()
		f(m)
		return m
	}
	for _, tc := range []struct {
		name string
		new  *machinev1beta1.Machine
		want bool
	}{
		{"phase and lastUpdated", machineWith(func(m *machinev1beta1.Machine) {
			m.Status.Phase = ptr("Running")
			m.Status.LastUpdated = &metav1.Time{}
		}), false},
		{"object labels only", machineWith(func(m *machinev1beta1.Machine) { m.Labels = map[string]string{"x": "y"} }), false},
		{"spec label", machineWith(func(m *machinev1beta1.Machine) { m.Spec.ObjectMeta.Labels["b"] = "2" }), true},
		{"spec annotation", machineWith(func(m *machinev1beta1.Machine) { m.Spec.ObjectMeta.Annotations = map[string]string{"b": "2"} }), true},
		{"taint", machineWith(func(m *machinev1beta1.Machine) { m.Spec.Taints = []corev1.Taint{taint("t", "", noSched)} }), true},
		{"providerID", machineWith(func(m *machinev1beta1.Machine) { m.Spec.ProviderID = ptr("p://1") }), true},
		{"address", machineWith(func(m *machinev1beta1.Machine) { m.Status.Addresses = addrs("InternalIP", "10.0.0.2") }), true},
		{"nodeRef", machineWith(func(m *machinev1beta1.Machine) { m.Status.NodeRef = &corev1.ObjectReference{Name: "n"} }), true},
		{"deleting", machineWith(func(m *machinev1beta1.Machine) { m.DeletionTimestamp = &metav1.Time{} }), true},
	} {
		t.Run("machine "+tc.name, func(t *testing.T) {
			if got := machineChanged(baseMachine, tc.new); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
