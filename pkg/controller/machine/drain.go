package machine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
)

const (
	maxConditionMessage = 2048             // bounds the condition messages the controller writes
	drainPassTimeout    = 10 * time.Second // bounds a pass's API calls: a slow API server holds no worker
	evictionParallelism = 8                // concurrent eviction requests of a pass
)

// drainStage runs the drain stage of the deletion pipeline; done: Drained=True, the pipeline goes on.
func (r *Reconciler) drainStage(ctx context.Context, s *scope) (res ctrl.Result, done bool, err error) {
	m := s.m
	node, err := r.machineNode(ctx, m.Status.NodeRef)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	switch dec := decideDrain(m, node); dec.Action {
	case drainBlocked:
		r.setDrained(s, conditions.New(DrainedCondition, corev1.ConditionFalse, ReasonDrainBlocked, machinev1beta1.ConditionSeverityInfo, dec.Message),
			corev1.EventTypeNormal, EventDrainBlocked)
		return ctrl.Result{}, false, nil
	case drainSkip:
		r.setDrained(s, conditions.New(DrainedCondition, corev1.ConditionTrue, ReasonDrainSkipped, "", dec.Message),
			corev1.EventTypeNormal, EventDrainSkipped)
		return ctrl.Result{}, true, nil
	}
	return r.drain(ctx, s, node)
}

// drain cordons the node and makes one eviction pass, or forceDrain after the timeout (docs/architecture.md).
func (r *Reconciler) drain(ctx context.Context, s *scope, node *corev1.Node) (ctrl.Result, bool, error) {
	m := s.m
	if r.KubeClient == nil {
		return ctrl.Result{}, false, errors.New("cannot drain: the Reconciler has no Kubernetes clientset (Options.KubeClient)")
	}
	timeout, timeoutErr := effectiveDrainTimeout(m.Annotations, r.NodeDrainTimeout)
	note := ""
	if timeoutErr != nil {
		shown := timeout.String()
		if timeout == 0 {
			shown = "none: wait forever"
		}
		note = fmt.Sprintf("; %v; using the default timeout (%s)", timeoutErr, shown)
	}
	if blocker, err := r.cordonForDrain(ctx, node, m); err != nil {
		return ctrl.Result{}, false, err
	} else if blocker != "" {
		msg := fmt.Sprintf("waiting for control-plane node %s to finish draining: only one control-plane node is drained at a time", blocker)
		r.setDrained(s, conditions.New(DrainedCondition, corev1.ConditionFalse, ReasonWaitingForControlPlaneDrain, machinev1beta1.ConditionSeverityInfo, msg+note),
			corev1.EventTypeNormal, EventDrainBlocked)
		return ctrl.Result{RequeueAfter: r.drainBackoff.When(s.key)}, false, nil
	}

	started, recorded := r.drainStart(s)
	if timeout > 0 && r.Now().Sub(started) >= timeout {
		return r.forceDrain(ctx, s, node, timeout, started, note)
	}
	results, pdbs, err := r.evictionPass(ctx, node)
	if remaining, _, _ := passOutcome(results); !recorded && (err != nil || remaining > 0) {
		// A drain that takes more than one pass records its start, for the timeout to survive restarts.
		if perr := r.recordDrainStart(ctx, s, node, started); perr != nil {
			return ctrl.Result{}, false, perr
		}
	}
	if err != nil { // listing the pods failed: nothing was evicted
		log.FromContext(ctx).Error(err, "drain pass failed", "node", node.Name)
		r.setDrained(s, conditions.New(DrainedCondition, corev1.ConditionFalse, ReasonDrainInProgress, machinev1beta1.ConditionSeverityWarning,
			patch.Truncate(fmt.Sprintf("draining node %s: %v%s", node.Name, err, note), maxConditionMessage)), "", "")
		return r.drainRequeue(s, timeout, started), false, nil
	}
	c, done, progress := passCondition(node.Name, results, pdbs, timeout, started)
	c.Message = patch.Truncate(c.Message+note, maxConditionMessage)
	if done {
		DrainDurationSeconds.Observe(r.Now().Sub(started).Seconds())
		r.setDrained(s, c, corev1.EventTypeNormal, EventDrainSucceeded)
		r.drainBackoff.Forget(s.key)
		return ctrl.Result{}, true, nil
	}
	if progress {
		r.drainBackoff.Forget(s.key) // something was evicted: look again soon
	}
	log.FromContext(ctx).V(1).Info("eviction pass done", "node", node.Name, "drained", c.Message)
	r.setDrained(s, c, "", "")
	return r.drainRequeue(s, timeout, started), false, nil
}

