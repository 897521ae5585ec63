package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/machine-api-operator/machine-api-operator/manifests"
	nmv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand/crdwait/crdwaittest"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

const waitTimeout = 60 * time.Second

// TestMachineHealthCheckRunsWithoutNodeMaintenanceCRD: on a cluster without
// the NodeMaintenance CRD (OpenShift's own operator ships none), the binary's
// controllers start and the MachineHealthCheck controller works; once the
// CRD is installed, the NodeMaintenance controller starts in the same
// process and maintains a node. Breaks if: the NodeMaintenance controller
// were set up outside its crdwait gate (addControllers fails: no match for
// kind NodeMaintenance).
func TestMachineHealthCheckRunsWithoutNodeMaintenanceCRD(t *testing.T) {
	e := crdwaittest.Start(t, manifests.MachineCRDs)
	ctx := context.Background()
	const ns = "mhc-without-nm"
	for _, name := range []string{ns, "medik8s-leases"} {
		if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Run(t, newBinary(t, e, crdwaittest.TestArgs(ns, "0"), "without the NodeMaintenance CRD"))

	mhc := &machinev1beta1.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "workers"},
		Spec: machinev1beta1.MachineHealthCheckSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"role": "worker"}},
			UnhealthyConditions: []machinev1beta1.UnhealthyCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Timeout: metav1.Duration{Duration: 5 * time.Minute}},
			},
		},
	}
	if err := e.Client.Create(ctx, mhc); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, waitTimeout, "the MachineHealthCheck controller reports on the MachineHealthCheck", poll.Check(func() error {
		got := &machinev1beta1.MachineHealthCheck{}
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(mhc), got); err != nil {
			return err
		}
		if got.Status.ExpectedMachines == nil {
			return fmt.Errorf("status.expectedMachines not set: %+v", got.Status)
		}
		return nil
	}))

	e.Install(t, manifests.NodeMaintenanceCRDs)
	if err := e.Client.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}); err != nil {
		t.Fatal(err)
	}
	nm := &nmv1beta1.NodeMaintenance{ObjectMeta: metav1.ObjectMeta{Name: "n1-maintenance"}, Spec: nmv1beta1.NodeMaintenanceSpec{NodeName: "n1"}}
	if err := e.Client.Create(ctx, nm); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, waitTimeout, "the NodeMaintenance controller, started after the CRD appeared, drains the node", poll.Check(func() error {
		got := &nmv1beta1.NodeMaintenance{}
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(nm), got); err != nil {
			return err
		}
		if got.Status.Phase != nmv1beta1.MaintenanceSucceeded {
			return fmt.Errorf("phase %q (lastError %q), want Succeeded", got.Status.Phase, got.Status.LastError)
		}
		return nil
	}))
	node := &corev1.Node{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: "n1"}, node); err != nil {
		t.Fatal(err)
	}
	if !node.Spec.Unschedulable {
		t.Error("node n1 not cordoned")
	}
}

// TestNodeMaintenanceFlag: --node-maintenance defaults to true;
// --node-maintenance=false (what the operator renders where the
// node-maintenance-operator owns the API) and the deprecated
// --disable-node-maintenance turn the controller off.
func TestNodeMaintenanceFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"--node-maintenance=false"}, false},
		{[]string{"--node-maintenance"}, true},
		{[]string{"--disable-node-maintenance"}, false},
	} {
		_, f, err := parse(tc.args, "")
		if err != nil || f.nodeMaintenance != tc.want {
			t.Errorf("parse(%q): nodeMaintenance %v (err %v), want %v", tc.args, f.nodeMaintenance, err, tc.want)
		}
	}
}

// TestStartsWithoutMachineCRDs: on a bare API server the binary runs, not
// ready (check crd-machinehealthcheck), instead of exiting, and becomes ready
// once the Machine API CRDs are installed, although the NodeMaintenance CRD
// is still missing (that controller does not gate readiness). Breaks if:
// the nodemaintenance gate were Required.
func TestStartsWithoutMachineCRDs(t *testing.T) {
	e := crdwaittest.Start(t)
	addr := crdwaittest.FreeAddr(t)
	testenv.Run(t, newBinary(t, e, crdwaittest.TestArgs("mhc-bare", addr), "on a bare API server"))
	poll.Eventually(t, waitTimeout, "not ready while the Machine API CRDs are missing", crdwaittest.ReadyzCondition(addr, false, "crd-machinehealthcheck"))
	e.Install(t, manifests.MachineCRDs)
	poll.Eventually(t, waitTimeout, "ready with the Machine API CRDs, without the NodeMaintenance CRD", crdwaittest.ReadyzCondition(addr, true, ""))
}

// newBinary builds the binary's manager and controllers from args, as main does, failing the
// test (saying where: on what API server) if that fails.
func newBinary(t *testing.T, e *crdwaittest.Env, args []string, where string) manager.Manager {
	t.Helper()
	opts, f, err := parse(args, "")
	mgr, err := crdwaittest.NewManager(e.Config, opts, err, func(mgr manager.Manager) error {
		return addControllers(mgr, testControllerOptions(opts), f)
	})
	if err != nil {
		t.Fatalf("setting the controllers up %s: %v", where, err)
	}
	return mgr
}

// testControllerOptions are the binary's controller options with
// controller-runtime's process-wide name check off: every test of this
// package sets up the same controllers in one process.
func testControllerOptions(opts operand.Options) controller.Options {
	co := opts.ControllerOptions()
	co.SkipNameValidation = ptr.To(true)
	return co
}
