package patch

import (
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestStatusChanged: only the fields a manager owns count, and conditions compare by type, not by place.
// Breaks if: owned kept another manager's keys or conditions (a write whenever another writer wrote), or
// sameStatus compared the conditions list in order (a write after the server reordered it).
func TestStatusChanged(t *testing.T) {
	at := metav1.Unix(1000, 0)
	cond := func(typ, status string) machinev1beta1.Condition {
		return machinev1beta1.Condition{Type: machinev1beta1.ConditionType(typ), Status: corev1.ConditionStatus(status), LastTransitionTime: at}
	}
	f := Fields{Manager: "m", Keys: []string{"phase"}, Conditions: []string{"A", "B"}}
	base := &machinev1beta1.Machine{Status: machinev1beta1.MachineStatus{
		Phase:      ptr.To("Running"),
		Conditions: []machinev1beta1.Condition{cond("A", "True"), cond("X", "True"), cond("B", "False")},
	}}
	tests := []struct {
		name   string
		change func(*machinev1beta1.MachineStatus)
		want   bool
	}{
		{"nothing", func(*machinev1beta1.MachineStatus) {}, false},
		{"another's key", func(s *machinev1beta1.MachineStatus) { s.NodeRef = &corev1.ObjectReference{Name: "n"} }, false},
		{"another's condition", func(s *machinev1beta1.MachineStatus) { s.Conditions[1].Status = corev1.ConditionFalse }, false},
		{"own conditions reordered", func(s *machinev1beta1.MachineStatus) {
			s.Conditions[0], s.Conditions[2] = s.Conditions[2], s.Conditions[0]
		}, false},
		{"own key", func(s *machinev1beta1.MachineStatus) { s.Phase = ptr.To("Failed") }, true},
		{"own condition changed", func(s *machinev1beta1.MachineStatus) { s.Conditions[2].Status = corev1.ConditionTrue }, true},
		{"own condition removed", func(s *machinev1beta1.MachineStatus) { s.Conditions = s.Conditions[:2] }, true},
		{"own key removed", func(s *machinev1beta1.MachineStatus) { s.Phase = nil }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			desired := base.DeepCopy()
			tt.change(&desired.Status)
			got, err := StatusChanged(base, desired, f)
			if err != nil || got != tt.want {
				t.Errorf("StatusChanged = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	t.Run("All: every field", func(t *testing.T) {
		desired := base.DeepCopy()
		desired.Status.NodeRef = &corev1.ObjectReference{Name: "n"}
		if got, _ := StatusChanged(base, desired, Fields{Manager: "m", All: true}); !got {
			t.Error("a manager owning the whole status ignored a change")
		}
	})
	// Breaks if: a count of 0 were left out of the owned view (omitempty): another writer's count would stay.
	t.Run("a count of 0 is a value", func(t *testing.T) {
		counts := Fields{Manager: "m", Keys: []string{"availableReplicas"}}
		set := func(n int32) *machinev1beta1.MachineSet {
			return &machinev1beta1.MachineSet{Status: machinev1beta1.MachineSetStatus{AvailableReplicas: n}}
		}
		if got, _ := StatusChanged(set(2), set(0), counts); !got {
			t.Error("2 → 0: no change")
		}
		if got, _ := StatusChanged(set(0), set(0), counts); got {
			t.Error("0 → 0: a change")
		}
	})
}
