package machine

// Pure decision logic of the machine controller: no API calls here, so each
// rule is covered by table tests (decide_test.go).

import (
	"fmt"
	"sort"
	"strings"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// isProvisioned reports whether the provider has ever reported an instance
// for the Machine: it has a providerID or addresses.
func isProvisioned(m *machinev1beta1.Machine) bool {
	return (m.Spec.ProviderID != nil && *m.Spec.ProviderID != "") || len(m.Status.Addresses) > 0
}

// provisioningStep is what to do with a Machine that is not being deleted,
// once the provider has answered Exists.
type provisioningStep struct {
	// Phase is the phase the Machine should have.
	Phase string
	// Create: call Actuator.Create (the instance does not exist yet).
	Create bool
	// Update: call Actuator.Update (the instance exists).
	Update bool
	// InstanceMissing: a provisioned instance disappeared; the Machine fails.
	InstanceMissing bool
}

// decideProvisioning maps (current phase, Exists answer, provisioned, nodeRef)
// to the next step. Failed is terminal and handled before this is called.
//
//	exists  provisioned  nodeRef → phase
//	yes     yes          yes       Running
//	yes     yes          no        Provisioned
//	yes     no           -         current phase (Provisioning when empty); Update fills providerID/addresses
//	no      yes          -         Failed (InstanceMissing)
//	no      no           -         Provisioning, then Create
func decideProvisioning(phase string, exists, provisioned, hasNodeRef bool) provisioningStep {
	switch {
	case exists && provisioned && hasNodeRef:
		return provisioningStep{Phase: machinev1beta1.PhaseRunning, Update: true}
	case exists && provisioned:
		return provisioningStep{Phase: machinev1beta1.PhaseProvisioned, Update: true}
	case exists:
		if phase == "" {
			phase = machinev1beta1.PhaseProvisioning
		}
		return provisioningStep{Phase: phase, Update: true}
	case provisioned:
		return provisioningStep{Phase: machinev1beta1.PhaseFailed, InstanceMissing: true}
	default:
		return provisioningStep{Phase: machinev1beta1.PhaseProvisioning, Create: true}
	}
}

// phaseAfterUpdate is the phase once Update ran: Update may have set the
// providerID/addresses that make the instance provisioned.
func phaseAfterUpdate(current string, provisioned, hasNodeRef bool) string {
	return decideProvisioning(current, true, provisioned, hasNodeRef).Phase
}

// deletionStage is the next stage of the deletion pipeline.
type deletionStage int

const (
	// stageDrain: the Drained condition is not True yet.
	stageDrain deletionStage = iota
	// stageWaitPreTerminate: drained, but preTerminate hooks hold the instance.
	stageWaitPreTerminate
	// stageDeleteInstance: call Delete, wait for Exists=false, delete the
	// Node, remove the finalizer.
	stageDeleteInstance
)

func (s deletionStage) String() string {
	switch s {
	case stageDrain:
		return "Drain"
	case stageWaitPreTerminate:
		return "WaitPreTerminate"
	default:
		return "DeleteInstance"
	}
}

// decideDeletionStage returns where a deleting Machine is in the pipeline.
func decideDeletionStage(m *machinev1beta1.Machine) deletionStage {
	if !isConditionTrue(m.Status.Conditions, DrainedCondition) {
		return stageDrain
	}
	if len(m.Spec.LifecycleHooks.PreTerminate) > 0 {
		return stageWaitPreTerminate
	}
	return stageDeleteInstance
}

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
	drainable = newCondition(DrainableCondition, corev1.ConditionTrue, ReasonNoHooks, "", "")
	if len(hooks.PreDrain) > 0 {
		drainable = newCondition(DrainableCondition, corev1.ConditionFalse, ReasonHookPresent, machinev1beta1.ConditionSeverityWarning,
			"drain is blocked by pre-drain hook(s): "+hookNames(hooks.PreDrain))
	}
	terminable = newCondition(TerminableCondition, corev1.ConditionTrue, ReasonNoHooks, "", "")
	if len(hooks.PreTerminate) > 0 {
		terminable = newCondition(TerminableCondition, corev1.ConditionFalse, ReasonHookPresent, machinev1beta1.ConditionSeverityWarning,
			"termination is blocked by pre-terminate hook(s): "+hookNames(hooks.PreTerminate))
	}
	return drainable, terminable
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

// controlPlaneWaitPrefix starts the Drained message of a Machine waiting for
// another control-plane drain; waitingForControlPlaneDrain matches it.
const controlPlaneWaitPrefix = "waiting for control-plane node "

// waitingForControlPlaneDrain reports whether a deleting Machine's drain waits
// for another control-plane node to finish draining.
func waitingForControlPlaneDrain(m *machinev1beta1.Machine) bool {
	if m.DeletionTimestamp.IsZero() {
		return false
	}
	c := getCondition(m.Status.Conditions, DrainedCondition)
	return c != nil && c.Status == corev1.ConditionFalse && strings.HasPrefix(c.Message, controlPlaneWaitPrefix)
}

// drainWaitCondition is the Drained condition of a drain that must wait (for
// another control-plane drain). Before the drain started it is
// False/DrainBlocked; once it started (Drained=False/DrainInProgress) the
// reason stays DrainInProgress so that lastTransitionTime, the persisted
// drain start the timeout is measured from, is not reset.
func drainWaitCondition(existing *machinev1beta1.Condition, message string) machinev1beta1.Condition {
	reason := ReasonDrainBlocked
	if existing != nil && existing.Status == corev1.ConditionFalse && existing.Reason == ReasonDrainInProgress {
		reason = ReasonDrainInProgress
	}
	return newCondition(DrainedCondition, corev1.ConditionFalse, reason, machinev1beta1.ConditionSeverityInfo, message)
}

// nodeUnreachable reports whether the node's Ready condition is Unknown (the
// kubelet stopped reporting): pods cannot terminate gracefully there.
func nodeUnreachable(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionUnknown
		}
	}
	return false
}

