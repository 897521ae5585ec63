package machine

// Eviction results: what one eviction pass did with each pod, and the
// Drained=False message built from them. Pure, table-tested in
// drain_decide_test.go; the pass itself is evictionPass (drain.go).

import (
	"fmt"
	"sort"
	"strings"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
)

// needsEviction reports whether an eviction pass evicts the pod: every pod
// that is not terminating yet and, on an unreachable node (where the drain
// uses a 1s grace period), a terminating pod whose grace period is longer, so
// that eviction shortens it.
func needsEviction(p *corev1.Pod, unreachable bool) bool {
	if p.DeletionTimestamp == nil {
		return true
	}
	return unreachable && (p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds > 1)
}

// evictionOutcome is what an eviction pass did with, or found of, a pod.
type evictionOutcome int

const (
	// podBlocked: the eviction was refused (429) because a
	// PodDisruptionBudget allows no disruption now.
	podBlocked evictionOutcome = iota
	// podEvictionFailed: the eviction failed for another reason.
	podEvictionFailed
	// podTerminating: evicted (this pass or before) and not gone yet.
	podTerminating
	// podGone: the pod no longer exists.
	podGone
)

// podEviction is one pod's result of an eviction pass.
type podEviction struct {
	Namespace, Name string
	Labels          map[string]string
	Outcome         evictionOutcome
	// Evicted: the eviction was accepted in this pass.
	Evicted bool
	// Detail is the API server's explanation of a blocked eviction (the
	// DisruptionBudget cause) or the error of a failed one.
	Detail string
}

// classifyEviction maps the eviction API's answer for a pod to an outcome.
// terminating says the pod already had a deletionTimestamp.
func classifyEviction(err error, terminating bool) (evictionOutcome, string) {
	switch {
	case err == nil:
		return podTerminating, ""
	case apierrors.IsNotFound(err):
		return podGone, ""
	case apierrors.IsTooManyRequests(err):
		if st, ok := err.(apierrors.APIStatus); ok && st.Status().Details != nil {
			for _, c := range st.Status().Details.Causes {
				if c.Type == policyv1.DisruptionBudgetCause && c.Message != "" {
					return podBlocked, c.Message
				}
			}
		}
		return podBlocked, err.Error()
	case terminating && apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// Its namespace is going away and it is already terminating.
		return podTerminating, ""
	default:
		return podEvictionFailed, err.Error()
	}
}

// passCondition decides, from an eviction pass's results, the Drained
// condition: True/Drained when no pod is left (done), else
// False/DrainInProgress with describeEvictionPass's account and, with a
// timeout, when the rest will be deleted; Warning severity when a pod is
// blocked or its eviction failed, Info when pods only terminate. progress
// reports that the pass evicted a pod.
func passCondition(node string, results []podEviction, pdbs []policyv1.PodDisruptionBudget, timeout time.Duration, started time.Time) (c machinev1beta1.Condition, done, progress bool) {
	remaining, progress, warn := passOutcome(results)
	if remaining == 0 {
		return conditions.New(DrainedCondition, corev1.ConditionTrue, ReasonDrained, "", fmt.Sprintf("node %s drained", node)), true, progress
	}
	msg := fmt.Sprintf("draining node %s: %s", node, describeEvictionPass(results, pdbs))
	if timeout > 0 {
		msg += fmt.Sprintf("; remaining pods will be deleted without eviction at %s (drain timeout %s)", started.Add(timeout).UTC().Format(time.RFC3339), timeout)
	}
	severity := machinev1beta1.ConditionSeverityInfo
	if warn {
		severity = machinev1beta1.ConditionSeverityWarning
	}
	return conditions.New(DrainedCondition, corev1.ConditionFalse, ReasonDrainInProgress, severity, msg), false, progress
}

// passOutcome counts the pods an eviction pass left, whether it evicted any
// (progress), and whether any is blocked or failed (a Warning).
func passOutcome(results []podEviction) (remaining int, evicted, warn bool) {
	for _, p := range results {
		evicted = evicted || p.Evicted
		if p.Outcome == podGone {
			continue
		}
		remaining++
		warn = warn || p.Outcome == podBlocked || p.Outcome == podEvictionFailed
	}
	return remaining, evicted, warn
}

