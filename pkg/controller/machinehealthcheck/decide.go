package machinehealthcheck

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machine"
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

// healthParams is what the MachineHealthCheck spec says about health.
type healthParams struct {
	conditions     []machinev1beta1.UnhealthyCondition
	startupTimeout time.Duration // 0 disables the startup check
}

func paramsOf(mhc *machinev1beta1.MachineHealthCheck) healthParams {
	p := healthParams{conditions: mhc.Spec.UnhealthyConditions, startupTimeout: DefaultNodeStartupTimeout}
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
		expiry := m.CreationTimestamp.Add(p.startupTimeout)
		if !now.Before(expiry) {
			return verdict{Health: Unhealthy, Reason: fmt.Sprintf("no Node %s after creation (nodeStartupTimeout)", p.startupTimeout),
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

// isControlPlane reports whether m (or its Node) is a control-plane one.
func isControlPlane(m *machinev1beta1.Machine, node *corev1.Node) bool {
	if m.Labels[MachineRoleLabel] == masterRole || m.Labels[MachineTypeLabel] == masterRole {
		return true
	}
	if node == nil {
		return false
	}
	_, cp := node.Labels[machine.ControlPlaneNodeRoleLabel]
	_, master := node.Labels[machine.MasterNodeRoleLabel]
	return cp || master
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
