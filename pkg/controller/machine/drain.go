package machine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/kubectl/pkg/drain"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// maxConditionMessage bounds condition messages written by the drain.
const maxConditionMessage = 2048

// drainStage runs the drain stage of the deletion pipeline. done reports that
// the Machine is drained (Drained=True) and the pipeline may continue.
func (r *Reconciler) drainStage(ctx context.Context, s *scope) (res ctrl.Result, done bool, err error) {
	m := s.m
	var node *corev1.Node
	if ref := m.Status.NodeRef; ref != nil && ref.Name != "" {
		n := &corev1.Node{}
		switch err := r.client.Get(ctx, client.ObjectKey{Name: ref.Name}, n); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return ctrl.Result{}, false, fmt.Errorf("getting node %s: %w", ref.Name, err)
		case ref.UID != "" && n.UID != ref.UID:
			// A new node reuses the name: the Machine's node is gone.
		default:
			node = n
		}
	}

	dec := decideDrain(m, node)
	switch dec.Action {
	case drainBlocked:
		r.setDrained(s, newCondition(DrainedCondition, corev1.ConditionFalse, ReasonDrainBlocked, machinev1beta1.ConditionSeverityInfo, dec.Message),
			corev1.EventTypeNormal, EventDrainBlocked)
		return ctrl.Result{}, false, nil
	case drainSkip:
		r.setDrained(s, newCondition(DrainedCondition, corev1.ConditionTrue, ReasonDrainSkipped, "", dec.Message),
			corev1.EventTypeNormal, EventDrainSkipped)
		return ctrl.Result{}, true, nil
	}
	return r.drain(ctx, s, node)
}

// drainStart returns when the drain started, if it has: the
// lastTransitionTime of Drained=False/DrainInProgress, persisted in the
// Machine's status so that restarts do not reset the drain timeout.
func drainStart(m *machinev1beta1.Machine) (time.Time, bool) {
	c := getCondition(m.Status.Conditions, DrainedCondition)
	if c == nil || c.Status != corev1.ConditionFalse || c.Reason != ReasonDrainInProgress {
		return time.Time{}, false
	}
	return c.LastTransitionTime.Time, true
}

// drain cordons the node and makes one eviction attempt, or deletes the
// remaining pods once the drain timeout expired.
func (r *Reconciler) drain(ctx context.Context, s *scope, node *corev1.Node) (ctrl.Result, bool, error) {
	m := s.m
	logger := log.FromContext(ctx).WithValues("node", node.Name)
	if r.kube == nil {
		return ctrl.Result{}, false, errors.New("cannot drain: the Reconciler has no Kubernetes clientset (Options.KubeClient)")
	}
	timeout, timeoutErr := effectiveDrainTimeout(m.Annotations, r.nodeDrainTimeout)
	note := ""
	if timeoutErr != nil {
		note = fmt.Sprintf("; %v; using the default timeout (%s)", timeoutErr, describeTimeout(timeout))
	}

	// Cordon, keeping control-plane drains one at a time.
	if blocker, err := r.cordonForDrain(ctx, node, m); err != nil {
		return ctrl.Result{}, false, err
	} else if blocker != "" {
		msg := fmt.Sprintf(controlPlaneWaitPrefix+"%s to finish draining: only one control-plane node is drained at a time", blocker)
		// A drain that already started (our node was uncordoned meanwhile)
		// stays DrainInProgress: its start, and so its timeout, survive.
		c := drainWaitCondition(getCondition(m.Status.Conditions, DrainedCondition), msg+note)
		if !waitingForControlPlaneDrain(m) || conditionChanged(m.Status.Conditions, c) {
			r.eventf(m, corev1.EventTypeNormal, EventDrainBlocked, "Drain", "%s", c.Message)
		}
		m.Status.Conditions = setCondition(m.Status.Conditions, c, r.now())
		return ctrl.Result{RequeueAfter: r.drainBackoff.When(s.key)}, false, nil
	}

	started, inProgress := drainStart(m)
	if !inProgress {
		started = r.now()
		r.setDrained(s, newCondition(DrainedCondition, corev1.ConditionFalse, ReasonDrainInProgress, machinev1beta1.ConditionSeverityInfo,
			fmt.Sprintf("draining node %s", node.Name)+note), corev1.EventTypeNormal, EventDrainProceeds)
		// Persist the start: the drain timeout is measured from it.
		if err := r.patchStatus(ctx, s); err != nil {
			return ctrl.Result{}, false, err
		}
		if c := getCondition(m.Status.Conditions, DrainedCondition); c != nil {
			started = c.LastTransitionTime.Time
		}
	}

	elapsed := r.now().Sub(started)
	if timeout > 0 && elapsed >= timeout {
		return r.forceDrain(ctx, s, node, timeout, started, note)
	}
	attempt := r.attemptTimeout
	if timeout > 0 && timeout-elapsed < attempt {
		attempt = max(timeout-elapsed, time.Second)
	}

	remaining, detail, err := r.drainAttempt(ctx, node, attempt)
	if err == nil && len(remaining) == 0 {
		DrainDurationSeconds.Observe(r.now().Sub(started).Seconds())
		r.setDrained(s, newCondition(DrainedCondition, corev1.ConditionTrue, ReasonDrained, "", fmt.Sprintf("node %s drained", node.Name)),
			corev1.EventTypeNormal, EventDrainSucceeded)
		r.drainBackoff.Forget(s.key)
		return ctrl.Result{}, true, nil
	}
	logger.Info("drain attempt did not finish", "remainingPods", len(remaining), "error", errString(err))

	msg := fmt.Sprintf("draining node %s", node.Name)
	if len(remaining) > 0 {
		msg += fmt.Sprintf(": %d pod(s) remaining: %s", len(remaining), detail)
	} else if detail != "" {
		msg += ": " + detail
	}
	after := r.drainBackoff.When(s.key)
	if timeout > 0 {
		deadline := started.Add(timeout)
		msg += fmt.Sprintf("; remaining pods will be deleted without eviction at %s (drain timeout %s)", deadline.UTC().Format(time.RFC3339), timeout)
		if until := deadline.Sub(r.now()); until < after {
			after = max(until, 100*time.Millisecond)
		}
	}
	r.setDrained(s, newCondition(DrainedCondition, corev1.ConditionFalse, ReasonDrainInProgress, machinev1beta1.ConditionSeverityWarning,
		truncate(msg+note, maxConditionMessage)), "", "")
	return ctrl.Result{RequeueAfter: after}, false, nil
}

