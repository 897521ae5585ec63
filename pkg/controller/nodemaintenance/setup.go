package nodemaintenance

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nmv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/updates"
)

// SetupWithManager registers the controller. It watches NodeMaintenances
// (a create or delete also wakes the others naming the same node, for the
// one-maintenance-per-node rule) and Nodes (a node that appears, or whose
// scheduling fields change, wakes the NodeMaintenances naming it).
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
	if r.reader == nil {
		r.reader = mgr.GetAPIReader()
	}
	if r.recorder == nil {
		r.recorder = mgr.GetEventRecorder(ControllerName)
	}
	if err := IndexByNodeName(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("nodemaintenance").
		For(&nmv1beta1.NodeMaintenance{}, builder.WithPredicates(nmPredicate())).
		Watches(&nmv1beta1.NodeMaintenance{}, handler.EnqueueRequestsFromMapFunc(r.siblings), builder.WithPredicates(createOrDelete())).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.nodeToMaintenances), builder.WithPredicates(nodePredicate())).
		WithOptions(opts).
		Complete(r)
}

// IndexByNodeName adds the NodeNameField index. Registering it a second
// time is not an error.
func IndexByNodeName(ctx context.Context, indexer client.FieldIndexer) error {
	err := indexer.IndexField(ctx, &nmv1beta1.NodeMaintenance{}, NodeNameField, func(o client.Object) []string {
		nm, ok := o.(*nmv1beta1.NodeMaintenance)
		if !ok || nm.Spec.NodeName == "" {
			return nil
		}
		return []string{nm.Spec.NodeName}
	})
	if err != nil && !strings.Contains(err.Error(), "indexer conflict") {
		return fmt.Errorf("indexing NodeMaintenances by %s: %w", NodeNameField, err)
	}
	return nil
}

func (r *Reconciler) byNodeName(ctx context.Context, nodeName string) []reconcile.Request {
	list := &nmv1beta1.NodeMaintenanceList{}
	if err := r.client.List(ctx, list, client.MatchingFields{NodeNameField: nodeName}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing NodeMaintenances of a node", "node", nodeName)
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, nm := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: nm.Name}})
	}
	return out
}

func (r *Reconciler) siblings(ctx context.Context, o client.Object) []reconcile.Request {
	nm, ok := o.(*nmv1beta1.NodeMaintenance)
	if !ok {
		return nil
	}
	return r.byNodeName(ctx, nm.Spec.NodeName)
}

func (r *Reconciler) nodeToMaintenances(ctx context.Context, o client.Object) []reconcile.Request {
	return r.byNodeName(ctx, o.GetName())
}

// nmPredicate ignores the controller's own status writes.
func nmPredicate() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld, e.ObjectNew
			return o.GetGeneration() != n.GetGeneration() ||
				!equality.Semantic.DeepEqual(o.GetDeletionTimestamp(), n.GetDeletionTimestamp()) ||
				!equality.Semantic.DeepEqual(o.GetFinalizers(), n.GetFinalizers())
		},
	}
}

func createOrDelete() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// nodePredicate passes node creations and deletions and changes of the
// fields maintenance manages; status heartbeats are ignored.
func nodePredicate() predicate.Funcs {
	return updates.Matter(func(o, n *corev1.Node) bool { return !nodeMaintenanceFieldsEqual(o, n) })
}
