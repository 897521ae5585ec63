package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/machine-api-operator/machine-api-operator/manifests"
	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand/crdwait/crdwaittest"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// TestMachineDeploymentCRDLater: the binary is ready without the
// MachineDeployment CRD (its gate is not required) and starts the
// MachineDeployment controller once the CRD is installed, without a
// restart: a MachineDeployment then gets its MachineSet and Machines.
// Breaks if: the controller were set up outside its own gate, or its gate
// were Required, or its Machine index clashed with the machineset
// controller's in the binary's namespace-restricted cache.
func TestMachineDeploymentCRDLater(t *testing.T) {
	const ns = "machinedeployment-later"
	e := crdwaittest.StartBinaryWithoutCRDs(t, ns, "crd-machineset", func(cfg *rest.Config, addr string) (manager.Manager, error) {
		opts, f, err := parse([]string{"--namespace=" + ns, "--leader-elect=false", "--metrics-bind-address=0",
			"--health-probe-bind-address=" + addr, "--webhook-enabled=false"})
		if err != nil {
			return nil, err
		}
		mgr, err := opts.NewManager(cfg)
		if err != nil {
			return nil, err
		}
		return mgr, addControllers(mgr, opts, f)
	})
	e.Install(t, manifests.MachineDeploymentCRDs)
	ctx := context.Background()
	labels := map[string]string{"machine.openshift.io/cluster-api-machineset": "md1"}
	md := &mdv1beta1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "md1"},
		Spec: mdv1beta1.MachineDeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: metav1.LabelSelector{MatchLabels: labels},
			Template: machinev1beta1.MachineTemplateSpec{ObjectMeta: machinev1beta1.ObjectMeta{Labels: labels}},
		},
	}
	// The gate polls for the kind; until the controller runs, nothing
	// happens to the MachineDeployment.
	poll.Eventually(t, 30*time.Second, "MachineDeployment md1 created", poll.Check(func() error { return e.Client.Create(ctx, md) }))
	poll.Eventually(t, 60*time.Second, "md1's MachineSet creates 2 Machines", poll.Check(func() error {
		sets := &machinev1beta1.MachineSetList{}
		if err := e.Client.List(ctx, sets, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(sets.Items) != 1 || metav1.GetControllerOf(&sets.Items[0]) == nil {
			return fmt.Errorf("%d MachineSets", len(sets.Items))
		}
		machines := &machinev1beta1.MachineList{}
		if err := e.Client.List(ctx, machines, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(machines.Items) != 2 {
			return fmt.Errorf("%d Machines, want 2", len(machines.Items))
		}
		return nil
	}))
}
