package machineset

import (
	"cmp"
	"context"
	"maps"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/index"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/machinenode"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/updates"
	"github.com/machine-api-operator/machine-api-operator/pkg/nodeutil"
)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// SetupWithManager registers the controller and its cache indexes with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	r.opts.Client = cmp.Or(r.opts.Client, mgr.GetClient())
	r.opts.APIReader = cmp.Or(r.opts.APIReader, mgr.GetAPIReader())
	if r.events.Recorder == nil {
		r.events.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	ctx := context.Background()
	if err := IndexMachinesByController(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if err := machinenode.IndexMachinesByNodeRef(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("machineset").
		For(&machinev1beta1.MachineSet{}, builder.WithPredicates(
			predicate.NewPredicateFuncs(r.inNamespace),
			// Status changes too: a status computed on a cache behind our own
			// patch is corrected once it catches up.
			predicate.ResourceVersionChangedPredicate{},
		)).
		Watches(&machinev1beta1.Machine{}, r.machineHandler()).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.nodeToMachineSets),
			builder.WithPredicates(updates.Matter(nodeChangeMatters))).
		WithOptions(opts).
		Complete(r)
}

// IndexMachinesByController adds the IndexMachineController index (unless
// another controller of the manager did: see index.Register).
func IndexMachinesByController(ctx context.Context, indexer client.FieldIndexer) error {
	return index.Register(ctx, indexer, index.Index{Object: &machinev1beta1.Machine{}, Name: IndexMachineController, Extract: machineControllerIndex})
}

func machineControllerIndex(o client.Object) []string {
	if ref := controllerOf(o); ref != nil {
		return []string{string(ref.UID)}
	}
	return []string{OrphanIndexValue}
}

func (r *Reconciler) inNamespace(o client.Object) bool {
	return r.opts.Namespace == "" || o.GetNamespace() == r.opts.Namespace
}

// machineHandler records expectation observations and enqueues the
// MachineSets concerned (old and new owner, or those selecting an orphan).
func (r *Reconciler) machineHandler() handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) { r.observed(ctx, q, e.Object, false) },
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) { r.observed(ctx, q, e.Object, true) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			oldM, ok1 := e.ObjectOld.(*machinev1beta1.Machine)
			newM, ok2 := e.ObjectNew.(*machinev1beta1.Machine)
			if !ok1 || !ok2 || !r.inNamespace(newM) {
				return
			}
			if newM.DeletionTimestamp != nil {
				for _, m := range []*machinev1beta1.Machine{oldM, newM} {
					if key, ok := machineSetOwner(m); ok {
						r.expectations.DeletionObserved(key, newM.UID)
					}
				}
			}
			if !machineChangeMatters(oldM, newM) {
				return
			}
			r.enqueueFor(ctx, q, newM)
			if oldKey, ok := machineSetOwner(oldM); ok {
				q.Add(reconcile.Request{NamespacedName: oldKey})
			} else if !maps.Equal(oldM.Labels, newM.Labels) {
				r.enqueueSelecting(ctx, q, oldM)
			}
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q queue) {
			if m, ok := e.Object.(*machinev1beta1.Machine); ok && r.inNamespace(m) {
				r.enqueueFor(ctx, q, m)
			}
		},
	}
}

// observed records that the Machine obj exists or existed (gone: no more).
func (r *Reconciler) observed(ctx context.Context, q queue, obj client.Object, gone bool) {
	m, ok := obj.(*machinev1beta1.Machine)
	if !ok || !r.inNamespace(m) {
		return
	}
	if key, ok := machineSetOwner(m); ok {
		r.expectations.CreationObserved(key, m.Name)
		if gone || m.DeletionTimestamp != nil {
			r.expectations.DeletionObserved(key, m.UID)
		}
	}
	r.enqueueFor(ctx, q, m)
}

func machineChangeMatters(oldM, newM *machinev1beta1.Machine) bool {
	return oldM.UID != newM.UID ||
		!maps.Equal(oldM.Labels, newM.Labels) ||
		!equality.Semantic.DeepEqual(oldM.OwnerReferences, newM.OwnerReferences) ||
		!oldM.DeletionTimestamp.Equal(newM.DeletionTimestamp) ||
		!equality.Semantic.DeepEqual(oldM.Status.NodeRef, newM.Status.NodeRef)
}

func (r *Reconciler) enqueueFor(ctx context.Context, q queue, m *machinev1beta1.Machine) {
	if key, ok := machineSetOwner(m); ok {
		q.Add(reconcile.Request{NamespacedName: key})
		return
	}
	if controllerOf(m) == nil {
		r.enqueueSelecting(ctx, q, m)
	}
}

// enqueueSelecting enqueues the MachineSets selecting m (none without labels).
func (r *Reconciler) enqueueSelecting(ctx context.Context, q queue, m *machinev1beta1.Machine) {
	if len(m.Labels) == 0 {
		return
	}
	list := &machinev1beta1.MachineSetList{}
	if err := r.opts.Client.List(ctx, list, client.InNamespace(m.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing MachineSets for an orphan Machine", "machine", m.Name)
		return
	}
	for i := range list.Items {
		if ms := &list.Items[i]; selectorOf(ms).Matches(labels.Set(m.Labels)) {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(ms)})
		}
	}
}

// nodeToMachineSets maps a Node to its Machines' MachineSets.
func (r *Reconciler) nodeToMachineSets(ctx context.Context, o client.Object) []reconcile.Request {
	reqs := sets.New[reconcile.Request]()
	for _, m := range machinenode.MachinesOfNode(ctx, r.opts.Client, r.opts.Namespace, o) {
		if key, ok := machineSetOwner(m); ok && r.inNamespace(m) {
			reqs.Insert(reconcile.Request{NamespacedName: key})
		}
	}
	return reqs.UnsortedList()
}

// nodeChangeMatters passes changes of the Ready condition and the machine annotation.
func nodeChangeMatters(oldN, newN *corev1.Node) bool {
	if oldN.Annotations[machinenode.MachineAnnotation] != newN.Annotations[machinenode.MachineAnnotation] {
		return true
	}
	a, b := nodeutil.ReadyCondition(oldN), nodeutil.ReadyCondition(newN)
	if a == nil || b == nil {
		return (a == nil) != (b == nil)
	}
	return a.Status != b.Status || !a.LastTransitionTime.Equal(&b.LastTransitionTime)
}
