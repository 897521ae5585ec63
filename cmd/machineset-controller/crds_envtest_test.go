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

	"github.com/machine-api-operator/machine-api-operator/manifests"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand/crdwait/crdwaittest"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// TestStartsWithoutMachineCRDs: on a bare API server the binary runs, not
// ready (check crd-machineset), instead of exiting; once the Machine API
// CRDs are installed it becomes ready and scales a MachineSet without a
// restart. Breaks if: the reconciler were set up outside its crdwait gate.
func TestStartsWithoutMachineCRDs(t *testing.T) {
	e := crdwaittest.Start(t)
	ctx := context.Background()
	const ns = "machineset-bare"
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	addr := crdwaittest.FreeAddr(t)
	opts, f, err := parse([]string{"--namespace=" + ns, "--leader-elect=false", "--metrics-bind-address=0",
		"--health-probe-bind-address=" + addr, "--webhook-enabled=false"})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := opts.NewManager(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := addControllers(mgr, opts, f); err != nil {
		t.Fatalf("setting the machineset controller up without the Machine API CRDs: %v", err)
	}
	testenv.Run(t, mgr)
	poll.Eventually(t, 30*time.Second, "not ready while the CRDs are missing", crdwaittest.ReadyzCondition(addr, false, "crd-machineset"))

	e.Install(t, manifests.MachineCRDs)
	poll.Eventually(t, 30*time.Second, "ready once the CRDs are served", crdwaittest.ReadyzCondition(addr, true, ""))
	labels := map[string]string{"machine.openshift.io/cluster-api-machineset": "ms1"}
	ms := &machinev1beta1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ms1"},
		Spec: machinev1beta1.MachineSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: metav1.LabelSelector{MatchLabels: labels},
			Template: machinev1beta1.MachineTemplateSpec{ObjectMeta: machinev1beta1.ObjectMeta{Labels: labels}},
		},
	}
	if err := e.Client.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 30*time.Second, "MachineSet ms1 creates its Machine", poll.Check(func() error {
		list := &machinev1beta1.MachineList{}
		if err := e.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d Machines, want 1", len(list.Items))
		}
		return nil
	}))
}
