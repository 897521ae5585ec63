// Package nodeutil reads and sets a Node's Ready condition (core types only,
// so every binary and test may import it).
package nodeutil

import corev1 "k8s.io/api/core/v1"

// ReadyCondition returns n's Ready condition (a pointer into n's status), or
// nil when n is nil or has none.
func ReadyCondition(n *corev1.Node) *corev1.NodeCondition {
	if n == nil {
		return nil
	}
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// IsReady reports whether n's Ready condition is True.
func IsReady(n *corev1.Node) bool {
	c := ReadyCondition(n)
	return c != nil && c.Status == corev1.ConditionTrue
}

// SetReadyCondition sets c as n's Ready condition (c's Type is ignored).
func SetReadyCondition(n *corev1.Node, c corev1.NodeCondition) {
	c.Type = corev1.NodeReady
	if cur := ReadyCondition(n); cur != nil {
		*cur = c
		return
	}
	n.Status.Conditions = append(n.Status.Conditions, c)
}
