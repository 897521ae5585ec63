// Package conditions gets and sets machine.openshift.io/v1beta1 conditions
// as meta.SetStatusCondition does: lastTransitionTime moves only with the status.
package conditions

import (
	"slices"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// New builds a condition; the severity is dropped unless status is False.
func New(t machinev1beta1.ConditionType, status corev1.ConditionStatus, reason string, severity machinev1beta1.ConditionSeverity, message string) machinev1beta1.Condition {
	if status != corev1.ConditionFalse {
		severity = machinev1beta1.ConditionSeverityNone
	}
	return machinev1beta1.Condition{Type: t, Status: status, Reason: reason, Severity: severity, Message: message}
}

// Has reports whether conds has c's type with c's status, reason and message.
func Has(conds []machinev1beta1.Condition, c machinev1beta1.Condition) bool {
	old := Get(conds, c.Type)
	return old != nil && old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message
}

// Get returns the condition of type t, or nil. The pointer aliases conds.
func Get(conds []machinev1beta1.Condition, t machinev1beta1.ConditionType) *machinev1beta1.Condition {
	if i := slices.IndexFunc(conds, func(c machinev1beta1.Condition) bool { return c.Type == t }); i >= 0 {
		return &conds[i]
	}
	return nil
}

// IsTrue reports whether the condition of type t is True.
func IsTrue(conds []machinev1beta1.Condition, t machinev1beta1.ConditionType) bool {
	c := Get(conds, t)
	return c != nil && c.Status == corev1.ConditionTrue
}

// Set sets c in conds and returns the (possibly grown) slice; lastTransitionTime becomes now (to the second)
// when the condition is new or its status changes, and is kept otherwise (c's is ignored).
func Set(conds []machinev1beta1.Condition, c machinev1beta1.Condition, now time.Time) []machinev1beta1.Condition {
	c.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
	existing := Get(conds, c.Type)
	if existing == nil {
		return append(conds, c)
	}
	if existing.Status == c.Status {
		c.LastTransitionTime = existing.LastTransitionTime
	}
	*existing = c
	return conds
}

// Remove returns conds without the condition of type t.
func Remove(conds []machinev1beta1.Condition, t machinev1beta1.ConditionType) []machinev1beta1.Condition {
	if Get(conds, t) == nil {
		return conds
	}
	return slices.DeleteFunc(slices.Clone(conds), func(c machinev1beta1.Condition) bool { return c.Type == t })
}

// Changed reports whether setting c would add the condition or change its
// status or reason (a new state, worth an event; a message is not).
func Changed(conds []machinev1beta1.Condition, c machinev1beta1.Condition) bool {
	existing := Get(conds, c.Type)
	return existing == nil || existing.Status != c.Status || existing.Reason != c.Reason
}