// maxPodsInMessage bounds how many pods a Drained message names.
const maxPodsInMessage = 5

// maxErrorInMessage bounds an eviction error quoted in a Drained message.
const maxErrorInMessage = 300

// describeEvictionPass summarizes an eviction pass for the Drained=False
// message: how many pods remain and why, then up to maxPodsInMessage pods
// (blocked ones first), each with the PodDisruptionBudget(s) that block it,
// e.g.
//
//	3 pod(s) remaining (1 blocked by a PodDisruptionBudget, 2 terminating): evicting default/web-1: blocked by
//	PodDisruptionBudget default/web (0 disruptions allowed); default/a: terminating; default/b: terminating
//
// The text depends only on the pods' state, not on when the pass ran, so
// passes that find the same state write nothing. pdbs may hold budgets of any
// namespace; only those selecting a blocked pod are named.
func describeEvictionPass(results []podEviction, pdbs []policyv1.PodDisruptionBudget) string {
	var remaining []podEviction
	counts := map[evictionOutcome]int{}
	for _, r := range results {
		if r.Outcome == podGone {
			continue
		}
		remaining = append(remaining, r)
		counts[r.Outcome]++
	}
	sort.Slice(remaining, func(i, j int) bool {
		a, b := remaining[i], remaining[j]
		if a.Outcome != b.Outcome {
			return a.Outcome < b.Outcome
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	var why []string
	for _, c := range []struct {
		o    evictionOutcome
		text string
	}{{podBlocked, "blocked by a PodDisruptionBudget"}, {podEvictionFailed, "eviction failed"}, {podTerminating, "terminating"}} {
		if n := counts[c.o]; n > 0 {
			why = append(why, fmt.Sprintf("%d %s", n, c.text))
		}
	}
	msg := fmt.Sprintf("%d pod(s) remaining", len(remaining))
	if len(why) > 0 {
		msg += " (" + strings.Join(why, ", ") + ")"
	}
	parts := make([]string, 0, min(len(remaining), maxPodsInMessage+1))
	for i := range remaining {
		if i == maxPodsInMessage {
			parts = append(parts, fmt.Sprintf("and %d more pod(s)", len(remaining)-maxPodsInMessage))
			break
		}
		parts = append(parts, describePodEviction(&remaining[i], pdbs))
	}
	if len(parts) > 0 {
		msg += ": " + strings.Join(parts, "; ")
	}
	return msg
}

func describePodEviction(r *podEviction, pdbs []policyv1.PodDisruptionBudget) string {
	id := r.Namespace + "/" + r.Name
	switch r.Outcome {
	case podBlocked:
		if blocking := selectingPDBs(r, pdbs); len(blocking) > 0 {
			return fmt.Sprintf("evicting %s: blocked by %s", id, strings.Join(blocking, ", "))
		}
		return fmt.Sprintf("evicting %s: blocked: %s", id, patch.Truncate(r.Detail, maxErrorInMessage))
	case podEvictionFailed:
		return fmt.Sprintf("evicting %s: failed: %s", id, patch.Truncate(r.Detail, maxErrorInMessage))
	default:
		return id + ": terminating"
	}
}

// selectingPDBs names the PodDisruptionBudgets of the pod's namespace whose
// selector matches it.
func selectingPDBs(r *podEviction, pdbs []policyv1.PodDisruptionBudget) []string {
	var out []string
	for i := range pdbs {
		pdb := &pdbs[i]
		if pdb.Namespace != r.Namespace || pdb.Spec.Selector == nil {
			continue
		}
		// policy/v1: an empty selector selects every pod of the namespace.
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(r.Labels)) {
			continue
		}
		out = append(out, fmt.Sprintf("PodDisruptionBudget %s/%s (%d disruptions allowed)", pdb.Namespace, pdb.Name, pdb.Status.DisruptionsAllowed))
	}
	sort.Strings(out)
	return out
}
