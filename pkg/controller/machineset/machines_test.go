package machineset

// Machines for the decision tests (the delete order's own tests are in internal/deletepolicy).

import (
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// mk returns a running Machine (it has a nodeRef) created at t0+age hours.
func mk(name string, ageHours int, mutate ...func(*machinev1beta1.Machine)) *machinev1beta1.Machine {
	m := &machinev1beta1.Machine{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(ageHours) * time.Hour)),
		},
		Status: machinev1beta1.MachineStatus{NodeRef: &corev1.ObjectReference{Kind: "Node", Name: "node-" + name}},
	}
	for _, f := range mutate {
		f(m)
	}
	return m
}

func nodeless(m *machinev1beta1.Machine) { m.Status.NodeRef = nil }
func deleting(m *machinev1beta1.Machine) {
	m.DeletionTimestamp = &metav1.Time{Time: t0}
}

func names(ms []*machinev1beta1.Machine) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}
