package safety

import (
	"cmp"
	"context"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/index"
)

// SetupWithManager registers the overshoot controller and its Machine index with mgr;
// Machine creations and deletions wake their MachineSets (a deletion thaws at once).
func (c *OvershootController) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	c.client, c.apiReader = cmp.Or(c.client, mgr.GetClient()), cmp.Or(c.apiReader, mgr.GetAPIReader())
	if c.events.Recorder == nil {
		c.events.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	if err := index.Register(context.Background(), mgr.GetFieldIndexer(), index.Index{
		Object: &machinev1beta1.Machine{}, Name: IndexMachineSetOwnerName, Extract: machineSetOwnerNames,
	}); err != nil {
		return err
	}
	// One worker: the sets of one MachineDeployment write its freeze.
	opts.MaxConcurrentReconciles = 1
	return ctrl.NewControllerManagedBy(mgr).
		Named("machine-safety-overshooting").
		For(&machinev1beta1.MachineSet{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&machinev1beta1.Machine{}, handler.EnqueueRequestsFromMapFunc(c.ownerSets), builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool { // a deletion started: it no longer counts
				return e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil
			},
		})).
		WithOptions(opts).
		Complete(c)
}

// ownerSets maps a Machine to its MachineSet owners.
func (c *OvershootController) ownerSets(_ context.Context, o client.Object) (out []reconcile.Request) {
	if c.namespace != "" && o.GetNamespace() != c.namespace {
		return nil
	}
	for _, name := range machineSetOwnerNames(o) {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}})
	}
	return out
}

// machineSetOwnerNames are the names of the MachineSets among o's owners.
func machineSetOwnerNames(o client.Object) []string {
	var out []string
	for _, ref := range o.GetOwnerReferences() {
		if ref.Kind == "MachineSet" {
			out = append(out, ref.Name)
		}
	}
	return out
}
