package machinenode

import (
	"context"
	"slices"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
)

// TestMachinesOfNode: the Machines whose nodeRef names the Node, and the one its annotation names, only
// in the namespace asked for. Breaks if: the annotation's namespace is not checked against namespace
// (ns2/annotated would be returned for "ns").
func TestMachinesOfNode(t *testing.T) {
	machine := func(ns, name, nodeRef string) client.Object {
		m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if nodeRef != "" {
			m.Status.NodeRef = &corev1.ObjectReference{Kind: "Node", Name: nodeRef}
		}
		return m
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).
		WithIndex(&machinev1beta1.Machine{}, NodeRefNameField, machineNodeRefName).
		WithObjects(machine("ns", "linked", "n1"), machine("ns", "other-node", "n2"), machine("ns2", "linked", "n1"),
			machine("ns", "annotated", ""), machine("ns2", "annotated", "")).
		Build()
	node := func(annotation string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{MachineAnnotation: annotation}}}
	}
	tests := []struct {
		name, namespace, annotation string
		want                        []string
	}{
		{"nodeRef and annotation", "ns", "ns/annotated", []string{"ns/annotated", "ns/linked"}},
		{"an annotation of another namespace", "ns", "ns2/annotated", []string{"ns/linked"}},
		{"every namespace", "", "ns2/annotated", []string{"ns/linked", "ns2/annotated", "ns2/linked"}},
		{"a malformed annotation", "ns", "annotated", []string{"ns/linked"}},
		{"an annotation naming no Machine", "ns", "ns/gone", []string{"ns/linked"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, m := range MachinesOfNode(context.Background(), c, tt.namespace, node(tt.annotation)) {
				got = append(got, m.Namespace+"/"+m.Name)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("MachinesOfNode = %v, want %v", got, tt.want)
			}
		})
	}
}
