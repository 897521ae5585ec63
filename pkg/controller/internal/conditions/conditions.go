// Package conditions gets and sets the conditions of Machine API objects
// (machine.openshift.io/v1beta1 Condition) with the convention of
// k8s.io/apimachinery's meta.SetStatusCondition: lastTransitionTime moves
// only when the status changes; a new reason, message or severity with the
// same status keeps it.
package conditions

import (
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// New builds a condition; the severity is dropped unless status is False
// (the API allows it only then).
func New(t machinev1beta1.ConditionType, status corev1.ConditionStatus, reason string, severity machinev1beta1.ConditionSeverity, message string) machinev1beta1.Condition {
	if status != corev1.ConditionFalse {
		severity = machinev1beta1.ConditionSeverityNone
	}
	return machinev1beta1.Condition{Type: t, Status: status, Reason: reason, Severity: severity, Message: message}
}

// Get returns the condition of type t, or nil. The pointer aliases conds.
func Get(conds []machinev1beta1.Condition, t machinev1beta1.ConditionType) *machinev1beta1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// IsTrue reports whether the condition of type t is True.
func IsTrue(conds []machinev1beta1.Condition, t machinev1beta1.ConditionType) bool {
	c := Get(conds, t)
	return c != nil && c.Status == corev1.ConditionTrue
}

// Set sets c in conds and returns the (possibly grown) slice. As
// meta.SetStatusCondition does, lastTransitionTime becomes now (truncated to
// the second, the API's precision) when the condition is new or its status
// changes, and is kept otherwise: a reason, message or severity change is not
// a transition. c.LastTransitionTime is ignored.
func Set(conds []machinev1beta1.Condition, c machinev1beta1.Condition, now time.Time) []machinev1beta1.Condition {
	existing := Get(conds, c.Type)
	if existing != nil && existing.Status == c.Status {
		c.LastTransitionTime = existing.LastTransitionTime
	} else {
		c.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
	}
	if existing != nil {
		*existing = c
		return conds
	}
	return append(conds, c)
}

// Remove returns conds without the condition of type t.
func Remove(conds []machinev1beta1.Condition, t machinev1beta1.ConditionType) []machinev1beta1.Condition {
	if Get(conds, t) == nil {
		return conds
	}
	out := make([]machinev1beta1.Condition, 0, len(conds)-1)
	for _, c := range conds {
		if c.Type != t {
			out = append(out, c)
		}
	}
	return out
}

// Changed reports whether setting c would change the status or the reason
// of the stored condition (or add it): what a user sees as a new state, and
// what events are recorded for. A message-only change is not one.
func Changed(conds []machinev1beta1.Condition, c machinev1beta1.Condition) bool {
	existing := Get(conds, c.Type)
	return existing == nil || existing.Status != c.Status || existing.Reason != c.Reason
}
