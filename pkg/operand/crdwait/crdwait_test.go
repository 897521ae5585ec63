package crdwait

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/machine-api-operator/machine-api-operator/manifests"
	nmv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand/crdwait/crdwaittest"
	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

const waitTimeout = 30 * time.Second

var nodeMaintenanceKind = nmv1beta1.GroupVersion.WithKind(nmv1beta1.Kind)

// countingGate is a gate whose Setup adds a NodeMaintenance controller that
// records the names it reconciles.
type countingGate struct {
	setups     atomic.Int32
	reconciled chan string
}

func (c *countingGate) gate(name string, required bool) Gate {
	return Gate{
		Name: name, Kinds: []schema.GroupVersionKind{nodeMaintenanceKind}, Required: required,
		PollInterval: 100 * time.Millisecond,
		Setup: func(mgr manager.Manager) error {
			c.setups.Add(1)
			return ctrl.NewControllerManagedBy(mgr).Named(name).For(&nmv1beta1.NodeMaintenance{}).
				Complete(reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
					select {
					case c.reconciled <- req.Name:
					default:
					}
					return reconcile.Result{}, nil
				}))
		},
	}
}

func newManager(t *testing.T, e *crdwaittest.Env) manager.Manager {
	t.Helper()
	mgr, err := manager.New(e.Config, manager.Options{
		Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

// TestGateWaitsForTheCRD: on an API server without the NodeMaintenance CRD
// the manager runs, the gate reports the missing kind (readiness, metric)
// and sets nothing up; once the CRD is installed, the controller is added to
// the running manager and reconciles a NodeMaintenance.
// Breaks if: missing() counted a NoMatch error as served, or Start ran
// Setup before the kinds were served.
func TestGateWaitsForTheCRD(t *testing.T) {
	e := crdwaittest.Start(t)
	mgr := newManager(t, e)
	c := &countingGate{reconciled: make(chan string, 10)}
	w, err := add(mgr, c.gate("waiting", true))
	if err != nil {
		t.Fatal(err)
	}
	testenv.Run(t, mgr)

	want := "NodeMaintenance.nodemaintenance.medik8s.io/v1beta1"
	poll.Eventually(t, waitTimeout, "the gate reports the missing kind", poll.Check(func() error {
		err := w.ready(nil)
		if err == nil || !strings.Contains(err.Error(), want+" not served") {
			return err
		}
		return nil
	}))
	if got := gaugeValue(t, "waiting", want); got != 1 {
		t.Errorf("%s{controller=waiting} = %v, want 1", "machine_api_operand_waiting_for_crd", got)
	}
	if n := c.setups.Load(); n != 0 {
		t.Fatalf("Setup ran %d times before the CRD was served", n)
	}

	e.Install(t, manifests.NodeMaintenanceCRDs)
	poll.Eventually(t, waitTimeout, "the gate is ready once the CRD is served", poll.Check(func() error { return w.ready(nil) }))
	nm := &nmv1beta1.NodeMaintenance{ObjectMeta: metav1.ObjectMeta{Name: "after-install"}, Spec: nmv1beta1.NodeMaintenanceSpec{NodeName: "n1"}}
	if err := e.Client.Create(context.Background(), nm); err != nil {
		t.Fatal(err)
	}
	select {
	case name := <-c.reconciled:
		if name != "after-install" {
			t.Errorf("reconciled %q, want after-install", name)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the controller added after the CRD appeared did not reconcile the NodeMaintenance")
	}
	if n := c.setups.Load(); n != 1 {
		t.Errorf("Setup ran %d times, want 1", n)
	}
	if got := gaugeValue(t, "waiting", want); got != 0 {
		t.Errorf("machine_api_operand_waiting_for_crd{controller=waiting} = %v after install, want 0", got)
	}
}

// TestGateSetsUpAtOnceWhenServed: with the CRD already served, Add runs
// Setup before returning (the manager starts with the controller, as
// without a gate). Breaks if: Add always deferred to the runnable.
func TestGateSetsUpAtOnceWhenServed(t *testing.T) {
	e := crdwaittest.Start(t, manifests.NodeMaintenanceCRDs)
	mgr := newManager(t, e)
	c := &countingGate{reconciled: make(chan string, 10)}
	w, err := add(mgr, c.gate("served", true))
	if err != nil {
		t.Fatal(err)
	}
	if n := c.setups.Load(); n != 1 {
		t.Fatalf("Setup ran %d times during Add, want 1", n)
	}
	if err := w.ready(nil); err != nil {
		t.Errorf("readiness: %v, want ready", err)
	}
}

// TestGateNeedsNameAndSetup: a gate without them is a programming error.
func TestGateNeedsNameAndSetup(t *testing.T) {
	if err := Add(nil, Gate{Name: "x"}); err == nil {
		t.Error("a gate without Setup was accepted")
	}
}

func gaugeValue(t *testing.T, controller, kind string) float64 {
	t.Helper()
	m := &dto.Metric{}
	if err := WaitingGauge.WithLabelValues(controller, kind).Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}
