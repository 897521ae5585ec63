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

	"github.com/machine-api-operator/machine-api-operator/pkg/operand/crdwait/crdwaittest"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// TestStartsWithoutMachineCRDs: on a bare API server the binary runs, not
// ready (check crd-machineset), instead of exiting; once the Machine API
// CRDs are installed it becomes ready (without the MachineDeployment CRD,
// whose gate is not required) and scales a MachineSet without a restart;
// once the MachineDeployment CRD is installed too, a MachineDeployment gets
// its MachineSet and Machines. Breaks if: a reconciler were set up outside
// its crdwait gate, the MachineDeployment gate were Required, or that
// controller's Machine index clashed with the machineset controller's in
// the binary's namespace-restricted cache. (One test: controller names are
// unique per process.)
func TestStartsWithoutMachineCRDs(t *testing.T) {
	const ns = "machineset-bare"
	e := crdwaittest.StartBinaryWithoutCRDs(t, ns, "crd-machineset", func(cfg *rest.Config, addr string) (manager.Manager, error) {
		opts, f, err := parse(crdwaittest.TestArgs(ns, addr, "--webhook-enabled=false"))
		return crdwaittest.NewManager(cfg, opts, err, func(mgr manager.Manager) error { return addControllers(mgr, opts, f) })
	})
	ctx := context.Background()
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
	machineDeploymentStarts(t, e, ns)
}
