package machinehealthcheck

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Health classifies one target. Unhealthy and Deleting count against maxUnhealthy
// (and so does a target under external remediation, verdict.External).
type Health int

// The health of a target.
const (
	Healthy   Health = iota // a Node and no unhealthy condition
	Starting                // no Node yet, inside the startup window (or no startup timeout)
	Suspect                 // an unhealthy condition holds, its timeout not expired yet
	Unhealthy               // to be remediated
	Deleting                // being deleted: under remediation (ours or not), never healthy
)

// verdict is the decision on one target.
type verdict struct {
	Health Health
	// Reason says why the target is not healthy; stable while the state is (an event note).
	Reason string
	// Cause classifies an Unhealthy verdict (Cause*), the same for every Machine.
	Cause string
	// Recheck > 0 is when the verdict changes by time alone.
	Recheck time.Duration
	// External: handed to external remediation and not back healthy (see
	// underExternalRemediation); it counts against maxUnhealthy whatever its Health.
	External bool
}

// underExternalRemediation reports whether Machine m, of health h, is still in external
// remediation: annotated for the baremetal provider (until it removes the annotation, as
// OpenShift counts it), or with a remediation request (hasRequest) and not Healthy again.
func underExternalRemediation(m *machinev1beta1.Machine, h Health, hasRequest bool) bool {
	return hasExternalAnnotation(m) || (hasRequest && h != Healthy)
}

// StartupClock names the moment spec.nodeStartupTimeout runs from.
type StartupClock string

// The startup clocks: the Machine's creationTimestamp (default) or, as
// OpenShift, its status.lastUpdated (not timed until set). See docs/openshift.md.
const (
	StartupFromCreation    StartupClock = "creation"
	StartupFromLastUpdated StartupClock = "lastUpdated"
)

// healthParams is what the spec and the startup clock say about health.
type healthParams struct {
	conditions     []machinev1beta1.UnhealthyCondition
	startupTimeout time.Duration // 0 disables the startup check
	startupFrom    StartupClock
}

func paramsOf(mhc *machinev1beta1.MachineHealthCheck, from StartupClock) healthParams {
	timeout := ptr.Deref(mhc.Spec.NodeStartupTimeout, metav1.Duration{Duration: DefaultNodeStartupTimeout}).Duration
	return healthParams{conditions: mhc.Spec.UnhealthyConditions, startupTimeout: timeout, startupFrom: from}
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
			if m.Status.LastUpdated == nil { // its write wakes us (machinePredicate)
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
		i := slices.IndexFunc(node.Status.Conditions, func(nc corev1.NodeCondition) bool { return nc.Type == c.Type })
		if i < 0 || node.Status.Conditions[i].Status != c.Status {
			continue
		}
		nc := node.Status.Conditions[i]
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

// maxUnhealthyValue resolves spec.maxUnhealthy against total: nil is 100%, "N%" is
// floor(N*total/100), an integer or a string of digits is absolute; negative is 0.
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

// summary is the decision on a whole MachineHealthCheck; MaxErr (no remediation):
// maxUnhealthy is unusable; Requeue > 0: a verdict changes by time alone.
type summary struct {
	// Expected counts every target, deleting ones included (OpenShift's expectedMachines);
	// Healthy those Healthy and not under remediation (currentHealthy).
	Expected, Healthy int
	// Unhealthy counts what maxUnhealthy bounds: Unhealthy verdicts and the Machines under
	// remediation already, Deleting being deleted and External in external remediation.
	Unhealthy, Deleting, External int
	MaxUnhealthy                  int
	MaxErr                        error
	Allowed                       bool
	RemediationsAllowed           int32
	Requeue                       time.Duration
}

// summarize counts the verdicts. A Machine being deleted or in external remediation
// counts against maxUnhealthy until it is gone or healthy again, so that at most
// maxUnhealthy are ever under remediation; starting and suspect Machines do not count
// (DESIGN.md §3; OpenShift counts them, docs/openshift.md).
func summarize(vs []verdict, maxSpec *intstr.IntOrString) summary {
	var s summary
	for _, v := range vs {
		s.Requeue = earliest(s.Requeue, max(v.Recheck, 0))
		s.Expected++
		switch {
		case v.Health == Deleting:
			s.Deleting++
			s.Unhealthy++
		case v.External:
			s.External++
			s.Unhealthy++
		case v.Health == Healthy:
			s.Healthy++
		case v.Health == Unhealthy:
			s.Unhealthy++
		}
	}
	s.MaxUnhealthy, s.MaxErr = maxUnhealthyValue(maxSpec, s.Expected)
	if s.MaxErr != nil {
		return s
	}
	s.Allowed = s.Unhealthy <= s.MaxUnhealthy
	s.RemediationsAllowed = int32(min(max(0, s.MaxUnhealthy-s.Unhealthy), math.MaxInt32))
	return s
}

// earliest is the smallest positive of a and b, 0 when neither is.
func earliest(a, b time.Duration) time.Duration {
	if a <= 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// restrictedMessage is the RemediationAllowed=False/TooManyUnhealthy message.
func restrictedMessage(s summary, spec *intstr.IntOrString) string {
	maxSpec := "100% (default)"
	if spec != nil {
		maxSpec = spec.String()
	}
	return fmt.Sprintf("Remediation is not allowed: %d of %d machines are unhealthy or under remediation "+
		"(%d being deleted, %d in external remediation), more than maxUnhealthy %s (= %d); "+
		"remediation resumes when no more than %d are",
		s.Unhealthy, s.Expected, s.Deleting, s.External, maxSpec, s.MaxUnhealthy, s.MaxUnhealthy)
}

// excludedNode reports why node must not be remediated ("" if it may be).
func excludedNode(node *corev1.Node) string {
	switch {
	case node == nil:
		return ""
	case node.Labels[ExcludeFromRemediationLabel] == "true":
		return fmt.Sprintf("Node %s is labelled %s=true", node.Name, ExcludeFromRemediationLabel)
	case slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == NodeMaintenanceTaint }):
		return fmt.Sprintf("Node %s is under maintenance (taint %s)", node.Name, NodeMaintenanceTaint)
	}
	return ""
}

// requestKind is templateKind without its "Template" suffix.
func requestKind(templateKind string) (string, error) {
	k, ok := strings.CutSuffix(templateKind, "Template")
	if !ok || k == "" {
		return "", fmt.Errorf("remediation template kind %q does not end in \"Template\"", templateKind)
	}
	return k, nil
}

// sameNode reports whether node (read by ref's name) is ref's Node: one
// recreated under the name (another UID) is not. A ref without a UID matches.
func sameNode(ref *corev1.ObjectReference, node *corev1.Node) bool {
	return ref.UID == "" || ref.UID == node.UID
}

// remediation is how an Unhealthy target is remediated.
type remediation int

const (
	remediateSkipExcluded     remediation = iota // Node excluded or under maintenance
	remediateRequest                             // create a request from spec.remediationTemplate
	remediateAnnotate                            // annotate for the baremetal provider
	remediateAnnotated                           // annotated already: the provider is at work
	remediateSkipNoController                    // nothing would replace the Machine
	remediateDelete                              // delete it; its controller replaces it
)

// decideRemediation says how to remediate the Unhealthy Machine m (node nil: none or
// gone) in OpenShift's order, after medik8s' exclusions (docs/openshift.md).
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
