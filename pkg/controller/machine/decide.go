package machine

// Pure decisions, table-tested (decide_test.go, drain_decide_test.go): no API calls here.

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/nodeutil"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// provisioningStep is what to do with a Machine that is not being deleted, once Exists answered.
type provisioningStep struct {
	Phase           string
	Create          bool // call Actuator.Create
	Update          bool // call Actuator.Update
	InstanceMissing bool // a provisioned instance disappeared: the Machine fails
}

// decideProvisioning maps (phase, Exists, provisioned, nodeRef) to the next step; a phase never goes
// back from Running. Failed is terminal and handled before this is called.
func decideProvisioning(phase string, exists, provisioned, hasNodeRef bool) provisioningStep {
	switch {
	case exists && provisioned && (hasNodeRef || phase == machinev1beta1.PhaseRunning):
		return provisioningStep{Phase: machinev1beta1.PhaseRunning, Update: true}
	case exists && provisioned:
		return provisioningStep{Phase: machinev1beta1.PhaseProvisioned, Update: true}
	case exists:
		return provisioningStep{Phase: cmp.Or(phase, machinev1beta1.PhaseProvisioning), Update: true}
	case provisioned:
		return provisioningStep{Phase: machinev1beta1.PhaseFailed, InstanceMissing: true}
	default:
		return provisioningStep{Phase: machinev1beta1.PhaseProvisioning, Create: true}
	}
}

// providerVerdict is what a provider call's error does to a Machine that is not being deleted.
type providerVerdict int

const (
	verdictOK             providerVerdict = iota // no error
	verdictFail                                  // terminal: phase Failed, errorReason/errorMessage from the error
	verdictWait                                  // a provider.RequeueAfterError: a provider-side wait, conditions stay
	verdictRejectedUpdate                        // Update refused the configuration: ProviderUpdated=False, no retry
	verdictRetry                                 // retried with backoff
)

// decideProviderError maps the error of Create, Update or Exists (op) to a verdict; provisioned: the
// provider reported the instance before. A terminal failure wins over every other reading of the error.
func decideProviderError(op string, err error, provisioned bool) providerVerdict {
	invalid := provider.IsInvalidConfiguration(err)
	_, wait := provider.AsRequeueAfter(err)
	switch {
	case err == nil:
		return verdictOK
	case isTerminal(err):
		return verdictFail
	case invalid && (op == OperationCreate || op == OperationExists && !provisioned):
		return verdictFail // retrying cannot help a providerSpec the provider cannot read
	case invalid && op == OperationUpdate:
		return verdictRejectedUpdate // the instance exists: not Failed; only a spec change can help
	case wait:
		return verdictWait
	default:
		return verdictRetry
	}
}

// phaseAfterCreate is the phase once Create succeeded, and whether the instance counts as existing.
func phaseAfterCreate(provisioned, hasNodeRef bool) (phase string, exists bool) {
	if !provisioned {
		return machinev1beta1.PhaseProvisioning, false
	}
	return decideProvisioning(machinev1beta1.PhaseProvisioning, true, true, hasNodeRef).Phase, true
}

// deletionStage is the next stage of the deletion pipeline.
type deletionStage int

const (
	stageDrain            deletionStage = iota // Drained is not True yet
	stageWaitPreTerminate                      // drained; preTerminate hooks hold the instance
	stageDeleteInstance                        // Delete, wait for Exists=false, delete the Node, remove the finalizer
)

// decideDeletionStage returns where a deleting Machine is in the pipeline.
func decideDeletionStage(m *machinev1beta1.Machine) deletionStage {
	if !conditions.IsTrue(m.Status.Conditions, DrainedCondition) {
		return stageDrain
	}
	if len(m.Spec.LifecycleHooks.PreTerminate) > 0 {
		return stageWaitPreTerminate
	}
	return stageDeleteInstance
}

// hookNames lists hook names as "a (owner x), b (owner y)".
func hookNames(hooks []machinev1beta1.LifecycleHook) string {
	parts := make([]string, len(hooks))
	for i, h := range hooks {
		parts[i] = fmt.Sprintf("%s (owner %s)", h.Name, h.Owner)
	}
	return strings.Join(parts, ", ")
}

// hookConditions computes Drainable and Terminable from the lifecycle hooks.
func hookConditions(hooks machinev1beta1.LifecycleHooks) (drainable, terminable machinev1beta1.Condition) {
	cond := func(t machinev1beta1.ConditionType, hs []machinev1beta1.LifecycleHook, msg string) machinev1beta1.Condition {
		if len(hs) == 0 {
			return conditions.New(t, corev1.ConditionTrue, ReasonNoHooks, "", "")
		}
		return conditions.New(t, corev1.ConditionFalse, ReasonHookPresent, machinev1beta1.ConditionSeverityWarning,
			msg+hookNames(hs))
	}
	return cond(DrainableCondition, hooks.PreDrain, "drain is blocked by pre-drain hook(s): "),
		cond(TerminableCondition, hooks.PreTerminate, "termination is blocked by pre-terminate hook(s): ")
}

// drainAction is what the drain stage does.
type drainAction int

const (
	drainBlocked drainAction = iota // do not start: Drained=False/DrainBlocked (preDrain hooks)
	drainSkip                       // Drained=True/DrainSkipped without touching the node
	drainRun                        // cordon and evict
)

type drainDecision struct {
	Action  drainAction
	Message string
}

// decideDrain decides whether to drain; preDrain hooks "also block further lifecycle events", even a skip.
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

// effectiveDrainTimeout is NodeDrainTimeoutAnnotation when valid, else def and, if invalid, an error.
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

// controlPlaneDrainAllowed implements "one control-plane drain at a time", or returns the blocking node.
// Stale annotations (activeOwners: the Machine exists and is being deleted) and others' cordons block nothing.
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
	c := conditions.Get(m.Status.Conditions, DrainedCondition)
	return !m.DeletionTimestamp.IsZero() && c != nil && c.Status == corev1.ConditionFalse &&
		c.Reason == ReasonWaitingForControlPlaneDrain
}

// drainStartOf returns DrainStartedAnnotation unless it predates the deletion (copied from another object).
func drainStartOf(m *machinev1beta1.Machine) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339, m.Annotations[DrainStartedAnnotation])
	if err != nil || m.DeletionTimestamp.IsZero() || t.Before(m.DeletionTimestamp.Truncate(time.Second)) {
		return time.Time{}, false
	}
	return t, true
}
