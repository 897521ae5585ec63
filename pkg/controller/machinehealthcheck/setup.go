package machinehealthcheck

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/machinenode"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/updates"
)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// SetupWithManager registers the controller and the machinenode.NodeRefNameField index
// with mgr; Machine and Node events are batched.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	r.opts.Client = cmp.Or(r.opts.Client, mgr.GetClient())
	r.opts.APIReader = cmp.Or(r.opts.APIReader, mgr.GetAPIReader())
	if r.events.Recorder == nil {
		r.events.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	if err := machinenode.IndexMachinesByNodeRef(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("machinehealthcheck").
		For(&machinev1beta1.MachineHealthCheck{}, builder.WithPredicates(
			predicate.NewPredicateFuncs(r.inNamespace),
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}),
		)).
		Watches(&machinev1beta1.Machine{}, batched(handler.EnqueueRequestsFromMapFunc(r.mhcsSelecting), eventBatchDelay),
			builder.WithPredicates(machinePredicate(r.opts.NodeStartupTimeoutFrom))).
		Watches(&corev1.Node{}, batched(handler.EnqueueRequestsFromMapFunc(r.nodeToMHCs), eventBatchDelay),
			builder.WithPredicates(updates.Matter(nodeChangeMatters))).
		WithOptions(opts).
		Complete(r)
}

func (r *Reconciler) inNamespace(o client.Object) bool {
	return r.opts.Namespace == "" || o.GetNamespace() == r.opts.Namespace
}

// mhcsSelecting maps Machine m to the MachineHealthChecks selecting it (the handler
// maps an update's old Machine too, so its old labels count).
func (r *Reconciler) mhcsSelecting(ctx context.Context, m client.Object) []reconcile.Request {
	if !r.inNamespace(m) {
		return nil
	}
	list := &machinev1beta1.MachineHealthCheckList{}
	if err := r.opts.Client.List(ctx, list, client.InNamespace(m.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing MachineHealthChecks for a Machine", "machine", m.GetName())
		return nil
	}
	set := labels.Set(m.GetLabels())
	var out []reconcile.Request
	for i := range list.Items {
		if sel, err := metav1.LabelSelectorAsSelector(&list.Items[i].Spec.Selector); err == nil && sel.Matches(set) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}

// nodeToMHCs maps a Node to the MachineHealthChecks selecting the Machines
// whose nodeRef names it, or that its machinenode.MachineAnnotation names.
func (r *Reconciler) nodeToMHCs(ctx context.Context, o client.Object) []reconcile.Request {
	reqs := sets.New[reconcile.Request]()
	for _, m := range machinenode.MachinesOfNode(ctx, r.opts.Client, r.opts.Namespace, o) {
		reqs.Insert(r.mhcsSelecting(ctx, m)...)
	}
	return reqs.UnsortedList()
}

// machinePredicate passes the changes the health decision reads, and of
// status.lastUpdated when the startup clock runs from it.
func machinePredicate(from StartupClock) predicate.Predicate {
	return updates.Matter(func(oldM, newM *machinev1beta1.Machine) bool {
		return machineChangeMatters(oldM, newM) ||
			(from == StartupFromLastUpdated && !equality.Semantic.DeepEqual(oldM.Status.LastUpdated, newM.Status.LastUpdated))
	})
}

func machineChangeMatters(oldM, newM *machinev1beta1.Machine) bool {
	return oldM.UID != newM.UID ||
		!maps.Equal(oldM.Labels, newM.Labels) ||
		!equality.Semantic.DeepEqual(oldM.OwnerReferences, newM.OwnerReferences) ||
		!oldM.DeletionTimestamp.Equal(newM.DeletionTimestamp) ||
		!equality.Semantic.DeepEqual(oldM.Status.Phase, newM.Status.Phase) ||
		!equality.Semantic.DeepEqual(oldM.Status.NodeRef, newM.Status.NodeRef) ||
		hasExternalAnnotation(oldM) != hasExternalAnnotation(newM) // counts against maxUnhealthy
}

func hasExternalAnnotation(m *machinev1beta1.Machine) bool {
	_, ok := m.Annotations[ExternalRemediationAnnotation]
	return ok
}

// nodeChangeMatters: a condition's status or lastTransitionTime, the labels,
// the taints or the machine annotation changed (not heartbeats).
func nodeChangeMatters(oldN, newN *corev1.Node) bool {
	if !maps.Equal(oldN.Labels, newN.Labels) ||
		oldN.Annotations[machinenode.MachineAnnotation] != newN.Annotations[machinenode.MachineAnnotation] ||
		!oldN.DeletionTimestamp.Equal(newN.DeletionTimestamp) ||
		!equality.Semantic.DeepEqual(oldN.Spec.Taints, newN.Spec.Taints) {
		return true
	}
	return !slices.Equal(conditionStates(oldN), conditionStates(newN))
}

type conditionState struct {
	t      corev1.NodeConditionType
	status corev1.ConditionStatus
	since  int64
}

// conditionStates lists a Node's conditions' states, sorted by type.
func conditionStates(n *corev1.Node) []conditionState {
	out := make([]conditionState, 0, len(n.Status.Conditions))
	for _, c := range n.Status.Conditions {
		out = append(out, conditionState{t: c.Type, status: c.Status, since: c.LastTransitionTime.Unix()})
	}
	slices.SortFunc(out, func(a, b conditionState) int { return strings.Compare(string(a.t), string(b.t)) })
	return out
}

// eventBatchDelay batches Machine and Node events: one assessment per delay, not per
// event, during a scale-up (docs/performance.md).
const eventBatchDelay = time.Second

// batched wraps h so that its requests are added after delay: the delaying
// queue keeps one pending entry per MachineHealthCheck.
func batched(h handler.EventHandler, delay time.Duration) handler.EventHandler {
	wrap := func(q queue) queue { return delayedQueue{TypedRateLimitingInterface: q, delay: delay} }
	return handler.Funcs{
		CreateFunc:  func(ctx context.Context, e event.CreateEvent, q queue) { h.Create(ctx, e, wrap(q)) },
		UpdateFunc:  func(ctx context.Context, e event.UpdateEvent, q queue) { h.Update(ctx, e, wrap(q)) },
		DeleteFunc:  func(ctx context.Context, e event.DeleteEvent, q queue) { h.Delete(ctx, e, wrap(q)) },
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q queue) { h.Generic(ctx, e, wrap(q)) },
	}
}

// delayedQueue turns Add into AddAfter(delay).
type delayedQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	delay time.Duration
}

// Add adds item after the delay.
func (d delayedQueue) Add(item reconcile.Request) { d.AddAfter(item, d.delay) }
