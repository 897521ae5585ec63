package safety

import (
	"context"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
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

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/index"
)

// SetupWithManager registers the overshoot controller and its Machine index
// with mgr. It watches MachineSets (spec, labels, annotations) and Machine
// creations and deletions (to their MachineSet owners: a deletion thaws at
// once, not at the next Period).
func (c *OvershootController) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if c.client == nil {
		c.client = mgr.GetClient()
	}
	if c.apiReader == nil {
		c.apiReader = mgr.GetAPIReader()
	}
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
		Watches(&machinev1beta1.Machine{}, handler.Funcs{
			CreateFunc: func(_ context.Context, e event.CreateEvent, q queue) { c.enqueueOwners(e.Object, q) },
			UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) { // a deletion started: it no longer counts
				if e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil {
					c.enqueueOwners(e.ObjectNew, q)
				}
			},
			DeleteFunc: func(_ context.Context, e event.DeleteEvent, q queue) { c.enqueueOwners(e.Object, q) },
		}).
		WithOptions(opts).
		Complete(c)
}

func (c *OvershootController) enqueueOwners(o client.Object, q queue) {
	if c.namespace != "" && o.GetNamespace() != c.namespace {
		return
	}
	for _, name := range machineSetOwnerNames(o) {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}})
	}
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

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