// forceDrain ends a drain whose timeout expired: the remaining pods are
// deleted (no eviction, so PodDisruptionBudgets no longer hold them) and the
// deletion proceeds without waiting for them to terminate.
func (r *Reconciler) forceDrain(ctx context.Context, s *scope, node *corev1.Node, timeout time.Duration, started time.Time, note string) (ctrl.Result, bool, error) {
	h := r.drainHelper(ctx, node, r.attemptTimeout)
	list, errs := h.GetPodsForDeletion(node.Name)
	if len(errs) > 0 {
		return ctrl.Result{}, false, fmt.Errorf("drain timed out; listing pods of node %s: %w", node.Name, utilerrors.NewAggregate(errs))
	}
	var deleted []string
	var failed []error
	for _, p := range list.Pods() {
		if err := h.DeletePod(p); err != nil && !apierrors.IsNotFound(err) {
			failed = append(failed, fmt.Errorf("deleting pod %s/%s: %w", p.Namespace, p.Name, err))
			continue
		}
		deleted = append(deleted, p.Namespace+"/"+p.Name)
	}
	if len(failed) > 0 {
		return ctrl.Result{}, false, fmt.Errorf("drain timed out: %w", utilerrors.NewAggregate(failed))
	}
	DrainTimeoutsTotal.Inc()
	DrainDurationSeconds.Observe(r.now().Sub(started).Seconds())
	sort.Strings(deleted)
	msg := fmt.Sprintf("drain of node %s did not finish within %s: deleted %d remaining pod(s) without eviction", node.Name, timeout, len(deleted))
	if len(deleted) > 0 {
		shown := deleted
		if len(shown) > maxPodsInMessage {
			shown = append(shown[:maxPodsInMessage:maxPodsInMessage], fmt.Sprintf("and %d more", len(deleted)-maxPodsInMessage))
		}
		msg += ": " + strings.Join(shown, ", ")
	}
	r.setDrained(s, newCondition(DrainedCondition, corev1.ConditionTrue, ReasonDrainTimedOut, "", truncate(msg+note, maxConditionMessage)),
		corev1.EventTypeWarning, EventDrainTimedOut)
	r.drainBackoff.Forget(s.key)
	return ctrl.Result{}, true, nil
}

// drainAttempt evicts the node's pods for at most timeout. It returns the
// pods still there and a description of what holds them.
func (r *Reconciler) drainAttempt(ctx context.Context, node *corev1.Node, timeout time.Duration) ([]corev1.Pod, string, error) {
	h := r.drainHelper(ctx, node, timeout)
	list, errs := h.GetPodsForDeletion(node.Name)
	if len(errs) > 0 {
		err := utilerrors.NewAggregate(errs)
		return nil, "cannot list the pods to evict: " + err.Error(), err
	}
	pods := list.Pods()
	if len(pods) == 0 {
		return nil, "", nil
	}
	evictErr := h.DeleteOrEvictPods(pods)
	if evictErr == nil {
		return nil, "", nil
	}
	after, errs := h.GetPodsForDeletion(node.Name)
	if len(errs) > 0 {
		return pods, describeBlockingPods(pods, nil) + "; last error: " + truncate(evictErr.Error(), 300), evictErr
	}
	remaining := after.Pods()
	if len(remaining) == 0 {
		return nil, "", nil
	}
	pdbs, err := r.listPDBs(ctx, remaining)
	if err != nil {
		log.FromContext(ctx).Error(err, "listing PodDisruptionBudgets to explain a blocked drain")
	}
	detail := describeBlockingPods(remaining, pdbs)
	if !strings.Contains(detail, "PodDisruptionBudget") {
		detail += "; last error: " + truncate(evictErr.Error(), 300)
	}
	return remaining, detail, evictErr
}