// maxPodsInMessage bounds how many pods a Drained message names.
const maxPodsInMessage = 5

// describeBlockingPods explains why pods are still on a node after a drain
// attempt, naming each pod and the PodDisruptionBudget(s) that block its
// eviction, e.g.
//
//	evicting default/web-1: blocked by PodDisruptionBudget default/web (0 disruptions allowed)
//
// pdbs may hold budgets of any namespace; only those selecting a pod apply.
func describeBlockingPods(pods []corev1.Pod, pdbs []policyv1.PodDisruptionBudget) string {
	sorted := append([]corev1.Pod(nil), pods...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Namespace != sorted[j].Namespace {
			return sorted[i].Namespace < sorted[j].Namespace
		}
		return sorted[i].Name < sorted[j].Name
	})
	var parts []string
	for i, p := range sorted {
		if i == maxPodsInMessage {
			parts = append(parts, fmt.Sprintf("and %d more pod(s)", len(sorted)-maxPodsInMessage))
			break
		}
		parts = append(parts, describePod(&p, pdbs))
	}
	return strings.Join(parts, "; ")
}

func describePod(p *corev1.Pod, pdbs []policyv1.PodDisruptionBudget) string {
	id := p.Namespace + "/" + p.Name
	var blocking []string
	for i := range pdbs {
		pdb := &pdbs[i]
		if pdb.Namespace != p.Namespace || pdb.Spec.Selector == nil {
			continue
		}
		// policy/v1: an empty selector selects every pod of the namespace.
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		if pdb.Status.DisruptionsAllowed > 0 {
			continue
		}
		blocking = append(blocking, fmt.Sprintf("PodDisruptionBudget %s/%s (%d disruptions allowed)", pdb.Namespace, pdb.Name, pdb.Status.DisruptionsAllowed))
	}
	switch {
	case len(blocking) > 0:
		return fmt.Sprintf("evicting %s: blocked by %s", id, strings.Join(blocking, ", "))
	case p.DeletionTimestamp != nil:
		return fmt.Sprintf("%s: evicted, waiting for it to terminate", id)
	default:
		return fmt.Sprintf("evicting %s: not evicted yet", id)
	}
}
