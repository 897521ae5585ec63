package nodeutil

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func node(conds ...corev1.NodeCondition) *corev1.Node {
	n := &corev1.Node{}
	n.Status.Conditions = conds
	return n
}

func TestReady(t *testing.T) {
	pressure := corev1.NodeCondition{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue}
	ready := func(s corev1.ConditionStatus) corev1.NodeCondition {
		return corev1.NodeCondition{Type: corev1.NodeReady, Status: s, Reason: "r"}
	}
	for _, tc := range []struct {
		name      string
		node      *corev1.Node
		want      *corev1.NodeCondition
		wantReady bool
	}{
		{name: "nil node"},
		{name: "no conditions", node: node()},
		{name: "other conditions only", node: node(pressure)},
		{name: "ready", node: node(pressure, ready(corev1.ConditionTrue)), want: &corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "r"}, wantReady: true},
		{name: "not ready", node: node(ready(corev1.ConditionFalse)), want: &corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "r"}},
		{name: "unknown", node: node(ready(corev1.ConditionUnknown), pressure), want: &corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "r"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ReadyCondition(tc.node)
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Errorf("ReadyCondition = %+v, want %+v", got, tc.want)
			}
			if IsReady(tc.node) != tc.wantReady {
				t.Errorf("IsReady = %v, want %v", !tc.wantReady, tc.wantReady)
			}
		})
	}
}

func TestReadyConditionPointsIntoTheNode(t *testing.T) {
	n := node(corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse})
	ReadyCondition(n).Status = corev1.ConditionTrue
	if !IsReady(n) {
		t.Error("a change through the returned pointer is not seen on the node")
	}
}

func TestSetReadyCondition(t *testing.T) {
	pressure := corev1.NodeCondition{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue}
	n := node(pressure)
	SetReadyCondition(n, corev1.NodeCondition{Status: corev1.ConditionTrue})
	if len(n.Status.Conditions) != 2 || !IsReady(n) {
		t.Fatalf("added: %+v", n.Status.Conditions)
	}
	SetReadyCondition(n, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "gone"})
	if len(n.Status.Conditions) != 2 || n.Status.Conditions[0] != pressure || ReadyCondition(n).Reason != "gone" {
		t.Fatalf("replaced: %+v", n.Status.Conditions)
	}
}
