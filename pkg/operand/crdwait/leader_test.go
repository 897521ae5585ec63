package crdwait

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/machine-api-operator/machine-api-operator/manifests"
	nmv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand/crdwait/crdwaittest"
	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// TestGateControllerWaitsForLeadership: a controller a gate adds to a
// running manager that is not the leader does not reconcile (the gate runs
// on every replica, its controller only on the leader) until the manager
// takes the lease over. Breaks if: the gate's Setup started the controller
// itself, or the waiter's controllers were added as non-leader runnables.
func TestGateControllerWaitsForLeadership(t *testing.T) {
	ctx := context.Background()
	e := crdwaittest.Start(t)
	const ns, id = "default", "crdwait-leader-test"
	// Another replica holds the lease.
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: id},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("other-replica"),
			LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime:          &metav1.MicroTime{Time: time.Now()},
			RenewTime:            &metav1.MicroTime{Time: time.Now()},
		},
	}
	if err := e.Client.Create(ctx, lease); err != nil {
		t.Fatal(err)
	}
	mgr, err := manager.New(e.Config, manager.Options{
		Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		LeaderElection: true, LeaderElectionID: id, LeaderElectionNamespace: ns,
		LeaseDuration: ptr.To(2 * time.Second), RenewDeadline: ptr.To(time.Second), RetryPeriod: ptr.To(200 * time.Millisecond),
	})
	if err != nil {
		t.Fatal(err)
	}
	c := &countingGate{reconciled: make(chan string, 10)}
	w, err := add(mgr, c.gate("leader", true))
	if err != nil {
		t.Fatal(err)
	}
	testenv.Run(t, mgr)

	e.Install(t, manifests.NodeMaintenanceCRDs)
	poll.Eventually(t, waitTimeout, "the gate sets the controller up on a non-leader", poll.Check(func() error { return w.ready(nil) }))
	nm := &nmv1beta1.NodeMaintenance{ObjectMeta: metav1.ObjectMeta{Name: "while-not-leader"}, Spec: nmv1beta1.NodeMaintenanceSpec{NodeName: "n1"}}
	if err := e.Client.Create(ctx, nm); err != nil {
		t.Fatal(err)
	}
	// Bounded wait for something that must not happen: three of the
	// manager's retry periods and the informer's delivery.
	select {
	case name := <-c.reconciled:
		t.Fatalf("reconciled %q without the lease", name)
	case <-time.After(3 * time.Second):
	}

	// The other replica goes away: its lease expires.
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(lease), lease); err != nil {
		t.Fatal(err)
	}
	lease.Spec.LeaseDurationSeconds = ptr.To[int32](1)
	lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(-time.Hour)}
	if err := e.Client.Update(ctx, lease); err != nil {
		t.Fatal(err)
	}
	select {
	case name := <-c.reconciled:
		if name != "while-not-leader" {
			t.Errorf("reconciled %q, want while-not-leader", name)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the controller did not reconcile once the manager led")
	}
}
