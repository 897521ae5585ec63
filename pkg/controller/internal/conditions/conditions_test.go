package conditions

import (
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const typ machinev1beta1.ConditionType = "Drained"

// Set follows meta.SetStatusCondition: only a status change (or a new
// condition) moves lastTransitionTime.
func TestSet(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	t1 := t0.Add(time.Minute)
	stored := []machinev1beta1.Condition{{Type: typ, Status: corev1.ConditionFalse, Reason: "A", Message: "m",
		Severity: machinev1beta1.ConditionSeverityInfo, LastTransitionTime: metav1.NewTime(t0.Truncate(time.Second))}}
	tests := []struct {
		name     string
		conds    []machinev1beta1.Condition
		set      machinev1beta1.Condition
		wantTime time.Time
	}{
		{"new condition", nil, New(typ, corev1.ConditionFalse, "A", "", "m"), t1.Truncate(time.Second)},
		{"same everything", stored, New(typ, corev1.ConditionFalse, "A", machinev1beta1.ConditionSeverityInfo, "m"), t0.Truncate(time.Second)},
		{"message change", stored, New(typ, corev1.ConditionFalse, "A", machinev1beta1.ConditionSeverityInfo, "other"), t0.Truncate(time.Second)},
		{"reason change", stored, New(typ, corev1.ConditionFalse, "B", machinev1beta1.ConditionSeverityWarning, "m"), t0.Truncate(time.Second)},
		{"status change", stored, New(typ, corev1.ConditionTrue, "A", "", "m"), t1.Truncate(time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]machinev1beta1.Condition(nil), tt.conds...)
			out := Set(in, tt.set, t1)
			if len(out) != 1 {
				t.Fatalf("conditions = %+v", out)
			}
			got := out[0]
			if !got.LastTransitionTime.Time.Equal(tt.wantTime) {
				t.Errorf("lastTransitionTime = %v, want %v", got.LastTransitionTime.Time, tt.wantTime)
			}
			if got.Status != tt.set.Status || got.Reason != tt.set.Reason || got.Message != tt.set.Message || got.Severity != tt.set.Severity {
				t.Errorf("stored %+v, want the fields of %+v", got, tt.set)
			}
		})
	}
}

func TestChanged(t *testing.T) {
	conds := []machinev1beta1.Condition{New(typ, corev1.ConditionFalse, "A", "", "m")}
	tests := []struct {
		name string
		c    machinev1beta1.Condition
		want bool
	}{
		{"message only", New(typ, corev1.ConditionFalse, "A", "", "other"), false},
		{"reason", New(typ, corev1.ConditionFalse, "B", "", "m"), true},
		{"status", New(typ, corev1.ConditionTrue, "A", "", "m"), true},
		{"absent", New("Other", corev1.ConditionTrue, "A", "", "m"), true},
	}
	for _, tt := range tests {
		if got := Changed(conds, tt.c); got != tt.want {
			t.Errorf("%s: Changed = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestNewDropsSeverityUnlessFalse(t *testing.T) {
	if c := New(typ, corev1.ConditionTrue, "A", machinev1beta1.ConditionSeverityWarning, ""); c.Severity != machinev1beta1.ConditionSeverityNone {
		t.Errorf("True kept severity %q", c.Severity)
	}
	if c := New(typ, corev1.ConditionFalse, "A", machinev1beta1.ConditionSeverityWarning, ""); c.Severity != machinev1beta1.ConditionSeverityWarning {
		t.Errorf("False lost severity: %q", c.Severity)
	}
}

func TestRemoveAndIsTrue(t *testing.T) {
	conds := []machinev1beta1.Condition{New("A", corev1.ConditionTrue, "r", "", ""), New("B", corev1.ConditionFalse, "r", "", "")}
	if !IsTrue(conds, "A") || IsTrue(conds, "B") || IsTrue(conds, "C") {
		t.Errorf("IsTrue wrong on %+v", conds)
	}
	out := Remove(conds, "A")
	if len(out) != 1 || out[0].Type != "B" || len(conds) != 2 {
		t.Errorf("Remove: %+v (input %+v)", out, conds)
	}
	if got := Remove(out, "missing"); len(got) != 1 {
		t.Errorf("Remove of an absent type: %+v", got)
	}
}
