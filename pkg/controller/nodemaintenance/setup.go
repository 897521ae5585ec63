package nodemaintenance

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	nmv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/index"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/updates"
)

// SetupWithManager registers the controller; every watch maps to the NodeMaintenances of the node. The
// leases come through a cache of their namespace only (the manager's would hold every Lease or none).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	r.opts.Client, r.opts.APIReader = cmp.Or(r.opts.Client, mgr.GetClient()), cmp.Or(r.opts.APIReader, mgr.GetAPIReader())
	if r.opts.KubeClient == nil {
		kc, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
		if err != nil {
			return fmt.Errorf("creating the clientset for draining: %w", err)
		}
		r.opts.KubeClient = kc
	}
	if r.events.Recorder == nil {
		rec := newCoreRecorder(r.opts.KubeClient, mgr.GetScheme())
		if err := mgr.Add(rec); err != nil {
			return fmt.Errorf("adding the event recorder: %w", err)
		}
		r.events.Recorder = rec
	}
	if err := index.Register(context.Background(), mgr.GetFieldIndexer(), index.Index{Object: &nmv1beta1.NodeMaintenance{}, Name: NodeNameField,
		Extract: func(o client.Object) []string {
			if nm, ok := o.(*nmv1beta1.NodeMaintenance); ok && nm.Spec.NodeName != "" {
				return []string{nm.Spec.NodeName}
			}
			return nil
		}}); err != nil {
		return err
	}
	leaseCache, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient:        mgr.GetHTTPClient(),
		Scheme:            mgr.GetScheme(),
		Mapper:            mgr.GetRESTMapper(),
		DefaultNamespaces: map[string]cache.Config{r.opts.LeaseNamespace: {}},
	})
	if err != nil {
		return fmt.Errorf("creating the cache of namespace %s for the node leases: %w", r.opts.LeaseNamespace, err)
	}
	if err := mgr.Add(leaseCache); err != nil {
		return fmt.Errorf("adding the node lease cache: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("nodemaintenance").
		// Not on the controller's own status writes.
		For(&nmv1beta1.NodeMaintenance{}, builder.WithPredicates(updates.Matter(func(o, n client.Object) bool {
			return o.GetGeneration() != n.GetGeneration() ||
				!equality.Semantic.DeepEqual(o.GetDeletionTimestamp(), n.GetDeletionTimestamp()) ||
				!equality.Semantic.DeepEqual(o.GetFinalizers(), n.GetFinalizers())
		}))).
		Watches(&nmv1beta1.NodeMaintenance{}, handler.EnqueueRequestsFromMapFunc(r.siblings), builder.WithPredicates(predicate.Funcs{
			UpdateFunc:  func(event.UpdateEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return r.byNodeName(ctx, o.GetName())
		}),
			builder.WithPredicates(updates.Matter(func(o, n *corev1.Node) bool { return !nodeMaintenanceFieldsEqual(o, n) }))).
		WatchesRawSource(source.Kind(leaseCache, &coordinationv1.Lease{},
			handler.TypedEnqueueRequestsFromMapFunc(r.leaseToMaintenances), leasePredicate())).
		WithOptions(opts).
		Complete(r)
}

func (r *Reconciler) byNodeName(ctx context.Context, nodeName string) []reconcile.Request {
	list := &nmv1beta1.NodeMaintenanceList{}
	if err := r.opts.Client.List(ctx, list, client.MatchingFields{NodeNameField: nodeName}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing NodeMaintenances of a node", "node", nodeName)
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, nm := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: nm.Name}})
	}
	return out
}

// siblings wakes the others of a created or deleted NodeMaintenance's node.
func (r *Reconciler) siblings(ctx context.Context, o client.Object) []reconcile.Request {
	if nm, ok := o.(*nmv1beta1.NodeMaintenance); ok {
		return r.byNodeName(ctx, nm.Spec.NodeName)
	}
	return nil
}

func (r *Reconciler) leaseToMaintenances(ctx context.Context, l *coordinationv1.Lease) []reconcile.Request {
	if nodeName, ok := strings.CutPrefix(l.Name, LeaseNamePrefix); ok && nodeName != "" {
		return r.byNodeName(ctx, nodeName)
	}
	return nil
}

// leasePredicate passes the node leases' creations, deletions and spec changes.
func leasePredicate() predicate.TypedPredicate[*coordinationv1.Lease] {
	return predicate.And(
		predicate.NewTypedPredicateFuncs(func(l *coordinationv1.Lease) bool { return strings.HasPrefix(l.Name, LeaseNamePrefix) }),
		predicate.TypedFuncs[*coordinationv1.Lease]{UpdateFunc: func(e event.TypedUpdateEvent[*coordinationv1.Lease]) bool {
			return !equality.Semantic.DeepEqual(e.ObjectOld.Spec, e.ObjectNew.Spec)
		}})
}
