package machine

// Pure decisions of the drain: no API calls here, so each rule is covered by
// table tests (drain_decide_test.go, decide_test.go).

import (
	"fmt"
	"sort"
	"strings"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/nodeutil"
)

// drainAction is what the drain stage does.
type drainAction int

const (
	// drainBlocked: do not start; Drained=False/DrainBlocked (preDrain hooks).
	drainBlocked drainAction = iota
	// drainSkip: Drained=True/DrainSkipped without touching the node.
	drainSkip
	// drainRun: cordon and evict.
	drainRun
)

// drainDecision is the outcome of decideDrain.
type drainDecision struct {
	Action  drainAction
	Message string
}

// decideDrain decides whether to drain the Machine's node. node is nil when
// the Machine has no nodeRef or the Node does not exist.
//
// preDrain hooks block everything after them, including a skipped drain: the
// API documents that they "also block further lifecycle events, such as
// termination", so they are checked first (unlike upstream, which ignores
// them when the drain is skipped).
func decideDrain(m *machinev1beta1.Machine, node *corev1.Node) drainDecision {
	if hooks := m.Spec.LifecycleHooks.PreDrain; len(hooks) > 0 {
		return drainDecision{Action: drainBlocked, Message: "blocked by pre-drain hook(s): " + hookNames(hooks)}
	}
	if _, ok := m.Annotations[ExcludeNodeDrainingAnnotation]; ok {
		return drainDecision{Action: drainSkip, Message: fmt.Sprintf("node drain skipped: the Machine has the %s annotation", ExcludeNodeDrainingAnnotation)}
	}
	if m.Status.NodeRef == nil || m.Status.NodeRef.Name == "" {
		return drainDecision{Action: drainSkip, Message: "node drain skipped: the Machine has no node"}
	}
	if node == nil {
		return drainDecision{Action: drainSkip, Message: fmt.Sprintf("node drain skipped: node %q no longer exists", m.Status.NodeRef.Name)}
	}
	return drainDecision{Action: drainRun}
}

// effectiveDrainTimeout returns the drain timeout for a Machine: the
// NodeDrainTimeoutAnnotation when present and valid, else def. 0 means wait
// forever. An invalid annotation returns def and an error naming it.
func effectiveDrainTimeout(annotations map[string]string, def time.Duration) (time.Duration, error) {
	v, ok := annotations[NodeDrainTimeoutAnnotation]
	if !ok {
		return def, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil {
		return def, fmt.Errorf("invalid %s annotation %q: want a Go duration such as 90s, 20m or 1h (0 waits forever)", NodeDrainTimeoutAnnotation, v)
	}
	if d < 0 {
		return def, fmt.Errorf("invalid %s annotation %q: the duration must not be negative", NodeDrainTimeoutAnnotation, v)
	}
	return d, nil
}

// isControlPlaneNode reports whether the node has a control-plane role label.
func isControlPlaneNode(n *corev1.Node) bool {
	_, cp := n.Labels[ControlPlaneNodeRoleLabel]
	_, master := n.Labels[MasterNodeRoleLabel]
	return cp || master
}

// cordonedByUs reports whether the node was cordoned by the machine
// controller for a drain (unschedulable and carrying DrainingAnnotation).
func cordonedByUs(n *corev1.Node) bool {
	_, ok := n.Annotations[DrainingAnnotation]
	return ok && n.Spec.Unschedulable
}

// controlPlaneDrainAllowed implements "one control-plane drain at a time":
// a worker may always be drained; a control-plane node may be drained when
// it is already being drained by us, or when no other control-plane node is
// being drained by us. A node counts as being drained by us only when it is
// cordoned, carries DrainingAnnotation and the Machine the annotation names
// is in activeOwners (it exists and is being deleted): a stale annotation
// left by a Machine that is gone, or not deleting, does not block drains.
// Nodes cordoned by someone else (no DrainingAnnotation) do not count either.
// It returns the blocking node's name when not allowed.
func controlPlaneDrainAllowed(node *corev1.Node, nodes []corev1.Node, activeOwners map[string]bool) (bool, string) {
	drainedByUs := func(n *corev1.Node) bool {
		return cordonedByUs(n) && activeOwners[n.Annotations[DrainingAnnotation]]
	}
	if !isControlPlaneNode(node) || drainedByUs(node) {
		return true, ""
	}
	names := make([]string, 0, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		if n.Name == node.Name || !isControlPlaneNode(n) || !drainedByUs(n) || n.DeletionTimestamp != nil {
			continue
		}
		names = append(names, n.Name)
	}
	if len(names) == 0 {
		return true, ""
	}
	sort.Strings(names)
	return false, names[0]
}

// nodeUnreachable reports whether the node's Ready condition is Unknown (the
// kubelet stopped reporting): pods cannot terminate gracefully there.
func nodeUnreachable(n *corev1.Node) bool {
	c := nodeutil.ReadyCondition(n)
	return c != nil && c.Status == corev1.ConditionUnknown
}

// waitingForControlPlaneDrain reports whether a deleting Machine's drain waits
// for another control-plane node to finish draining: its Drained condition
// has reason WaitingForControlPlaneDrain.
func waitingForControlPlaneDrain(m *machinev1beta1.Machine) bool {
	if m.DeletionTimestamp.IsZero() {
		return false
	}
	c := conditions.Get(m.Status.Conditions, DrainedCondition)
	return c != nil && c.Status == corev1.ConditionFalse && c.Reason == ReasonWaitingForControlPlaneDrain
}

// drainStartOf returns when the drain of a deleting Machine started: its
// DrainStartedAnnotation, when that parses and does not predate the
// Machine's deletionTimestamp (a drain cannot start before the deletion: an
// older value was copied from another object and would expire the drain
// timeout at once).
func drainStartOf(m *machinev1beta1.Machine) (time.Time, bool) {
	v, ok := m.Annotations[DrainStartedAnnotation]
	if !ok || m.DeletionTimestamp.IsZero() {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil || t.Before(m.DeletionTimestamp.Truncate(time.Second)) {
		return time.Time{}, false
	}
	return t, true
}
