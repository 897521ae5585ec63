package machine

import (
	"context"
	"fmt"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/kubernetes"
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
	"github.com/machine-api-operator/machine-api-operator/pkg/nodeutil"
)

// ControllerName is the name events are recorded under; the controller itself is named "machine".
const ControllerName = "machine-controller"

// SetupWithManager registers the controller, watching Machines and their Nodes (machinenode.NodeRefNameField index).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if r.opts.Client == nil {
		r.opts.Client = mgr.GetClient()
	}
	if r.opts.KubeClient == nil {
		kc, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
		if err != nil {
			return fmt.Errorf("creating the clientset for draining: %w", err)
		}
		r.opts.KubeClient = kc
	}
	if r.opts.APIReader == nil {
		r.opts.APIReader = mgr.GetAPIReader()
	}
	if r.events.Recorder == nil {
		r.events.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	if err := machinenode.IndexMachinesByNodeRef(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if opts.MaxConcurrentReconciles == 0 {
		opts.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("machine").
		For(&machinev1beta1.Machine{}, builder.WithPredicates(r.machinePredicate())).
		Watches(&corev1.Node{}, r.nodeHandler(), builder.WithPredicates(updates.Matter(nodeChangeMatters))).
		WithOptions(opts).
		Complete(r)
}

// nodeHandler enqueues the Machines of a Node and, when a control-plane drain of ours ends, the Machines
// waiting for it, so they do not sit out their drain backoff.
func (r *Reconciler) nodeHandler() handler.EventHandler {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	enqueue := func(ctx context.Context, q queue, node client.Object, drainEnded bool) {
		ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("node", node.GetName()))
		r.enqueueMachines(ctx, q, nil, "mapping a node to machines", client.MatchingFields{machinenode.NodeRefNameField: node.GetName()})
		if drainEnded {
			r.enqueueMachines(ctx, q, waitingForControlPlaneDrain, "listing machines waiting for a control-plane drain")
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) { enqueue(ctx, q, e.Object, false) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			oldN, ok1 := e.ObjectOld.(*corev1.Node)
			newN, ok2 := e.ObjectNew.(*corev1.Node)
			enqueue(ctx, q, e.ObjectNew, ok1 && ok2 && controlPlaneDrainEnded(oldN, newN))
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) {
			n, ok := e.Object.(*corev1.Node)
			enqueue(ctx, q, e.Object, ok && controlPlaneDrainEnded(n, nil))
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q queue) { enqueue(ctx, q, e.Object, false) },
	}
}

// enqueueMachines adds our cached Machines that keep (nil: all) accepts to q; a failed listing is logged.
func (r *Reconciler) enqueueMachines(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request],
	keep func(*machinev1beta1.Machine) bool, failure string, opts ...client.ListOption) {
	list := &machinev1beta1.MachineList{}
	if r.opts.Namespace != "" {
		opts = append(opts, client.InNamespace(r.opts.Namespace))
	}
	if err := r.opts.Client.List(ctx, list, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, failure)
		return
	}
	for i := range list.Items {
		if keep == nil || keep(&list.Items[i]) {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
}

// controlPlaneDrainEnded reports whether a control-plane node we cordoned (oldN) stopped being drained.
func controlPlaneDrainEnded(oldN, newN *corev1.Node) bool {
	if !isControlPlaneNode(oldN) || !cordonedByUs(oldN) || oldN.DeletionTimestamp != nil {
		return false
	}
	return newN == nil || newN.DeletionTimestamp != nil || !cordonedByUs(newN)
}

// machinePredicate drops events of other namespaces and updates that change only what the controller
// itself writes, so its own writes do not wake it again.
func (r *Reconciler) machinePredicate() predicate.Predicate {
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return r.opts.Namespace == "" || o.GetNamespace() == r.opts.Namespace
	})
	notOurs := updates.Matter(func(oldM, newM *machinev1beta1.Machine) bool { return !onlyOwnStatusChanged(oldM, newM) })
	return predicate.And(inNamespace, notOurs)
}

// onlyOwnStatusChanged reports whether old and new differ only in what the controller writes.
func onlyOwnStatusChanged(oldM, newM *machinev1beta1.Machine) bool {
	strip := func(m *machinev1beta1.Machine) *machinev1beta1.Machine {
		c := m.DeepCopy()
		c.ResourceVersion = ""
		c.ManagedFields = nil
		delete(c.Annotations, DrainStartedAnnotation)
		if len(c.Annotations) == 0 {
			c.Annotations = nil
		}
		c.Status.Phase, c.Status.Conditions, c.Status.LastUpdated = nil, nil, nil
		c.Status.ErrorReason, c.Status.ErrorMessage = nil, nil
		c.Status.Addresses, c.Status.ProviderStatus = nil, nil
		c.Spec.ProviderID = nil // ours too (after Create): the status write waits for nodelink's nodeRef
		return c
	}
	return equality.Semantic.DeepEqual(strip(oldM), strip(newM))
}

// nodeChangeMatters drops Node heartbeats and other changes that do not matter to a Machine.
func nodeChangeMatters(oldN, newN *corev1.Node) bool {
	return readyStatus(oldN) != readyStatus(newN) ||
		oldN.Spec.Unschedulable != newN.Spec.Unschedulable ||
		oldN.Annotations[DrainingAnnotation] != newN.Annotations[DrainingAnnotation] ||
		!oldN.DeletionTimestamp.Equal(newN.DeletionTimestamp) ||
		oldN.UID != newN.UID
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	if c := nodeutil.ReadyCondition(n); c != nil {
		return c.Status
	}
	return ""
}
