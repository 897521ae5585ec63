package machinedeployment

import (
	"cmp"
	"context"
	"maps"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/index"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/updates"
)

// SetupWithManager registers the controller with mgr: MachineDeployments, MachineSets (orphans to
// the MachineDeployments selecting them) and Machines (through their MachineSet).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	r.opts.Client, r.opts.APIReader = cmp.Or(r.opts.Client, mgr.GetClient()), cmp.Or(r.opts.APIReader, mgr.GetAPIReader())
	if r.events.Recorder == nil {
		r.events.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	// Its own index name: a namespace-restricted cache fails a second registration of machineset's.
	if err := index.Register(context.Background(), mgr.GetFieldIndexer(), index.Index{
		Object: &machinev1beta1.Machine{}, Name: IndexMachineController, Extract: func(o client.Object) []string {
			if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
				return []string{string(ref.UID)}
			}
			return nil
		},
	}); err != nil {
		return err
	}
	inNS := predicate.NewPredicateFuncs(func(o client.Object) bool { return r.opts.Namespace == "" || o.GetNamespace() == r.opts.Namespace })
	return ctrl.NewControllerManagedBy(mgr).
		Named("machinedeployment").
		// Status changes too: the safety controller's Frozen changes what the rollout may do.
		For(&mdv1beta1.MachineDeployment{}, builder.WithPredicates(inNS, predicate.ResourceVersionChangedPredicate{})).
		Watches(&machinev1beta1.MachineSet{}, handler.EnqueueRequestsFromMapFunc(r.setToDeployments),
			builder.WithPredicates(inNS, predicate.ResourceVersionChangedPredicate{})).
		Watches(&machinev1beta1.Machine{}, handler.EnqueueRequestsFromMapFunc(r.machineToDeployment),
			builder.WithPredicates(inNS, updates.Matter(machineChangeMatters))).
		WithOptions(opts).
		Complete(r)
}

// machineChangeMatters: labels, ownership, deletion or the Node changed.
func machineChangeMatters(oldM, newM *machinev1beta1.Machine) bool {
	return !maps.Equal(oldM.Labels, newM.Labels) ||
		!equality.Semantic.DeepEqual(oldM.OwnerReferences, newM.OwnerReferences) ||
		!oldM.DeletionTimestamp.Equal(newM.DeletionTimestamp) ||
		!equality.Semantic.DeepEqual(oldM.Status.NodeRef, newM.Status.NodeRef)
}

// deploymentOf returns the MachineDeployment controlling o, if one does.
func deploymentOf(o metav1.Object) (types.NamespacedName, bool) {
	ref := metav1.GetControllerOfNoCopy(o)
	if ref == nil || ref.Kind != machineDeploymentKind.Kind || ref.APIVersion != machineDeploymentKind.GroupVersion().String() {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}, true
}

// setToDeployments maps a MachineSet to its MachineDeployment, an orphan to those selecting it.
func (r *Reconciler) setToDeployments(ctx context.Context, o client.Object) []reconcile.Request {
	if key, ok := deploymentOf(o); ok {
		return []reconcile.Request{{NamespacedName: key}}
	}
	if metav1.GetControllerOfNoCopy(o) != nil || len(o.GetLabels()) == 0 {
		return nil
	}
	list := &mdv1beta1.MachineDeploymentList{}
	if err := r.opts.Client.List(ctx, list, client.InNamespace(o.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing MachineDeployments for an orphan MachineSet", "machineset", o.GetName())
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		md := &list.Items[i]
		sel, err := metav1.LabelSelectorAsSelector(&md.Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(o.GetLabels())) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(md)})
		}
	}
	return out
}

// machineToDeployment maps a Machine to its MachineSet's MachineDeployment.
func (r *Reconciler) machineToDeployment(ctx context.Context, o client.Object) []reconcile.Request {
	ref := metav1.GetControllerOfNoCopy(o)
	if ref == nil || ref.Kind != "MachineSet" {
		return nil
	}
	ms := &machinev1beta1.MachineSet{}
	if err := r.opts.Client.Get(ctx, types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}, ms); err != nil || ms.UID != ref.UID {
		return nil
	}
	if key, ok := deploymentOf(ms); ok {
		return []reconcile.Request{{NamespacedName: key}}
	}
	return nil
}

// IndexMachineController indexes Machines by their controller's UID.
const IndexMachineController = "machinedeployment:metadata.ownerReferences.controller.uid"
