// Package nodeutil reads and sets a Node's Ready condition, and tells a control-plane Node and its etcd
// quorum guard (core types only, so every binary and test may import it).
package nodeutil

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

const (
	// ControlPlaneNodeRoleLabel marks control-plane nodes.
	ControlPlaneNodeRoleLabel = "node-role.kubernetes.io/control-plane"
	// MasterNodeRoleLabel marks control-plane nodes too (the older name).
	MasterNodeRoleLabel = "node-role.kubernetes.io/master"
	// EtcdNamespace holds the etcd quorum guard pods and PodDisruptionBudget(s) on OpenShift.
	EtcdNamespace = "openshift-etcd"
)

// IsControlPlane reports whether n has either control-plane role label.
func IsControlPlane(n *corev1.Node) bool {
	_, cp := n.Labels[ControlPlaneNodeRoleLabel]
	_, master := n.Labels[MasterNodeRoleLabel]
	return cp || master
}

// GuardPodReady is medik8s's readiness of an etcd guard pod: a Ready condition True or Unknown (about
// to be ready counts, to be safe). Without one the node counts as disrupted already, and disrupting it
// again costs etcd no quorum.
func GuardPodReady(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && (c.Status == corev1.ConditionTrue || c.Status == corev1.ConditionUnknown)
	})
}

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
