package machine

// One eviction pass: list the pods the drain must remove, evict each once, report per pod what happened.
// Nothing here waits for a pod to terminate.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/kubectl/pkg/drain"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/drainer"
)

// evictionPass evicts, once, each of the node's pods that needsEviction; when it evicted any, it lists
// again to see which are gone already, and for blocked pods it lists their namespaces' budgets, to name
// them. The error is a failed listing of the pods; an eviction error is a result.
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
	var pdbs []policyv1.PodDisruptionBudget
	if slices.ContainsFunc(results, func(p podEviction) bool { return p.Outcome == podBlocked }) {
		if pdbs, err = r.listPDBs(ctx, results); err != nil {
			log.FromContext(ctx).Error(err, "listing PodDisruptionBudgets to explain a blocked drain")
		}
	}
	return results, pdbs, nil
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
	still := make(map[string]bool, len(left))
	for _, p := range left {
		still[p.Namespace+"/"+p.Name] = true
	}
	for i := range results {
		if !still[results[i].Namespace+"/"+results[i].Name] {
			results[i].Outcome = podGone
		}
	}
}

// listPDBs lists the PodDisruptionBudgets of the blocked pods' namespaces.
func (r *Reconciler) listPDBs(ctx context.Context, results []podEviction) ([]policyv1.PodDisruptionBudget, error) {
	seen := map[string]bool{}
	var out []policyv1.PodDisruptionBudget
	var errs []error
	for _, p := range results {
		if p.Outcome != podBlocked || seen[p.Namespace] {
			continue
		}
		seen[p.Namespace] = true
		l, err := r.kube.PolicyV1().PodDisruptionBudgets(p.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("listing PodDisruptionBudgets of namespace %s: %w", p.Namespace, err))
			continue
		}
		out = append(out, l.Items...)
	}
	return out, errors.Join(errs...)
}

// drainHelper configures kubectl's drain helper (package internal/drainer); on an unreachable node pods
// get a 1s grace period and those terminating for over 1s past their deadline are not listed.
func (r *Reconciler) drainHelper(ctx context.Context, node *corev1.Node) *drain.Helper {
	h := drainer.NewHelper(ctx, r.kube, log.FromContext(ctx).WithValues("node", node.Name))
	if nodeUnreachable(node) {
		h.GracePeriodSeconds = 1
		h.SkipWaitForDeleteTimeoutSeconds = 1
	}
	return h
}
