package machinehealthcheck

import (
	"time"

	"context"
	"maps"
	"slices"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machine"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/nodelink"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/updates"
)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// SetupWithManager registers the controller and the machine.NodeRefNameField
// index with mgr. It watches MachineHealthChecks (spec and annotation
// changes; its own status writes do not trigger it), Machines (mapped to
// every MachineHealthCheck of their namespace whose selector matches their
// old or new labels) and Nodes (mapped through the Machines whose nodeRef,
// or the Node's machine.openshift.io/machine annotation, names them; only
// condition, label, taint and deletion changes pass).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if r.client == nil {
		r.client = mgr.GetClient()
	}
	if r.apiReader == nil {
		r.apiReader = mgr.GetAPIReader()
	}
	if r.events.Recorder == nil {
		r.events.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	if err := machine.IndexMachinesByNodeRef(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("machinehealthcheck").
		For(&machinev1beta1.MachineHealthCheck{}, builder.WithPredicates(
			predicate.NewPredicateFuncs(r.inNamespace),
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}),
		)).
		Watches(&machinev1beta1.Machine{}, batched(r.machineHandler(), eventBatchDelay), builder.WithPredicates(machinePredicate(r.startupFrom))).
		Watches(&corev1.Node{}, batched(handler.EnqueueRequestsFromMapFunc(r.nodeToMHCs), eventBatchDelay), builder.WithPredicates(nodePredicate())).
		WithOptions(opts).
		Complete(r)
}

func (r *Reconciler) inNamespace(o client.Object) bool {
	return r.namespace == "" || o.GetNamespace() == r.namespace
}

// machineHandler enqueues the MachineHealthChecks selecting a Machine; on an
// update those selecting its old labels too.
func (r *Reconciler) machineHandler() handler.EventHandler {
	enqueue := func(ctx context.Context, q queue, objs ...client.Object) {
		for _, o := range objs {
			if m, ok := o.(*machinev1beta1.Machine); ok && r.inNamespace(m) {
				for _, key := range r.mhcsSelecting(ctx, m) {
					q.Add(reconcile.Request{NamespacedName: key})
				}
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) { enqueue(ctx, q, e.Object) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			enqueue(ctx, q, e.ObjectNew)
			if !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) {
				enqueue(ctx, q, e.ObjectOld)
			}
		},
		DeleteFunc:  func(ctx context.Context, e event.DeleteEvent, q queue) { enqueue(ctx, q, e.Object) },
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q queue) { enqueue(ctx, q, e.Object) },
	}
}

// mhcsSelecting returns the MachineHealthChecks of m's namespace whose
// selector matches m (an empty selector matches every Machine).
func (r *Reconciler) mhcsSelecting(ctx context.Context, m *machinev1beta1.Machine) []types.NamespacedName {
	list := &machinev1beta1.MachineHealthCheckList{}
	if err := r.client.List(ctx, list, client.InNamespace(m.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing MachineHealthChecks for a Machine", "machine", m.Name)
		return nil
	}
	set := labels.Set(m.Labels)
	var out []types.NamespacedName
	for i := range list.Items {
		sel, err := metav1.LabelSelectorAsSelector(&list.Items[i].Spec.Selector)
		if err != nil {
			continue
		}
		if sel.Matches(set) {
			out = append(out, client.ObjectKeyFromObject(&list.Items[i]))
		}
	}
	return out
}

// nodeToMHCs maps a Node to the MachineHealthChecks selecting the Machines
// whose nodeRef names it, or the Machine its machine.openshift.io/machine
// annotation names.
func (r *Reconciler) nodeToMHCs(ctx context.Context, o client.Object) []reconcile.Request {
	var machines []*machinev1beta1.Machine
	list := &machinev1beta1.MachineList{}
	opts := []client.ListOption{client.MatchingFields{machine.NodeRefNameField: o.GetName()}, client.UnsafeDisableDeepCopy}
	if r.namespace != "" {
		opts = append(opts, client.InNamespace(r.namespace))
	}
	if err := r.client.List(ctx, list, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "mapping a Node to Machines", "node", o.GetName())
	}
	for i := range list.Items {
		machines = append(machines, &list.Items[i])
	}
	if ns, name, ok := strings.Cut(o.GetAnnotations()[nodelink.MachineAnnotation], "/"); ok && ns != "" && name != "" &&
		(r.namespace == "" || ns == r.namespace) {
		m := &machinev1beta1.Machine{}
		if err := r.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, m); err == nil {
			machines = append(machines, m)
		}
	}
	seen := map[types.NamespacedName]bool{}
	var reqs []reconcile.Request
	for _, m := range machines {
		for _, key := range r.mhcsSelecting(ctx, m) {
			if !seen[key] {
				seen[key] = true
				reqs = append(reqs, reconcile.Request{NamespacedName: key})
			}
		}
	}
	return reqs
}

