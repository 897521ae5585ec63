package machinehealthcheck

import (
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func getCondition(conds []machinev1beta1.Condition, t machinev1beta1.ConditionType) *machinev1beta1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// newCondition builds a condition; the severity is kept only when status is
// False (the API allows it only then).
func newCondition(t machinev1beta1.ConditionType, status corev1.ConditionStatus, reason string, severity machinev1beta1.ConditionSeverity, message string) machinev1beta1.Condition {
	if status != corev1.ConditionFalse {
		severity = machinev1beta1.ConditionSeverityNone
	}
	return machinev1beta1.Condition{Type: t, Status: status, Reason: reason, Severity: severity, Message: message}
}

// setCondition sets c in conds like meta.SetStatusCondition: the
// lastTransitionTime becomes now only when the status changes.
func setCondition(conds []machinev1beta1.Condition, c machinev1beta1.Condition, now time.Time) []machinev1beta1.Condition {
	if existing := getCondition(conds, c.Type); existing != nil {
		if existing.Status == c.Status {
			c.LastTransitionTime = existing.LastTransitionTime
		} else {
			c.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
		}
		*existing = c
		return conds
	}
	c.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
	return append(conds, c)
}

// removeCondition drops the condition of type t.
func removeCondition(conds []machinev1beta1.Condition, t machinev1beta1.ConditionType) []machinev1beta1.Condition {
	out := conds[:0:0]
	for _, c := range conds {
		if c.Type != t {
			out = append(out, c)
		}
	}
	return out
}
