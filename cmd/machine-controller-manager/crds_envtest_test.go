package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/manifests"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand/crdwait/crdwaittest"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// TestStartsWithoutMachineCRD: on a bare API server the binary runs, not
// ready (check crd-machine), instead of exiting; once the Machine API CRDs
// are installed it becomes ready and reconciles a Machine (one of another
// provider: ProviderSupported=False) without a restart. Breaks if: the
// reconciler were set up outside its crdwait gate.
func TestStartsWithoutMachineCRD(t *testing.T) {
	e := crdwaittest.Start(t)
	ctx := context.Background()
	const ns = "machine-bare"
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	addr := crdwaittest.FreeAddr(t)
	opts, drainTimeout, err := parse([]string{"--namespace=" + ns, "--leader-elect=false", "--metrics-bind-address=0", "--health-probe-bind-address=" + addr})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := opts.NewManager(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := addControllers(mgr, opts, drainTimeout); err != nil {
		t.Fatalf("setting the machine controller up without the Machine CRD: %v", err)
	}
	testenv.Run(t, mgr)
	poll.Eventually(t, 30*time.Second, "not ready while the Machine CRD is missing", crdwaittest.ReadyzCondition(addr, false, "crd-machine"))

	e.Install(t, manifests.MachineCRDs)
	poll.Eventually(t, 30*time.Second, "ready once the CRDs are served", crdwaittest.ReadyzCondition(addr, true, ""))
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
