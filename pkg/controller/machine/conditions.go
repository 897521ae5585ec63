package machine

import (
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// getCondition returns the condition of type t, or nil.
func getCondition(conds []machinev1beta1.Condition, t machinev1beta1.ConditionType) *machinev1beta1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// isConditionTrue reports whether the condition of type t is True.
func isConditionTrue(conds []machinev1beta1.Condition, t machinev1beta1.ConditionType) bool {
	c := getCondition(conds, t)
	return c != nil && c.Status == corev1.ConditionTrue
}

// newCondition builds a condition; severity is dropped unless status is False
// (the API allows it only then).
func newCondition(t machinev1beta1.ConditionType, status corev1.ConditionStatus, reason string, severity machinev1beta1.ConditionSeverity, message string) machinev1beta1.Condition {
	if status != corev1.ConditionFalse {
		severity = machinev1beta1.ConditionSeverityNone
	}
	return machinev1beta1.Condition{Type: t, Status: status, Reason: reason, Severity: severity, Message: message}
}

// setCondition sets c in conds and returns the new slice. lastTransitionTime
// becomes now when the status or the reason changes, and is kept otherwise (a
// message or severity change is not a transition). Using the reason as well
// as the status lets Drained=False/DrainInProgress record when the drain
// started even when it follows Drained=False/DrainBlocked.
func setCondition(conds []machinev1beta1.Condition, c machinev1beta1.Condition, now time.Time) []machinev1beta1.Condition {
	if existing := getCondition(conds, c.Type); existing != nil {
		if existing.Status == c.Status && existing.Reason == c.Reason {
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

// conditionChanged reports whether setting c would change the stored
// condition in a way users see as a transition (status or reason).
func conditionChanged(conds []machinev1beta1.Condition, c machinev1beta1.Condition) bool {
	existing := getCondition(conds, c.Type)
	return existing == nil || existing.Status != c.Status || existing.Reason != c.Reason
}
