// Package machinefixture builds the Machines the decision tests of the
// delete order and of the MachineSet controller reason about (no API server).
package machinefixture

import (
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// T0 is the creation time of a Machine of age 0.
var T0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// Running returns a running Machine (it has a nodeRef) in namespace "ns",
// UID "uid-"+name, created at T0+ageHours, then mutated.
func Running(name string, ageHours int, mutate ...func(*machinev1beta1.Machine)) *machinev1beta1.Machine {
	m := &machinev1beta1.Machine{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(T0.Add(time.Duration(ageHours) * time.Hour)),
		},
		Status: machinev1beta1.MachineStatus{NodeRef: &corev1.ObjectReference{Kind: "Node", Name: "node-" + name}},
	}
	for _, f := range mutate {
		f(m)
	}
	return m
}

// Nodeless removes the Machine's nodeRef.
func Nodeless(m *machinev1beta1.Machine) { m.Status.NodeRef = nil }

// Deleting marks the Machine deleted at T0.
func Deleting(m *machinev1beta1.Machine) { m.DeletionTimestamp = &metav1.Time{Time: T0} }

// Names lists the Machines' names in order.
func Names(ms []*machinev1beta1.Machine) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}
