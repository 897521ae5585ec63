package machinehealthcheck

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Health classifies one target.
type Health int

const (
	// Healthy: the Machine has a Node and no unhealthy condition holds.
	Healthy Health = iota
	// Starting: no Node yet, inside the startup window (or the startup
	// timeout is disabled). Not counted unhealthy.
	Starting
	// Suspect: an unhealthy condition holds but its timeout has not expired
	// yet. Not counted unhealthy.
	Suspect
	// Unhealthy: to be remediated; counts against maxUnhealthy.
	Unhealthy
	// Deleting: the Machine is being deleted; not a target.
	Deleting
)

func (h Health) String() string {
	switch h {
	case Healthy:
		return "Healthy"
	case Starting:
		return "Starting"
	case Suspect:
		return "Suspect"
	case Unhealthy:
		return "Unhealthy"
	case Deleting:
		return "Deleting"
	}
	return fmt.Sprintf("Health(%d)", int(h))
}

// verdict is the decision on one target.
type verdict struct {
	Health Health
	// Reason says why the target is not healthy, in words that do not
	// change while the state does not (it is an event note).
	Reason string
	// Cause classifies an Unhealthy verdict in words that are the same for
	// every Machine (CauseFailed, CauseNodeGone, CauseNodeStartupTimeout,
	// CauseNodeConditionPrefix+type): the backoff of repeated remediation
	// compares it.
	Cause string
	// Recheck > 0 is when the verdict changes by the passing of time alone
	// (a timeout expiring).
	Recheck time.Duration
}

// StartupClock names the moment spec.nodeStartupTimeout runs from.
type StartupClock string

const (
	// StartupFromCreation: the Machine's creationTimestamp (the default;
	// docs/openshift.md says why).
	StartupFromCreation StartupClock = "creation"
	// StartupFromLastUpdated: the Machine's status.lastUpdated, as
	// OpenShift's controller does; a Machine without it is not timed yet.
	StartupFromLastUpdated StartupClock = "lastUpdated"
)

// healthParams is what the MachineHealthCheck spec (and the controller's
// startup clock) say about health.
type healthParams struct {
	conditions     []machinev1beta1.UnhealthyCondition
	startupTimeout time.Duration // 0 disables the startup check
	startupFrom    StartupClock
}

func paramsOf(mhc *machinev1beta1.MachineHealthCheck, from StartupClock) healthParams {
	p := healthParams{conditions: mhc.Spec.UnhealthyConditions, startupTimeout: DefaultNodeStartupTimeout, startupFrom: from}
	if mhc.Spec.NodeStartupTimeout != nil {
		p.startupTimeout = mhc.Spec.NodeStartupTimeout.Duration
	}
	return p
}