// cordonForDrain cordons the node, or returns the control-plane node whose drain it waits for (serialized).
func (r *Reconciler) cordonForDrain(ctx context.Context, node *corev1.Node, m *machinev1beta1.Machine) (string, error) {
	want := m.Namespace + "/" + m.Name
	if node.Spec.Unschedulable && node.Annotations[DrainingAnnotation] == want {
		return "", nil
	}
	if isControlPlaneNode(node) {
		r.cpMu.Lock()
		defer r.cpMu.Unlock()
		reader := r.freshReader()
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
	metav1.SetMetaDataAnnotation(&node.ObjectMeta, DrainingAnnotation, want)
	if err := r.Client.Patch(ctx, node, client.MergeFrom(base)); err != nil {
		return "", fmt.Errorf("cordoning node %s: %w", node.Name, err)
	}
	return "", nil
}

// drainOwnerActive reports whether the Machine a DrainingAnnotation names exists and is being deleted.
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

// drainRequeue is when to make the next pass: the drain backoff, but no later than the deadline.
func (r *Reconciler) drainRequeue(s *scope, timeout time.Duration, started time.Time) ctrl.Result {
	after := r.drainBackoff.When(s.key)
	if timeout > 0 {
		if until := started.Add(timeout).Sub(r.Now()); until < after {
			after = max(until, 100*time.Millisecond)
		}
	}
	return ctrl.Result{RequeueAfter: after}
}

// drainStart returns DrainStartedAnnotation when valid (recorded), else now but not before the deletion.
func (r *Reconciler) drainStart(s *scope) (start time.Time, recorded bool) {
	if t, ok := drainStartOf(s.m); ok {
		return t, true
	}
	start = r.Now()
	if dt := s.m.DeletionTimestamp; dt != nil && start.Before(dt.Time) {
		start = dt.Time
	}
	return start.UTC().Truncate(time.Second), false
}

// recordDrainStart persists DrainStartedAnnotation and records a DrainProceeds event.
func (r *Reconciler) recordDrainStart(ctx context.Context, s *scope, node *corev1.Node, start time.Time) error {
	if err := r.annotate(ctx, s, DrainStartedAnnotation, start.Format(time.RFC3339)); err != nil {
		return fmt.Errorf("recording the drain start (%s annotation): %w", DrainStartedAnnotation, err)
	}
	r.events.Eventf(s.m, nil, corev1.EventTypeNormal, EventDrainProceeds, "Drain", "draining node %s", node.Name)
	return nil
}

// forceDrain deletes the remaining pods without eviction (no PodDisruptionBudget holds them) and moves on.
func (r *Reconciler) forceDrain(ctx context.Context, s *scope, node *corev1.Node, timeout time.Duration, started time.Time, note string) (ctrl.Result, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, drainPassTimeout)
	defer cancel()
	h := r.drainHelper(ctx, node)
	pods, err := podsToEvict(h, node.Name)
	if err != nil {
		return ctrl.Result{}, false, fmt.Errorf("drain of node %s timed out: %w", node.Name, err)
	}
	var deleted []string
	var failed []error
	for _, p := range pods {
		if err := h.DeletePod(p); err != nil && !apierrors.IsNotFound(err) {
			failed = append(failed, fmt.Errorf("deleting pod %s/%s: %w", p.Namespace, p.Name, err))
			continue
		}
		deleted = append(deleted, p.Namespace+"/"+p.Name)
	}
	if len(failed) > 0 {
		return ctrl.Result{}, false, fmt.Errorf("drain of node %s timed out: %w", node.Name, utilerrors.NewAggregate(failed))
	}
	DrainTimeoutsTotal.Inc()
	DrainDurationSeconds.Observe(r.Now().Sub(started).Seconds())
	sort.Strings(deleted)
	msg := fmt.Sprintf("drain of node %s did not finish within %s: deleted %d remaining pod(s) without eviction", node.Name, timeout, len(deleted))
	if n := len(deleted); n > maxPodsInMessage {
		deleted = append(deleted[:maxPodsInMessage], fmt.Sprintf("and %d more", n-maxPodsInMessage))
	}
	if len(deleted) > 0 {
		msg += ": " + strings.Join(deleted, ", ")
	}
	r.setDrained(s, conditions.New(DrainedCondition, corev1.ConditionTrue, ReasonDrainTimedOut, "", patch.Truncate(msg+note, maxConditionMessage)),
		corev1.EventTypeWarning, EventDrainTimedOut)
	r.drainBackoff.Forget(s.key)
	return ctrl.Result{}, true, nil
}

// setDrained sets Drained and, when its status or reason changes, records the event (if eventReason).
func (r *Reconciler) setDrained(s *scope, c machinev1beta1.Condition, eventType, eventReason string) {
	if eventReason != "" && conditions.Changed(s.m.Status.Conditions, c) {
		r.events.Eventf(s.m, nil, eventType, eventReason, "Drain", "%s", c.Message)
	}
	s.m.Status.Conditions = conditions.Set(s.m.Status.Conditions, c, r.Now())
}
