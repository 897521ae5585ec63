package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/machine-api-operator/machine-api-operator/pkg/operand/crdwait/crdwaittest"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// TestStartsWithoutMachineCRD: on a bare API server the binary runs, not
// ready (check crd-machine), instead of exiting; once the Machine API CRDs
// are installed it becomes ready and reconciles a Machine (one of another
// provider: ProviderSupported=False) without a restart. Breaks if: the
// reconciler were set up outside its crdwait gate.
func TestStartsWithoutMachineCRD(t *testing.T) {
	const ns = "machine-bare"
	e := crdwaittest.StartBinaryWithoutCRDs(t, ns, "crd-machine", func(cfg *rest.Config, addr string) (manager.Manager, error) {
		opts, drainTimeout, err := parse(crdwaittest.TestArgs(ns, addr))
		return crdwaittest.NewManager(cfg, opts, err, func(mgr manager.Manager) error { return addControllers(mgr, opts, drainTimeout) })
	})
	ctx := context.Background()
	m := &machinev1beta1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aws"},
		Spec: machinev1beta1.MachineSpec{ProviderSpec: machinev1beta1.ProviderSpec{Value: &runtime.RawExtension{
			Raw: []byte(`{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig"}`),
		}}},
	}
	if err := e.Client.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 30*time.Second, "the machine controller reports on Machine aws", poll.Check(func() error {
		got := &machinev1beta1.Machine{}
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(m), got); err != nil {
			return err
		}
		if len(got.Status.Conditions) == 0 {
			return fmt.Errorf("no conditions yet")
		}
		return nil
	}))
}