// assess decides the health of Machine m. node is its Node, nil when it has
// no nodeRef or the Node does not exist.
func assess(m *machinev1beta1.Machine, node *corev1.Node, p healthParams, now time.Time) verdict {
	if m.DeletionTimestamp != nil {
		return verdict{Health: Deleting}
	}
	if m.Status.Phase != nil && *m.Status.Phase == machinev1beta1.PhaseFailed {
		return verdict{Health: Unhealthy, Reason: "the Machine is Failed", Cause: CauseFailed}
	}
	if m.Status.NodeRef == nil || m.Status.NodeRef.Name == "" {
		if p.startupTimeout <= 0 {
			return verdict{Health: Starting, Reason: "no Node yet (nodeStartupTimeout disabled)"}
		}
		since, what := m.CreationTimestamp.Time, "creation"
		if p.startupFrom == StartupFromLastUpdated {
			if m.Status.LastUpdated == nil {
				// OpenShift's rule: not timed until the status is written;
				// that write wakes the controller (machinePredicate).
				return verdict{Health: Starting, Reason: "no Node yet (status.lastUpdated not set)"}
			}
			since, what = m.Status.LastUpdated.Time, "the last status update"
		}
		expiry := since.Add(p.startupTimeout)
		if !now.Before(expiry) {
			return verdict{Health: Unhealthy, Reason: fmt.Sprintf("no Node %s after %s (nodeStartupTimeout)", p.startupTimeout, what),
				Cause: CauseNodeStartupTimeout}
		}
		return verdict{Health: Starting, Reason: "no Node yet", Recheck: expiry.Sub(now)}
	}
	if node == nil {
		return verdict{Health: Unhealthy, Reason: fmt.Sprintf("Node %s is gone", m.Status.NodeRef.Name), Cause: CauseNodeGone}
	}
	var soonest time.Duration
	suspectReason := ""
	for _, c := range p.conditions {
		nc := nodeCondition(node, c.Type)
		if nc == nil || nc.Status != c.Status {
			continue
		}
		expiry := nc.LastTransitionTime.Add(c.Timeout.Duration)
		if !now.Before(expiry) {
			return verdict{Health: Unhealthy, Reason: fmt.Sprintf("Node %s has condition %s=%s for more than %s", node.Name, c.Type, c.Status, c.Timeout.Duration),
				Cause: CauseNodeConditionPrefix + string(c.Type)}
		}
		if d := expiry.Sub(now); soonest == 0 || d < soonest {
			soonest = d
			suspectReason = fmt.Sprintf("Node %s has condition %s=%s; unhealthy unless it changes within %s of its transition", node.Name, c.Type, c.Status, c.Timeout.Duration)
		}
	}
	if soonest > 0 {
		return verdict{Health: Suspect, Reason: suspectReason, Recheck: soonest}
	}
	return verdict{Health: Healthy}
}

