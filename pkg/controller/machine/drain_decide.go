package machine

// Pure decisions of the drain, table-tested (drain_decide_test.go, decide_test.go).

import (
	"fmt"
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
	drainBlocked drainAction = iota // do not start: Drained=False/DrainBlocked (preDrain hooks)
	drainSkip                       // Drained=True/DrainSkipped without touching the node
	drainRun                        // cordon and evict
)

// drainDecision is the outcome of decideDrain.
type drainDecision struct {
	Action  drainAction
	Message string
}

// decideDrain decides whether to drain the Machine's node (nil: no nodeRef or no Node). preDrain hooks
// come first, blocking even a skipped drain: the API says they "also block further lifecycle events".
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

// effectiveDrainTimeout is NodeDrainTimeoutAnnotation when present and valid, else def (0: wait
// forever); an invalid annotation also returns an error naming it.
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

// cordonedByUs reports whether we cordoned the node for a drain (unschedulable, DrainingAnnotation).
func cordonedByUs(n *corev1.Node) bool {
	_, ok := n.Annotations[DrainingAnnotation]
	return ok && n.Spec.Unschedulable
}

// controlPlaneDrainAllowed implements "one control-plane drain at a time". A node counts as drained by
// us when cordonedByUs and its annotation's Machine is in activeOwners (exists and is being deleted), so
// stale annotations and others' cordons block nothing. It returns the blocking node when not allowed.
func controlPlaneDrainAllowed(node *corev1.Node, nodes []corev1.Node, activeOwners map[string]bool) (bool, string) {
	drainedByUs := func(n *corev1.Node) bool {
		return cordonedByUs(n) && activeOwners[n.Annotations[DrainingAnnotation]]
	}
	if !isControlPlaneNode(node) || drainedByUs(node) {
		return true, ""
	}
	blocker := "" // the first by name, so the message is stable
	for i := range nodes {
		n := &nodes[i]
		if n.Name != node.Name && isControlPlaneNode(n) && drainedByUs(n) && n.DeletionTimestamp == nil &&
			(blocker == "" || n.Name < blocker) {
			blocker = n.Name
		}
	}
	return blocker == "", blocker
}

// nodeUnreachable reports whether the node's Ready condition is Unknown: pods cannot terminate gracefully.
func nodeUnreachable(n *corev1.Node) bool {
	c := nodeutil.ReadyCondition(n)
	return c != nil && c.Status == corev1.ConditionUnknown
}

// waitingForControlPlaneDrain reports whether a deleting Machine's drain waits for another control-plane node.
func waitingForControlPlaneDrain(m *machinev1beta1.Machine) bool {
	if m.DeletionTimestamp.IsZero() {
		return false
	}
	c := conditions.Get(m.Status.Conditions, DrainedCondition)
	return c != nil && c.Status == corev1.ConditionFalse && c.Reason == ReasonWaitingForControlPlaneDrain
}

// drainStartOf returns a deleting Machine's DrainStartedAnnotation when it parses and does not predate
// the deletion (an older value was copied from another object and would expire the timeout at once).
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
