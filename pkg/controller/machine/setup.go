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

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/index"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/updates"
	"github.com/machine-api-operator/machine-api-operator/pkg/nodeutil"
)

// ControllerName is the name events are recorded under; the controller
// itself is named "machine" (logs and metrics).
const ControllerName = "machine-controller"

// SetupWithManager registers the controller: it watches Machines (in the
// cache's namespaces, or Options.Namespace) and Nodes, mapping a Node to the
// Machine whose status.nodeRef names it through a field index, so node
// changes wake the controller without polling. opts.MaxConcurrentReconciles
// 0 means DefaultMaxConcurrentReconciles.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if r.client == nil {
		r.client = mgr.GetClient()
	}
	if r.kube == nil {
		kc, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
		if err != nil {
			return fmt.Errorf("creating the clientset for draining: %w", err)
		}
		r.kube = kc
	}
	if r.apiReader == nil {
		r.apiReader = mgr.GetAPIReader()
	}
	if r.events.Recorder == nil {
		r.events.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	if err := IndexMachinesByNodeRef(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if opts.MaxConcurrentReconciles == 0 {
		opts.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("machine").
		For(&machinev1beta1.Machine{}, builder.WithPredicates(r.machinePredicate())).
		Watches(&corev1.Node{}, r.nodeHandler(), builder.WithPredicates(nodePredicate())).
		WithOptions(opts).
		Complete(r)
}

// IndexMachinesByNodeRef adds the NodeRefNameField index. When the cache
// already has an index of that name on Machines (another controller in the
// same manager registered it), it is left as it is: see index.Register.
func IndexMachinesByNodeRef(ctx context.Context, indexer client.FieldIndexer) error {
	return index.Register(ctx, indexer, index.Index{Object: &machinev1beta1.Machine{}, Name: NodeRefNameField, Extract: machineNodeRefName})
}

func machineNodeRefName(o client.Object) []string {
	m, ok := o.(*machinev1beta1.Machine)
	if !ok || m.Status.NodeRef == nil || m.Status.NodeRef.Name == "" {
		return nil
	}
	return []string{m.Status.NodeRef.Name}
}

// nodeToMachines maps a Node to the Machines whose nodeRef names it.
func (r *Reconciler) nodeToMachines(ctx context.Context, o client.Object) []reconcile.Request {
	list := &machinev1beta1.MachineList{}
	opts := []client.ListOption{client.MatchingFields{NodeRefNameField: o.GetName()}}
	if r.namespace != "" {
		opts = append(opts, client.InNamespace(r.namespace))
	}
	if err := r.client.List(ctx, list, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "mapping a node to machines", "node", o.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// nodeHandler enqueues the Machines of a Node (nodeToMachines) and, when a
// control-plane drain of ours ends (the Node is deleted, uncordoned or loses
// DrainingAnnotation), the deleting Machines waiting for it, so they do not
// sit out their drain backoff.
func (r *Reconciler) nodeHandler() handler.EventHandler {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	add := func(q queue, reqs []reconcile.Request) {
		for _, req := range reqs {
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) {
			add(q, r.nodeToMachines(ctx, e.Object))
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			add(q, r.nodeToMachines(ctx, e.ObjectNew))
			oldN, ok1 := e.ObjectOld.(*corev1.Node)
			newN, ok2 := e.ObjectNew.(*corev1.Node)
			if ok1 && ok2 && controlPlaneDrainEnded(oldN, newN) {
				add(q, r.machinesWaitingForControlPlaneDrain(ctx))
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) {
			add(q, r.nodeToMachines(ctx, e.Object))
			if n, ok := e.Object.(*corev1.Node); ok && controlPlaneDrainEnded(n, nil) {
				add(q, r.machinesWaitingForControlPlaneDrain(ctx))
			}
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q queue) {
			add(q, r.nodeToMachines(ctx, e.Object))
		},
	}
}

// controlPlaneDrainEnded reports whether a control-plane node we cordoned
// for a drain (oldN) stopped counting as drained by us: newN is nil (the Node
// was deleted), being deleted, uncordoned or no longer annotated.
func controlPlaneDrainEnded(oldN, newN *corev1.Node) bool {
	if !isControlPlaneNode(oldN) || !cordonedByUs(oldN) || oldN.DeletionTimestamp != nil {
		return false
	}
	return newN == nil || newN.DeletionTimestamp != nil || !cordonedByUs(newN)
}

// machinesWaitingForControlPlaneDrain lists (from the cache) the deleting
// Machines whose drain waits for another control-plane drain.
func (r *Reconciler) machinesWaitingForControlPlaneDrain(ctx context.Context) []reconcile.Request {
	list := &machinev1beta1.MachineList{}
	var opts []client.ListOption
	if r.namespace != "" {
		opts = append(opts, client.InNamespace(r.namespace))
	}
	if err := r.client.List(ctx, list, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing machines waiting for a control-plane drain")
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if waitingForControlPlaneDrain(&list.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// machinePredicate drops events of other namespaces (Options.Namespace) and
// updates that only change status fields the controller itself writes (or
// its DrainStartedAnnotation), so its own writes do not wake it again. Every
// other change (spec, metadata, nodelink's nodeRef) does.
func (r *Reconciler) machinePredicate() predicate.Predicate {
	inNamespace := func(o client.Object) bool { return r.namespace == "" || o.GetNamespace() == r.namespace }
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return inNamespace(e.Object) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return inNamespace(e.Object) },
		GenericFunc: func(e event.GenericEvent) bool { return inNamespace(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			if !inNamespace(e.ObjectNew) {
				return false
			}
			oldM, ok1 := e.ObjectOld.(*machinev1beta1.Machine)
			newM, ok2 := e.ObjectNew.(*machinev1beta1.Machine)
			if !ok1 || !ok2 {
				return true
			}
			return !onlyOwnStatusChanged(oldM, newM)
		},
	}
}

// onlyOwnStatusChanged reports whether old and new differ only in fields the
// machine controller writes to the status, and its DrainStartedAnnotation.
func onlyOwnStatusChanged(oldM, newM *machinev1beta1.Machine) bool {
	strip := func(m *machinev1beta1.Machine) *machinev1beta1.Machine {
		c := m.DeepCopy()
		c.ResourceVersion = ""
		c.ManagedFields = nil
		delete(c.Annotations, DrainStartedAnnotation)
		if len(c.Annotations) == 0 {
			c.Annotations = nil
		}
		c.Status.Phase = nil
		c.Status.Conditions = nil
		c.Status.LastUpdated = nil
		c.Status.ErrorReason = nil
		c.Status.ErrorMessage = nil
		c.Status.Addresses = nil
		c.Status.ProviderStatus = nil
		return c
	}
	return equality.Semantic.DeepEqual(strip(oldM), strip(newM))
}

// nodePredicate passes Node events that matter to a Machine: creation,
// deletion, readiness (Ready status) changes, cordon changes and our drain
// annotation; heartbeats and other status updates are dropped.
func nodePredicate() predicate.Predicate {
	return updates.Matter(nodeChangeMatters)
}

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