func nodeCondition(n *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// maxUnhealthyValue resolves spec.maxUnhealthy against total targets: nil
// means 100%; "N%" is floor(N*total/100); an integer or a string of digits is
// absolute; negative values count as 0.
func maxUnhealthyValue(v *intstr.IntOrString, total int) (int, error) {
	if v == nil {
		return total, nil
	}
	var n int
	switch {
	case v.Type == intstr.Int:
		n = int(v.IntVal)
	case strings.HasSuffix(v.StrVal, "%"):
		p, err := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
		if err != nil {
			return 0, fmt.Errorf("maxUnhealthy %q is not a percentage: %w", v.StrVal, err)
		}
		n = p * total / 100 // rounds down (toward zero)
	default:
		i, err := strconv.Atoi(v.StrVal)
		if err != nil {
			return 0, fmt.Errorf("maxUnhealthy %q is neither a number nor a percentage: %w", v.StrVal, err)
		}
		n = i
	}
	return max(n, 0), nil
}

// summary is the decision on a whole MachineHealthCheck.
type summary struct {
	Expected, Healthy, Unhealthy int
	MaxUnhealthy                 int
	// MaxErr is set when maxUnhealthy cannot be resolved: no remediation.
	MaxErr error
	// Allowed: Unhealthy <= MaxUnhealthy, remediation may proceed.
	Allowed             bool
	RemediationsAllowed int32
	// Requeue > 0 is the earliest moment a verdict changes by time alone.
	Requeue time.Duration
}

// summarize counts the verdicts. Machines being deleted are not expected;
// starting and suspect Machines are neither healthy nor unhealthy.
func summarize(vs []verdict, maxSpec *intstr.IntOrString) summary {
	var s summary
	for _, v := range vs {
		switch v.Health {
		case Deleting:
			continue
		case Healthy:
			s.Healthy++
		case Unhealthy:
			s.Unhealthy++
		}
		s.Expected++
	}
	s.Requeue = nextRequeue(vs)
	s.MaxUnhealthy, s.MaxErr = maxUnhealthyValue(maxSpec, s.Expected)
	if s.MaxErr != nil {
		return s
	}
	s.Allowed = s.Unhealthy <= s.MaxUnhealthy
	s.RemediationsAllowed = int32(max(0, s.MaxUnhealthy-s.Unhealthy))
	return s
}

// nextRequeue is the smallest positive Recheck, 0 when none.
func nextRequeue(vs []verdict) time.Duration {
	var d time.Duration
	for _, v := range vs {
		if v.Recheck > 0 && (d == 0 || v.Recheck < d) {
			d = v.Recheck
		}
	}
	return d
}

// restrictedMessage is the RemediationAllowed=False/TooManyUnhealthy message.
func restrictedMessage(s summary, spec *intstr.IntOrString) string {
	return fmt.Sprintf("Remediation is not allowed: %d of %d machines are unhealthy, more than maxUnhealthy %s (= %d)",
		s.Unhealthy, s.Expected, maxUnhealthyString(spec), s.MaxUnhealthy)
}

func maxUnhealthyString(v *intstr.IntOrString) string {
	if v == nil {
		return "100% (default)"
	}
	return v.String()
}

// excludedNode reports why node must not be remediated ("" if it may be):
// the medik8s exclusion label, or a node maintenance's drain taint.
func excludedNode(node *corev1.Node) string {
	if node == nil {
		return ""
	}
	if node.Labels[ExcludeFromRemediationLabel] == "true" {
		return fmt.Sprintf("Node %s is labelled %s=true", node.Name, ExcludeFromRemediationLabel)
	}
	for _, t := range node.Spec.Taints {
		if t.Key == NodeMaintenanceTaint {
			return fmt.Sprintf("Node %s is under maintenance (taint %s)", node.Name, NodeMaintenanceTaint)
		}
	}
	return ""
}

// requestKind is the kind of the request a remediation template of kind
// templateKind makes: the kind without its "Template" suffix.
func requestKind(templateKind string) (string, error) {
	k, ok := strings.CutSuffix(templateKind, "Template")
	if !ok || k == "" {
		return "", fmt.Errorf("remediation template kind %q does not end in \"Template\"", templateKind)
	}
	return k, nil
}

// sameNode reports whether node (read by the name in ref) is the Node ref
// names: a Node recreated under that name (another UID) is not, so the
// Machine's own Node is gone. A ref without a UID matches by name.
func sameNode(ref *corev1.ObjectReference, node *corev1.Node) bool {
	return ref.UID == "" || ref.UID == node.UID
}

// remediation is how an Unhealthy target is remediated.
type remediation int

const (
	// remediateSkipExcluded: its Node is excluded or under maintenance.
	remediateSkipExcluded remediation = iota
	// remediateRequest: create an external remediation request from
	// spec.remediationTemplate.
	remediateRequest
	// remediateAnnotate: annotate the Machine with
	// ExternalRemediationAnnotation for the baremetal provider.
	remediateAnnotate
	// remediateAnnotated: the annotation is there; the provider is at work.
	remediateAnnotated
	// remediateSkipNoController: nothing would replace the Machine.
	remediateSkipNoController
	// remediateDelete: delete the Machine (its controller replaces it).
	remediateDelete
)

// decideRemediation says how to remediate the Unhealthy Machine m whose
// Node is node (nil: none or gone), following OpenShift's order: a
// remediationTemplate wins; else the external-baremetal strategy annotates
// a Machine that is not Failed (whatever its owner); else a Machine with a
// controller owner is deleted. Control-plane Machines are treated like any
// other (OpenShift's rule: their owner, the ControlPlaneMachineSet, replaces
// them; etcd guards itself with lifecycle hooks). Before all that, a Node
// excluded from remediation or under maintenance is left alone (medik8s'
// convention, this project's addition).
func decideRemediation(mhc *machinev1beta1.MachineHealthCheck, m *machinev1beta1.Machine, node *corev1.Node) remediation {
	switch {
	case excludedNode(node) != "":
		return remediateSkipExcluded
	case mhc.Spec.RemediationTemplate != nil:
		return remediateRequest
	case mhc.Annotations[RemediationStrategyAnnotation] == RemediationStrategyExternalBaremetal &&
		(m.Status.Phase == nil || *m.Status.Phase != machinev1beta1.PhaseFailed):
		if _, ok := m.Annotations[ExternalRemediationAnnotation]; ok {
			return remediateAnnotated
		}
		return remediateAnnotate
	case metav1.GetControllerOf(m) == nil:
		return remediateSkipNoController
	}
	return remediateDelete
}
