package updates

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func TestMatter(t *testing.T) {
	p := Matter(func(o, n *corev1.Node) bool { return o.Spec.Unschedulable != n.Spec.Unschedulable })
	cordoned := &corev1.Node{Spec: corev1.NodeSpec{Unschedulable: true}}
	tests := []struct {
		name     string
		old, new client.Object
		want     bool
	}{
		{"change that matters", &corev1.Node{}, cordoned, true},
		{"change that does not", &corev1.Node{}, &corev1.Node{}, false},
		{"other types pass", &corev1.Pod{}, &corev1.Pod{}, true},
	}
	for _, tt := range tests {
		if got := p.Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new}); got != tt.want {
			t.Errorf("%s: Update = %v, want %v", tt.name, got, tt.want)
		}
	}
	if !p.Create(event.CreateEvent{Object: cordoned}) || !p.Delete(event.DeleteEvent{Object: cordoned}) {
		t.Error("creations and deletions must pass")
	}
}
