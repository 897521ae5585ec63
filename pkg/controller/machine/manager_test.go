package machine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// The controller in a manager: Machine and Node watches drive it without
// polling. It provisions a Machine to Running (nodelink's nodeRef wakes it),
// then sits idle (no provider calls, no writes); a drain blocked by a PDB
// retries only with a long backoff, and deleting the Node (a Node event)
// wakes it to finish the deletion at once.
func TestControllerWithManager(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	mgr := env.NewManager(t, cfg, cache.Options{DefaultNamespaces: map[string]cache.Config{f.ns: {}}})
	wt := testenv.NewWorkTracker()
	act := &fakeActuator{CreateSetsInstance: true, ProviderID: "test://" + f.ns + "/managed", Addresses: []string{"10.2.0.1"}}
	r := NewReconciler(Options{Client: mgr.GetClient(), Actuator: act, Recorder: f.rec, Namespace: f.ns})
	r.waitBackoff = fastBackoff()
	// Only a watch event can bring a blocked drain back within the test.
	r.drainBackoff = workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](10*time.Minute, time.Hour)
	testenv.Setup(t, mgr, wt, r)
	testenv.Run(t, mgr)

	node := f.node(f.nodeName("managed"), corev1.ConditionTrue, nil)
	m := f.machine("managed")
	poll.Eventually(t, 15*time.Second, "phase Provisioned", func(context.Context) (bool, error) {
		return phaseOf(f.mustGet(m)) == machinev1beta1.PhaseProvisioned, nil
	})

	// nodelink links the node (retried: the controller may still be writing
	// the status it reached Provisioned with).
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := f.mustGet(m)
		got.Status.NodeRef = &corev1.ObjectReference{Kind: "Node", Name: node.Name, UID: node.UID}
		return env.Client.Status().Update(f.ctx, got)
	}); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 5*time.Second, "phase Running", func(context.Context) (bool, error) {
		return phaseOf(f.mustGet(m)) == machinev1beta1.PhaseRunning, nil
	})

	// Idle: every event handled and nothing due within the next hour, so
	// no polling of the provider and no writes (a write would wake the
	// controller again).
	poll.Eventually(t, 15*time.Second, "the controller idle with no requeue within an hour", wt.Quiescent(time.Hour,
		testenv.CaughtUp(env.Client, mgr.GetClient(), &machinev1beta1.MachineList{}, client.InNamespace(f.ns)),
		testenv.CaughtUp(env.Client, mgr.GetClient(), &corev1.NodeList{})))

	// A drain blocked by a PDB.
	web := map[string]string{"app": "web"}
	f.pod("web-1", node.Name, web, 0)
	f.blockingPDB("web", web, 1)
	act.Set(func(a *fakeActuator) { a.DeleteRemovesInstance = true })
	f.deleteMachine(m)
	want := fmt.Sprintf("evicting %s/web-1: blocked by PodDisruptionBudget %[1]s/web (0 disruptions allowed)", f.ns)
	poll.Eventually(t, 15*time.Second, "Drained=False naming the PDB", func(context.Context) (bool, error) {
		c := conditions.Get(f.mustGet(m).Status.Conditions, DrainedCondition)
		return c != nil && c.Reason == ReasonDrainInProgress && strings.Contains(c.Message, want), nil
	})

	// The admin deletes the Node: the Node event finishes the deletion.
	if err := env.Client.Delete(f.ctx, node); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 5*time.Second, "the Machine to be deleted after its Node went away", func(context.Context) (bool, error) {
		return f.get(m) == nil, nil
	})
	if act.Calls(opDelete) != 1 {
		t.Errorf("provider calls: %v", act.AllCalls())
	}
}
