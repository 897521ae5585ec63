package nodemaintenance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/kubectl/pkg/drain"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	nmv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/drainer"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
)

// maxPodsInMessage bounds the pods named in lastError.
const maxPodsInMessage = 10

// drainPass evicts the pods once (past the drain timeout deletes them) and fills the progress into st;
// only the drain helper's listing, EvictPod and DeletePod are used, so no reconcile waits.
func (r *Reconciler) drainPass(ctx context.Context, nm *nmv1beta1.NodeMaintenance, st *nmv1beta1.NodeMaintenanceStatus, pods []corev1.Pod) (ctrl.Result, error) {
	nodeName := nm.Spec.NodeName
	if len(pods) == 0 {
		r.succeed(st, "")
		return ctrl.Result{}, nil
	}
	h := drainer.NewHelper(ctx, r.opts.KubeClient, log.FromContext(ctx))
	var deadline time.Time // the drain times out at deadline when bounded
	bounded := nm.Spec.DrainTimeout != nil && st.DrainStartTime != nil
	if bounded {
		deadline = st.DrainStartTime.Add(nm.Spec.DrainTimeout.Duration)
	}
	now := r.opts.Clock.Now()

	if bounded && !now.Before(deadline) {
		deleted, failed := drainer.DeletePods(h, pods)
		if len(failed) > 0 {
			st.LastError = patch.Truncate("drain timeout expired; "+errors.Join(failed...).Error(), 1024)
			return ctrl.Result{}, errors.Join(failed...)
		}
		msg := fmt.Sprintf("drain of node %s did not finish within the drain timeout %s: deleted %d remaining pod(s) without eviction: %s",
			nodeName, nm.Spec.DrainTimeout.Duration, len(deleted), listNames(deleted))
		r.events.Eventf(nm, nil, corev1.EventTypeWarning, EventDrainTimedOut, "Drain", "%s", msg)
		r.succeed(st, msg)
		return ctrl.Result{}, nil
	}

	gv, err := drain.CheckEvictionSupport(r.opts.KubeClient)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("checking eviction support: %w", err)
	}
	evictErrs := map[string]error{} // by namespace/name
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue // already terminating
		}
		if err := h.EvictPod(p, gv); err != nil && !apierrors.IsNotFound(err) {
			evictErrs[p.Namespace+"/"+p.Name] = err
		}
	}

	// Pods evicted without a grace period are gone already: look again.
	list, errs := h.GetPodsForDeletion(nodeName)
	if len(errs) > 0 {
		return ctrl.Result{}, fmt.Errorf("listing pods of node %s: %w", nodeName, errors.Join(errs...))
	}
	remaining := list.Pods()
	if len(remaining) == 0 {
		r.succeed(st, "")
		return ctrl.Result{}, nil
	}
	pendingStatus(st, remaining)
	msg := passMessage(remaining, evictErrs)
	if st.DrainStartTime != nil && !now.Before(st.DrainStartTime.Add(DrainerTimeout)) {
		msg = drainerError(remaining, evictErrs)
	}
	if bounded {
		msg += fmt.Sprintf("; remaining pods will be deleted without eviction at %s (drain timeout %s)",
			deadline.UTC().Format("2006-01-02T15:04:05Z"), nm.Spec.DrainTimeout.Duration)
	}
	st.LastError = patch.Truncate(msg, 1024)
	log.FromContext(ctx).V(1).Info("drain pass did not finish", "remainingPods", len(remaining))

	if until := deadline.Sub(now); bounded && until < r.opts.PollInterval {
		return ctrl.Result{RequeueAfter: max(until, 0) + 10*time.Millisecond}, nil
	}
	return ctrl.Result{RequeueAfter: r.opts.PollInterval}, nil
}

// passMessage says why a drain pass left pods (this project's text, in the first DrainerTimeout).
func passMessage(remaining []corev1.Pod, evictErrs map[string]error) string {
	var blocked, failed []string
	for _, p := range remaining {
		switch key, err := p.Namespace+"/"+p.Name, evictErrs[p.Namespace+"/"+p.Name]; {
		case err == nil:
		case apierrors.IsTooManyRequests(err):
			blocked = append(blocked, key)
		default:
			failed = append(failed, fmt.Sprintf("%s: %v", key, err))
		}
	}
	var msgs []string
	if len(blocked) > 0 {
		msgs = append(msgs, "eviction blocked by a PodDisruptionBudget: "+listNames(blocked))
	}
	if len(failed) > 0 {
		msgs = append(msgs, "eviction failed: "+listNames(failed))
	}
	if len(msgs) == 0 {
		msgs = append(msgs, fmt.Sprintf("waiting for %d pod(s) to terminate", len(remaining)))
	}
	return strings.Join(msgs, "; ")
}

// drainerError is the error medik8s's kubectl drain returns when its DrainerTimeout ends with these pods
// left: per pod (by namespace and name) an eviction still refused (429), another eviction error, or a
// wait for the pod to go; aggregated as kubectl aggregates them.
func drainerError(remaining []corev1.Pod, evictErrs map[string]error) string {
	sorted := slices.SortedFunc(slices.Values(remaining), func(a, b corev1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	errs := make([]error, 0, len(sorted))
	for _, p := range sorted {
		switch err := evictErrs[p.Namespace+"/"+p.Name]; {
		case err == nil:
			errs = append(errs, fmt.Errorf("error when waiting for pod %q in namespace %q to terminate: %w", p.Name, p.Namespace, context.DeadlineExceeded))
		case apierrors.IsTooManyRequests(err):
			errs = append(errs, fmt.Errorf("error when evicting pods/%q -n %q: global timeout reached: %v", p.Name, p.Namespace, DrainerTimeout))
		default:
			errs = append(errs, fmt.Errorf("error when evicting pods/%q -n %q: %w", p.Name, p.Namespace, err))
		}
	}
	return utilerrors.NewAggregate(errs).Error()
}

// succeed marks the drain done; note (may be empty) goes to lastError.
func (r *Reconciler) succeed(st *nmv1beta1.NodeMaintenanceStatus, note string) {
	st.Phase = nmv1beta1.MaintenanceSucceeded
	st.DrainProgress = 100
	st.PendingPods, st.PendingPodsRefs = nil, nil
	st.LastError = note
}

// listNames sorts names and lists at most maxPodsInMessage of them.
func listNames(names []string) string {
	slices.Sort(names)
	if len(names) > maxPodsInMessage {
		return strings.Join(names[:maxPodsInMessage], ", ") + fmt.Sprintf(" and %d more", len(names)-maxPodsInMessage)
	}
	return strings.Join(names, ", ")
}
