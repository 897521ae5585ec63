package machine

// One eviction pass (never waiting for a pod to terminate), and the Drained message from its results.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/kubectl/pkg/drain"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/drainer"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
)

// evictionPass evicts each pod that needsEviction once; the error is a failed listing of the pods.
func (r *Reconciler) evictionPass(ctx context.Context, node *corev1.Node) ([]podEviction, []policyv1.PodDisruptionBudget, error) {
	ctx, cancel := context.WithTimeout(ctx, drainPassTimeout)
	defer cancel()
	h := r.drainHelper(ctx, node)
	pods, err := podsToEvict(h, node.Name)
	if err != nil {
		return nil, nil, err
	}
	unreachable := nodeUnreachable(node)
	results := make([]podEviction, len(pods))
	var g errgroup.Group
	g.SetLimit(evictionParallelism)
	for i := range pods {
		p := &pods[i]
		results[i] = podEviction{Namespace: p.Namespace, Name: p.Name, Labels: p.Labels, Outcome: podTerminating}
		if !needsEviction(p, unreachable) {
			continue
		}
		g.Go(func() error {
			err := h.EvictPod(*p, policyv1.SchemeGroupVersion)
			results[i].Evicted = err == nil
			results[i].Outcome, results[i].Detail = classifyEviction(err, p.DeletionTimestamp != nil)
			return nil
		})
	}
	_ = g.Wait() // the goroutines report in results

	if _, evicted, _ := passOutcome(results); evicted {
		// Pods with no grace period are gone at once: see which.
		if left, err := podsToEvict(h, node.Name); err == nil {
			markGone(results, left)
		}
	}
	return results, r.listPDBs(ctx, results), nil
}

// podsToEvict lists the pods kubectl's drain would remove from the node.
func podsToEvict(h *drain.Helper, nodeName string) ([]corev1.Pod, error) {
	list, errs := h.GetPodsForDeletion(nodeName)
	if len(errs) > 0 {
		return nil, fmt.Errorf("cannot list the pods to evict: %w", utilerrors.NewAggregate(errs))
	}
	return list.Pods(), nil
}

// markGone sets podGone on the results whose pod is not in left.
func markGone(results []podEviction, left []corev1.Pod) {
	for i, r := range results {
		if !slices.ContainsFunc(left, func(p corev1.Pod) bool { return p.Namespace == r.Namespace && p.Name == r.Name }) {
			results[i].Outcome = podGone
		}
	}
}

// listPDBs lists the PodDisruptionBudgets of the blocked pods' namespaces; a failure only costs their names.
func (r *Reconciler) listPDBs(ctx context.Context, results []podEviction) []policyv1.PodDisruptionBudget {
	var out []policyv1.PodDisruptionBudget
	seen := map[string]bool{}
	for _, p := range results {
		if p.Outcome != podBlocked || seen[p.Namespace] {
			continue
		}
		seen[p.Namespace] = true
		l, err := r.opts.KubeClient.PolicyV1().PodDisruptionBudgets(p.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			log.FromContext(ctx).Error(err, "listing PodDisruptionBudgets to explain a blocked drain", "namespace", p.Namespace)
			continue
		}
		out = append(out, l.Items...)
	}
	return out
}

// drainHelper is kubectl's drain helper, with 1s grace periods on an unreachable node.
func (r *Reconciler) drainHelper(ctx context.Context, node *corev1.Node) *drain.Helper {
	h := drainer.NewHelper(ctx, r.opts.KubeClient, log.FromContext(ctx).WithValues("node", node.Name))
	if nodeUnreachable(node) {
		h.GracePeriodSeconds = 1
		h.SkipWaitForDeleteTimeoutSeconds = 1
	}
	return h
}

// needsEviction: a pod not terminating yet or, on an unreachable node, one whose grace period exceeds 1s.
func needsEviction(p *corev1.Pod, unreachable bool) bool {
	return p.DeletionTimestamp == nil ||
		unreachable && (p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds > 1)
}

// evictionOutcome is what an eviction pass did with, or found of, a pod.
type evictionOutcome int

const (
	podBlocked        evictionOutcome = iota // refused (429): a PodDisruptionBudget allows no disruption now
	podEvictionFailed                        // the eviction failed for another reason
	podTerminating                           // evicted (this pass or before) and not gone yet
	podGone                                  // the pod no longer exists
)

// podEviction is one pod's result of an eviction pass.
type podEviction struct {
	Namespace, Name string
	Labels          map[string]string
	Outcome         evictionOutcome
	Evicted         bool   // the eviction was accepted in this pass
	Detail          string // why an eviction was blocked (the DisruptionBudget cause) or failed
}

// classifyEviction maps the eviction API's answer to an outcome; terminating: the pod had a deletionTimestamp.
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
		return podTerminating, "" // its namespace is going away
	default:
		return podEvictionFailed, err.Error()
	}
}

// passCondition decides Drained from a pass's results; done: no pod is left, progress: a pod was evicted.
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

// passOutcome counts the pods a pass left, whether it evicted any, and whether any is blocked or failed.
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

const (
	maxPodsInMessage  = 5   // pods a Drained message names
	maxErrorInMessage = 300 // bytes of an eviction error quoted in a Drained message
)

// describeEvictionPass depends only on the pods' state, so passes that find the same state write nothing.
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
	slices.SortFunc(remaining, func(a, b podEviction) int {
		return cmp.Or(cmp.Compare(a.Outcome, b.Outcome), strings.Compare(a.Namespace, b.Namespace),
			strings.Compare(a.Name, b.Name))
	})
	var why []string
	for o, text := range [...]string{podBlocked: "blocked by a PodDisruptionBudget", podEvictionFailed: "eviction failed",
		podTerminating: "terminating"} {
		if n := counts[evictionOutcome(o)]; n > 0 {
			why = append(why, fmt.Sprintf("%d %s", n, text))
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

// selectingPDBs names the PodDisruptionBudgets of the pod's namespace whose selector matches it.
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
