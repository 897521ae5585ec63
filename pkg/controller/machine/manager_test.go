package machine

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machine/machinetest"
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
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{f.ns: {}}},
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	act := &machinetest.Actuator{CreateSetsInstance: true, ProviderID: "test://" + f.ns + "/managed", Addresses: []string{"10.2.0.1"}}
	r := NewReconciler(Options{Client: mgr.GetClient(), Actuator: act, Recorder: f.rec, Namespace: f.ns})
	r.waitBackoff = fastBackoff()
	// Only a watch event can bring a blocked drain back within the test.
	r.drainBackoff = workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](10*time.Minute, time.Hour)
	if err := r.SetupWithManager(mgr, controller.Options{SkipNameValidation: ptr.To(true)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	node := f.node(f.nodeName("managed"), corev1.ConditionTrue, nil)
	m := f.machine("managed")
	poll.Eventually(t, 15*time.Second, "phase Provisioned", func(context.Context) (bool, error) {
		return phaseOf(f.mustGet(m)) == machinev1beta1.PhaseProvisioned, nil
	})

	// nodelink links the node.
	got := f.mustGet(m)
	got.Status.NodeRef = &corev1.ObjectReference{Kind: "Node", Name: node.Name, UID: node.UID}
	if err := env.Client.Status().Update(f.ctx, got); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 5*time.Second, "phase Running", func(context.Context) (bool, error) {
		return phaseOf(f.mustGet(m)) == machinev1beta1.PhaseRunning, nil
	})

	// Idle: no polling of the provider, no writes.
	time.Sleep(300 * time.Millisecond) // let the last events settle
	calls, rv := act.AllCalls(), f.mustGet(m).ResourceVersion
	time.Sleep(1500 * time.Millisecond)
	if now := act.AllCalls(); !maps.Equal(now, calls) {
		t.Errorf("provider polled while idle: %v → %v", calls, now)
	}
	if now := f.mustGet(m).ResourceVersion; now != rv {
		t.Errorf("Machine written while idle: resourceVersion %s → %s", rv, now)
	}

	// A drain blocked by a PDB.
	web := map[string]string{"app": "web"}
	f.pod("web-1", node.Name, web, 0)
	f.blockingPDB("web", web, 1)
	act.Set(func(a *machinetest.Actuator) { a.DeleteRemovesInstance = true })
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
	if act.Calls(machinetest.Delete) != 1 {
		t.Errorf("provider calls: %v", act.AllCalls())
	}
}
