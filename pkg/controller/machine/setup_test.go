package machine

import (
	"context"
	"slices"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/machinenode"
)

// The Node handler wakes the Machines of the Node and, when a control-plane
// drain of ours ends (Node deleted or uncordoned), the deleting Machines
// waiting for it.
func TestNodeHandlerWakesControlPlaneWaiters(t *testing.T) {
	now := metav1.NewTime(time.Now())
	deletingMachine := func(name, nodeName, drainedReason, drainedMsg string) *machinev1beta1.Machine {
		m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Finalizers: []string{machinev1beta1.MachineFinalizer}, DeletionTimestamp: &now}}
		m.Status.NodeRef = &corev1.ObjectReference{Kind: "Node", Name: nodeName}
		m.Status.Conditions = []machinev1beta1.Condition{{Type: DrainedCondition, Status: corev1.ConditionFalse, Reason: drainedReason, Message: drainedMsg}}
		return m
	}
	c := fake.NewClientBuilder().WithScheme(env.Scheme).
		WithIndex(&machinev1beta1.Machine{}, machinenode.NodeRefNameField, func(o client.Object) []string {
			return []string{o.(*machinev1beta1.Machine).Status.NodeRef.Name}
		}).
		WithObjects(
			deletingMachine("owner", "cp-a", ReasonDrainInProgress, "draining node cp-a"),
			deletingMachine("waiter", "cp-b", ReasonWaitingForControlPlaneDrain, "waiting for control-plane node cp-a to finish draining"),
			deletingMachine("hooked", "cp-c", ReasonDrainBlocked, "blocked by pre-drain hook(s): x (owner y)"),
		).Build()
	r := &Reconciler{opts: Options{Client: c}}
	h := r.nodeHandler()

	drained := cpNode("cp-a", ControlPlaneNodeRoleLabel, true, true)
	uncordoned := cpNode("cp-a", ControlPlaneNodeRoleLabel, false, true)
	tests := []struct {
		name string
		send func(context.Context, workqueue.TypedRateLimitingInterface[reconcile.Request])
		want []string
	}{
		{"uncordoned", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: &drained, ObjectNew: &uncordoned}, q)
		}, []string{"owner", "waiter"}},
		{"deleted", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Delete(ctx, event.DeleteEvent{Object: &drained}, q)
		}, []string{"owner", "waiter"}},
		{"other change", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: &drained, ObjectNew: &drained}, q)
		}, []string{"owner"}},
		{"cordoned", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: &uncordoned, ObjectNew: &drained}, q)
		}, []string{"owner"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			tt.send(context.Background(), q)
			var got []string
			for q.Len() > 0 {
				req, _ := q.Get()
				got = append(got, req.Name)
				q.Done(req)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("enqueued %v, want %v", got, tt.want)
			}
		})
	}
}

// Every controller that needs the nodeRef index registers it: on one manager
// the second registration is recognised by its name and is not an error.
func TestIndexMachinesByNodeRefTwice(t *testing.T) {
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := machinenode.IndexMachinesByNodeRef(context.Background(), mgr.GetFieldIndexer()); err != nil {
			t.Fatalf("registration %d: %v", i+1, err)
		}
	}
}
