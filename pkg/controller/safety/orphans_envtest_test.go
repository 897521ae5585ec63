package safety

import (
	"errors"
	"fmt"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machine"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider/kubemark"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
)

const kubemarkSpec = `{"apiVersion":"kubemark.machine-api-operator.io/v1alpha1","kind":"KubemarkMachineProviderSpec"}`

// TestOrphanKubemarkNodesCollected: with a 1s period, a kubemark Node with
// the cluster's providerID scheme (kubemark://<namespace>/<name>) and no
// Machine is deleted, while the Nodes the kubemark provider registered for
// a Running and a Provisioning Machine, another namespace's kubemark Node
// and a Node without providerID stay. Breaks if: the collector deleted
// without confirming the orphan decision, or ListInstances ignored the
// namespace.
func TestOrphanKubemarkNodesCollected(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t)
	act := kubemark.NewActuator(kubemark.Options{Client: env.Client})
	cleanupNode := func(name string) {
		t.Cleanup(func() { _ = env.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}) })
	}

	// Two Machines whose Nodes the provider registers: one Running (its
	// providerID persisted), one still Provisioning (not yet).
	newMachine := func(name string) *machinev1beta1.Machine {
		m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		m.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: []byte(kubemarkSpec)}
		if err := env.Client.Create(ctx, m); err != nil {
			t.Fatal(err)
		}
		cleanupNode(name)
		if err := act.Create(ctx, m); err != nil {
			t.Fatalf("registering the node of %s: %v", name, err)
		}
		return m
	}
	running := newMachine(ns + "-running")
	if err := env.Client.Update(ctx, running); err != nil { // persists spec.providerID
		t.Fatal(err)
	}
	running.Status.Phase = ptr.To(machinev1beta1.PhaseRunning)
	if err := env.Client.Status().Update(ctx, running); err != nil {
		t.Fatal(err)
	}
	provisioning := newMachine(ns + "-provisioning")
	provisioning = &machinev1beta1.Machine{ObjectMeta: provisioning.ObjectMeta} // providerID not persisted
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(provisioning), provisioning); err != nil {
		t.Fatal(err)
	}
	provisioning.Status.Phase = ptr.To(machinev1beta1.PhaseProvisioning)
	if err := env.Client.Status().Update(ctx, provisioning); err != nil {
		t.Fatal(err)
	}

	bareNode := func(name, providerID string) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
		if err := env.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		cleanupNode(name)
	}
	bareNode(ns+"-other-namespace", kubemark.ProviderID(ns+"-other", ns+"-other-namespace"))
	bareNode(ns+"-no-provider-id", "")
	orphan := ns + "-orphan"
	bareNode(orphan, kubemark.ProviderID(ns, orphan)) // created last: the others are as old

	c := NewOrphanCollector(OrphanCollectorOptions{
		Client: env.Client, APIReader: env.Client, Namespace: ns, Period: time.Second,
		Listers: []machine.InstanceLister{act},
	})
	deletedBefore := counterValue(t)
	testenv.Run(t, c)
	eventually(t, "the orphan node deleted", func() error {
		err := env.Client.Get(ctx, client.ObjectKey{Name: orphan}, &corev1.Node{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return errors.Join(err, fmt.Errorf("node %s still there", orphan))
	})
	for _, name := range []string{running.Name, provisioning.Name, ns + "-other-namespace", ns + "-no-provider-id"} {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &corev1.Node{}); err != nil {
			t.Errorf("node %s: %v, want it kept", name, err)
		}
	}
	if d := counterValue(t) - deletedBefore; d != 1 {
		t.Errorf("machine_api_orphan_instances_deleted_total grew by %v, want 1", d)
	}
}

func counterValue(t *testing.T) float64 {
	t.Helper()
	m := &dto.Metric{}
	if err := OrphanInstancesDeletedTotal.Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