// listPDBs lists the PodDisruptionBudgets of the pods' namespaces.
func (r *Reconciler) listPDBs(ctx context.Context, pods []corev1.Pod) ([]policyv1.PodDisruptionBudget, error) {
	seen := map[string]bool{}
	var out []policyv1.PodDisruptionBudget
	var errs []error
	for _, p := range pods {
		if seen[p.Namespace] {
			continue
		}
		seen[p.Namespace] = true
		l, err := r.kube.PolicyV1().PodDisruptionBudgets(p.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, l.Items...)
	}
	return out, errors.Join(errs...)
}

// drainHelper configures kubectl's drain helper: eviction API (PDBs
// honoured), DaemonSet pods ignored, emptyDir data deleted, unmanaged pods
// deleted too; on an unreachable node pods get a 1s grace period and pods
// already terminating for over 1s are not waited for.
func (r *Reconciler) drainHelper(ctx context.Context, node *corev1.Node, timeout time.Duration) *drain.Helper {
	w := logWriter{log.FromContext(ctx).WithValues("node", node.Name)}
	h := &drain.Helper{
		Ctx:                  ctx,
		Client:               r.kube,
		Force:                true,
		GracePeriodSeconds:   -1,
		IgnoreAllDaemonSets:  true,
		DeleteEmptyDirData:   true,
		Timeout:              timeout,
		EvictErrorRetryDelay: r.evictRetryDelay,
		Out:                  w,
		ErrOut:               w,
	}
	if nodeUnreachable(node) {
		h.GracePeriodSeconds = 1
		h.SkipWaitForDeleteTimeoutSeconds = 1
	}
	return h
}

// cordonForDrain cordons the node and marks it with DrainingAnnotation. A
// control-plane node is not cordoned while another control-plane node is
// being drained by us (its DrainingAnnotation names a Machine that exists and
// is being deleted); the other node's name is returned then. The check and
// the cordon are serialized and use uncached reads, so two concurrent
// reconciles cannot both start a control-plane drain.
func (r *Reconciler) cordonForDrain(ctx context.Context, node *corev1.Node, m *machinev1beta1.Machine) (string, error) {
	want := m.Namespace + "/" + m.Name
	if node.Spec.Unschedulable && node.Annotations[DrainingAnnotation] == want {
		return "", nil
	}
	if isControlPlaneNode(node) {
		r.cpMu.Lock()
		defer r.cpMu.Unlock()
		var reader client.Reader = r.client
		if r.apiReader != nil {
			reader = r.apiReader
		}
		nodes := &corev1.NodeList{}
		if err := reader.List(ctx, nodes); err != nil {
			return "", fmt.Errorf("listing nodes: %w", err)
		}
		active := map[string]bool{}
		for i := range nodes.Items {
			n := &nodes.Items[i]
			owner := n.Annotations[DrainingAnnotation]
			if _, seen := active[owner]; seen || !isControlPlaneNode(n) || !cordonedByUs(n) || n.DeletionTimestamp != nil {
				continue
			}
			ok, err := drainOwnerActive(ctx, reader, owner)
			if err != nil {
				return "", err
			}
			active[owner] = ok
		}
		if ok, other := controlPlaneDrainAllowed(node, nodes.Items, active); !ok {
			return other, nil
		}
	}
	base := node.DeepCopy()
	node.Spec.Unschedulable = true
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[DrainingAnnotation] = want
	if err := r.client.Patch(ctx, node, client.MergeFrom(base)); err != nil {
		return "", fmt.Errorf("cordoning node %s: %w", node.Name, err)
	}
	return "", nil
}

// drainOwnerActive reports whether the Machine a DrainingAnnotation value
// ("<namespace>/<name>") names still exists and is being deleted, i.e. the
// annotation is not stale.
func drainOwnerActive(ctx context.Context, reader client.Reader, owner string) (bool, error) {
	ns, name, ok := strings.Cut(owner, "/")
	if !ok || ns == "" || name == "" {
		return false, nil
	}
	m := &machinev1beta1.Machine{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("getting Machine %s named by the %s annotation: %w", owner, DrainingAnnotation, err)
	}
	return !m.DeletionTimestamp.IsZero(), nil
}

// setDrained sets the Drained condition and, when its status or reason
// changes, records the event (eventReason may be empty for none).
func (r *Reconciler) setDrained(s *scope, c machinev1beta1.Condition, eventType, eventReason string) {
	if eventReason != "" && conditionChanged(s.m.Status.Conditions, c) {
		r.eventf(s.m, eventType, eventReason, "Drain", "%s", c.Message)
	}
	s.m.Status.Conditions = setCondition(s.m.Status.Conditions, c, r.now())
}

func describeTimeout(d time.Duration) string {
	if d == 0 {
		return "none: wait forever"
	}
	return d.String()
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// logWriter turns the drain helper's progress output into log lines.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	if msg := strings.TrimSpace(string(p)); msg != "" {
		w.log.V(1).Info(msg)
	}
	return len(p), nil
}
