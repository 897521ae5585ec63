package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/machine-api-operator/machine-api-operator/pkg/operand/crdwait/crdwaittest"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// TestStartsWithoutMachineCRD: on a bare API server the binary runs, not
// ready (check crd-nodelink), instead of exiting; once the Machine API CRDs
// are installed it becomes ready and links a Machine to its Node without a
// restart. Breaks if: the reconciler were set up outside its crdwait gate.
func TestStartsWithoutMachineCRD(t *testing.T) {
	const ns = "nodelink-bare"
	e := crdwaittest.StartBinaryWithoutCRDs(t, ns, "crd-nodelink", func(cfg *rest.Config, addr string) (manager.Manager, error) {
		opts, err := parse(crdwaittest.TestArgs(ns, addr))
		return crdwaittest.NewManager(cfg, opts, err, func(mgr manager.Manager) error { return addControllers(mgr, opts) })
	})
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{ProviderID: "kubemark://n1"}}
	if err := e.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "m1"}, Spec: machinev1beta1.MachineSpec{ProviderID: ptr.To("kubemark://n1")}}
	if err := e.Client.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 30*time.Second, "Machine m1 linked to Node n1", poll.Check(func() error {
		got := &machinev1beta1.Machine{}
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(m), got); err != nil {
			return err
		}
		if got.Status.NodeRef == nil || got.Status.NodeRef.Name != "n1" {
			return fmt.Errorf("status.nodeRef = %+v", got.Status.NodeRef)
		}
		return nil
	}))
}
