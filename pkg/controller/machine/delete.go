package machine

// The deletion pipeline and its drain stage (one eviction pass per reconcile, docs/architecture.md).

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
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/drainer"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// reconcileDelete runs the deletion pipeline as far as it can go in one pass: phase Deleting → drain →
// preTerminate hooks → Delete → Exists=false → delete the Node → remove the finalizer.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	m := s.m
	logger := log.FromContext(ctx)
	if !controllerutil.ContainsFinalizer(m, machinev1beta1.MachineFinalizer) {
		s.othersToEnd = true
		return ctrl.Result{}, nil
	}
	setPhase(m, machinev1beta1.PhaseDeleting)

	if decideDeletionStage(m) == stageDrain {
		if res, done, err := r.drainStage(ctx, s); !done || err != nil {
			return res, err
		}
	}
	if decideDeletionStage(m) == stageWaitPreTerminate {
		// Terminable names the hooks; removing them is a Machine update that wakes us.
		logger.V(1).Info("waiting for pre-terminate hooks", "hooks", hookNames(m.Spec.LifecycleHooks.PreTerminate))
		return ctrl.Result{}, nil
	}

	if r.heldByGate(ctx, OperationDelete) {
		return ctrl.Result{RequeueAfter: gateRequeueAfter}, nil
	}
	// An instance the provider could never describe (no addresses) may go despite an invalid configuration.
	neverDescribed := func(err error) bool { return provider.IsInvalidConfiguration(err) && len(m.Status.Addresses) == 0 }
	if err := r.callProvider(ctx, s, OperationDelete, r.opts.Actuator.Delete); err != nil {
		if !neverDescribed(err) {
			if _, ok := provider.AsRequeueAfter(err); !ok {
				r.events.Once(s.key, "", patch.Event{Regarding: m, Type: corev1.EventTypeWarning, Reason: EventFailedDelete, Action: "Delete", Note: err.Error()})
			}
			return requeueOrError(err)
		}
		logger.Info("ignoring invalid configuration on delete: the Machine never got addresses", "err", err)
	}
	r.events.Clear(s.key, "", EventFailedDelete)

	exists, err := r.exists(ctx, s)
	if err != nil && !neverDescribed(err) {
		return requeueOrError(err)
	}
	if exists && err == nil {
		after := r.waitBackoff.When(s.key) // still terminating
		logger.V(1).Info("waiting for the instance to be deleted", "requeueAfter", after)
		return ctrl.Result{RequeueAfter: after}, nil
	}
	r.waitBackoff.Forget(s.key)

	if err := r.deleteNode(ctx, m.Status.NodeRef); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.removeFinalizer(ctx, s)
}

// removeFinalizer ends a deletion: the final status (a watcher sees Drained=True before the Machine
// disappears, as on OpenShift), then our finalizer, then the Deleted event.
func (r *Reconciler) removeFinalizer(ctx context.Context, s *scope) error {
	if err := r.writeStatus(ctx, s); err != nil {
		return err
	}
	if err := r.patchObject(ctx, s, true, func(m *machinev1beta1.Machine) {
		controllerutil.RemoveFinalizer(m, machinev1beta1.MachineFinalizer)
	}); err != nil {
		if apierrors.IsNotFound(err) {
			s.released = true
			return nil
		}
		return fmt.Errorf("removing finalizer: %w", err)
	}
	s.released = true
	r.drainBackoff.Forget(s.key)
	r.events.Forget(s.key)
	r.events.Eventf(s.m, nil, corev1.EventTypeNormal, EventDeleted, "Delete", "Deleted the instance%s and node", providerIDSuffix(s.m))
	log.FromContext(ctx).Info("machine deleted: instance gone, node deleted, finalizer removed")
	return nil
}

// machineNode returns the cached Node nodeRef names; nil when it is gone or a new Node reuses the name.
func (r *Reconciler) machineNode(ctx context.Context, ref *corev1.ObjectReference) (*corev1.Node, error) {
	if ref == nil || ref.Name == "" {
		return nil, nil
	}
	node := &corev1.Node{}
	switch err := r.opts.Client.Get(ctx, client.ObjectKey{Name: ref.Name}, node); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("getting node %s: %w", ref.Name, err)
	case ref.UID != "" && node.UID != ref.UID:
		return nil, nil
	}
	return node, nil
}

// deleteNode deletes the Machine's Node, with nodeRef's UID as precondition, unless the cache shows it gone.
func (r *Reconciler) deleteNode(ctx context.Context, ref *corev1.ObjectReference) error {
	if node, err := r.machineNode(ctx, ref); err != nil || node == nil || node.DeletionTimestamp != nil {
		return err // NotFound: the provider's Delete removed it (kubemark), or it never registered
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ref.Name}}
	var opts []client.DeleteOption
	if ref.UID != "" {
		opts = append(opts, client.Preconditions{UID: &ref.UID})
	}
	err := r.opts.Client.Delete(ctx, node, opts...)
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err) && ref.UID != "":
		log.FromContext(ctx).Info("not deleting node: it was replaced by a new node with the same name", "node", ref.Name)
		return nil
	default:
		return fmt.Errorf("deleting node %s: %w", ref.Name, err)
	}
}

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
	if r.opts.KubeClient == nil {
		return ctrl.Result{}, false, errors.New("cannot drain: the Reconciler has no Kubernetes clientset (Options.KubeClient)")
	}
	timeout, timeoutErr := effectiveDrainTimeout(m.Annotations, r.opts.NodeDrainTimeout)
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
	if timeout > 0 && r.opts.Clock.Now().Sub(started) >= timeout {
		return r.forceDrain(ctx, s, node, timeout, started, note)
	}
	results, pdbs, err := r.evictionPass(ctx, node)
	if remaining, _, _ := passOutcome(results); !recorded && (err != nil || remaining > 0) {
		// A drain that takes more than one pass records its start, for the timeout to survive restarts.
		if perr := r.annotate(ctx, s, DrainStartedAnnotation, started.Format(time.RFC3339)); perr != nil {
			return ctrl.Result{}, false, fmt.Errorf("recording the drain start (%s annotation): %w", DrainStartedAnnotation, perr)
		}
		r.events.Eventf(s.m, nil, corev1.EventTypeNormal, EventDrainProceeds, "Drain", "draining node %s", node.Name)
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
		DrainDurationSeconds.Observe(r.opts.Clock.Now().Sub(started).Seconds())
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
	if err := r.opts.Client.Patch(ctx, node, client.MergeFrom(base)); err != nil {
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
		if until := started.Add(timeout).Sub(r.opts.Clock.Now()); until < after {
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
	start = r.opts.Clock.Now()
	if dt := s.m.DeletionTimestamp; dt != nil && start.Before(dt.Time) {
		start = dt.Time
	}
	return start.UTC().Truncate(time.Second), false
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
	deleted, failed := drainer.DeletePods(h, pods)
	if len(failed) > 0 {
		return ctrl.Result{}, false, fmt.Errorf("drain of node %s timed out: %w", node.Name, utilerrors.NewAggregate(failed))
	}
	DrainTimeoutsTotal.Inc()
	DrainDurationSeconds.Observe(r.opts.Clock.Now().Sub(started).Seconds())
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
	s.m.Status.Conditions = conditions.Set(s.m.Status.Conditions, c, r.opts.Clock.Now())
}