// machinePredicate passes creations, deletions and updates of what the
// health decision reads: labels, owners, phase, nodeRef and deletion, and
// status.lastUpdated when the startup clock runs from it.
func machinePredicate(from StartupClock) predicate.Predicate {
	if from == StartupFromLastUpdated {
		return updates.Matter(func(oldM, newM *machinev1beta1.Machine) bool {
			return machineChangeMatters(oldM, newM) || !equality.Semantic.DeepEqual(oldM.Status.LastUpdated, newM.Status.LastUpdated)
		})
	}
	return updates.Matter(machineChangeMatters)
}

func machineChangeMatters(oldM, newM *machinev1beta1.Machine) bool {
	return oldM.UID != newM.UID ||
		!maps.Equal(oldM.Labels, newM.Labels) ||
		!equality.Semantic.DeepEqual(oldM.OwnerReferences, newM.OwnerReferences) ||
		!oldM.DeletionTimestamp.Equal(newM.DeletionTimestamp) ||
		!equality.Semantic.DeepEqual(oldM.Status.Phase, newM.Status.Phase) ||
		!equality.Semantic.DeepEqual(oldM.Status.NodeRef, newM.Status.NodeRef)
}

// nodePredicate passes Node creations and deletions, and updates that
// change a condition's status or lastTransitionTime, the labels, the taints
// or the machine annotation (heartbeats are dropped).
func nodePredicate() predicate.Predicate {
	return updates.Matter(nodeChangeMatters)
}

func nodeChangeMatters(oldN, newN *corev1.Node) bool {
	if !maps.Equal(oldN.Labels, newN.Labels) ||
		oldN.Annotations[nodelink.MachineAnnotation] != newN.Annotations[nodelink.MachineAnnotation] ||
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

// conditionStates lists the (type, status, lastTransitionTime) of a Node's
// conditions, sorted by type.
func conditionStates(n *corev1.Node) []conditionState {
	out := make([]conditionState, 0, len(n.Status.Conditions))
	for _, c := range n.Status.Conditions {
		out = append(out, conditionState{t: c.Type, status: c.Status, since: c.LastTransitionTime.Unix()})
	}
	slices.SortFunc(out, func(a, b conditionState) int { return strings.Compare(string(a.t), string(b.t)) })
	return out
}

// eventBatchDelay is how long Machine and Node events wait before they wake
// their MachineHealthChecks. An assessment covers every target of an MHC, so
// without batching a scale-up of N Machines (each with several events) would
// assess N targets some N times; with it an MHC is assessed at most once per
// delay while events stream in (measured with 2,000 Machines:
// docs/performance.md). Remediation starts at most this much later.
const eventBatchDelay = time.Second

// batched wraps h so that the requests it enqueues are added after delay:
// the delaying queue keeps one pending entry per MachineHealthCheck, so every
// event within the delay is served by one reconcile.
func batched(h handler.EventHandler, delay time.Duration) handler.EventHandler {
	wrap := func(q queue) queue { return delayedQueue{TypedRateLimitingInterface: q, delay: delay} }
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) { h.Create(ctx, e, wrap(q)) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) { h.Update(ctx, e, wrap(q)) },
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) { h.Delete(ctx, e, wrap(q)) },
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q queue) {
			h.Generic(ctx, e, wrap(q))
		},
	}
}

// delayedQueue turns Add into AddAfter(delay).
type delayedQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	delay time.Duration
}

// Add adds item after the delay.
func (d delayedQueue) Add(item reconcile.Request) { d.AddAfter(item, d.delay) }
