package safety

import (
	"fmt"
	"slices"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider/kubemark"
)

const kubemarkSpec = `{"apiVersion":"kubemark.machine-api-operator.io/v1alpha1","kind":"KubemarkMachineProviderSpec"}`

// orphanPeriod is the collectors' period here: the grace every Node must outlive.
const orphanPeriod = time.Second

// kubemarkNodes registers Nodes with the kubemark provider for the tests' Machines.
type kubemarkNodes struct {
	t   *testing.T
	act *kubemark.Actuator
}

func newKubemarkNodes(t *testing.T) *kubemarkNodes {
	return &kubemarkNodes{t: t, act: kubemark.NewActuator(kubemark.Options{Client: env.Client})}
}

// machine creates a kubemark Machine and registers its (marked) Node, persisting the providerID.
func (k *kubemarkNodes) machine(ns, name string) *machinev1beta1.Machine {
	k.t.Helper()
	ctx := k.t.Context()
	m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	m.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: []byte(kubemarkSpec)}
	if err := env.Client.Create(ctx, m); err != nil {
		k.t.Fatal(err)
	}
	k.cleanupNode(name)
	if err := k.act.Create(ctx, m); err != nil {
		k.t.Fatalf("registering the node of %s: %v", name, err)
	}
	if err := env.Client.Update(ctx, m); err != nil { // persists spec.providerID
		k.t.Fatal(err)
	}
	return m
}

// orphan registers the Node of a Machine that is then deleted: a marked Node whose Machine is gone.
func (k *kubemarkNodes) orphan(ns, name string) {
	k.t.Helper()
	if err := env.Client.Delete(k.t.Context(), k.machine(ns, name)); err != nil {
		k.t.Fatal(err)
	}
}

func (k *kubemarkNodes) cleanupNode(name string) {
	k.t.Cleanup(func() { _ = env.Client.Delete(k.t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}) })
}

// gone reports whether no Node of the name is left.
func nodeGone(t *testing.T, name string) bool {
	t.Helper()
	err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &corev1.Node{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return apierrors.IsNotFound(err)
}

// passes runs collection passes until cond holds (at least one period apart from the Nodes' creation, the
// grace), then more passes.
func passes(t *testing.T, c *OrphanCollector, what string, cond func() error, more int) {
	t.Helper()
	eventually(t, what, func() error {
		if err := c.Pass(t.Context()); err != nil {
			return err
		}
		return cond()
	})
	for range more {
		if err := c.Pass(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOrphanKubemarkNodesCollected: a marked kubemark Node whose Machine is gone, and one whose Machine was
// recreated under the same name (another UID), are deleted with an event and a metric each; over several more
// passes the Nodes of a Running and of a Provisioning Machine, a second installation's Node (marked with
// another namespace's Machine, which exists), an unmarked Node with the cluster's providerID scheme (an
// installer's or another tool's) and a Node without providerID stay. Breaks if: the collector matched
// Machines by name only (the recreated one stays), judged marks against its own namespace's Machines only
// (the second installation's Node goes), or listed unmarked Nodes (the installer's goes).
func TestOrphanKubemarkNodesCollected(t *testing.T) {
	ctx := t.Context()
	ns, second := newNamespace(t), newNamespace(t)
	k := newKubemarkNodes(t)

	k.machine(ns, ns+"-running")
	provisioning := k.machine(ns, ns+"-provisioning")
	provisioning.Status.Phase = ptr.To(machinev1beta1.PhaseProvisioning)
	if err := env.Client.Status().Update(ctx, provisioning); err != nil {
		t.Fatal(err)
	}
	k.machine(second, second+"-worker")
	k.orphan(ns, ns+"-orphan")
	recreated := ns + "-recreated"
	k.orphan(ns, recreated)
	again := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: recreated}} // a new UID, no Node yet
	again.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: []byte(kubemarkSpec)}
	if err := env.Client.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	for name, providerID := range map[string]string{ns + "-installer": kubemark.ProviderID(ns, ns+"-installer"), ns + "-no-provider-id": ""} {
		if err := env.Client.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}); err != nil {
			t.Fatal(err)
		}
		k.cleanupNode(name)
	}

	rec := &recorder{}
	c := NewOrphanCollector(OrphanCollectorOptions{Client: env.Client, APIReader: env.Client, Namespace: ns, Period: orphanPeriod,
		Listers: []provider.InstanceLister{k.act}, Recorder: rec})
	deletedBefore := counterValue(t, OrphanInstancesDeletedTotal)
	passes(t, c, "the orphan nodes deleted", func() error {
		for _, name := range []string{ns + "-orphan", recreated} {
			if !nodeGone(t, name) {
				return fmt.Errorf("node %s still there", name)
			}
		}
		return nil
	}, 3)
	for _, name := range []string{ns + "-running", provisioning.Name, second + "-worker", ns + "-installer", ns + "-no-provider-id"} {
		if nodeGone(t, name) {
			t.Errorf("node %s deleted, want it kept", name)
		}
	}
	if d := counterValue(t, OrphanInstancesDeletedTotal) - deletedBefore; d != 2 {
		t.Errorf("machine_api_orphan_instances_deleted_total grew by %v, want 2", d)
	}
	for _, name := range []string{ns + "-orphan", recreated} {
		if got := rec.find(EventOrphanInstanceDeleted, name); len(got) != 1 {
			t.Errorf("%s events on %s: %v, want 1 (all: %v)", EventOrphanInstanceDeleted, name, got, rec.all())
		}
	}
}

// TestOrphanKubemarkCapAndDryRun: a dry run reports each of three orphan Nodes (event, metric) and deletes
// none over several passes; then with --machine-safety-orphan-vms-max-deletions=2 one pass deletes two, the
// next the third. Breaks if: the dry run deleted, the cap were ignored, or not counted across the pass.
func TestOrphanKubemarkCapAndDryRun(t *testing.T) {
	ns := newNamespace(t)
	k := newKubemarkNodes(t)
	names := []string{ns + "-orphan-0", ns + "-orphan-1", ns + "-orphan-2"}
	for _, n := range names {
		k.orphan(ns, n)
	}
	left := func() []string {
		var out []string
		for _, n := range names {
			if !nodeGone(t, n) {
				out = append(out, n)
			}
		}
		return out
	}
	mine := func(rec *recorder, reason string) int {
		n := 0
		for _, name := range names {
			n += len(rec.find(reason, name))
		}
		return n
	}

	dryRec := &recorder{}
	dry := NewOrphanCollector(OrphanCollectorOptions{Client: env.Client, APIReader: env.Client, Namespace: ns, Period: orphanPeriod,
		Listers: []provider.InstanceLister{k.act}, Recorder: dryRec, DryRun: true})
	dryBefore := counterValue(t, OrphanInstancesDryRunTotal)
	passes(t, dry, "three dry-run reports", func() error {
		if n := mine(dryRec, EventOrphanInstanceDryRun); n < 3 {
			return fmt.Errorf("%d dry-run events on the orphans", n)
		}
		return nil
	}, 2)
	if got := left(); len(got) != 3 {
		t.Fatalf("nodes left after dry-run passes: %v, want all three", got)
	}
	if d := counterValue(t, OrphanInstancesDryRunTotal) - dryBefore; d < 9 {
		t.Errorf("machine_api_orphan_instances_dry_run_total grew by %v over 3+ passes, want at least 9", d)
	}

	rec := &recorder{}
	c := NewOrphanCollector(OrphanCollectorOptions{Client: env.Client, APIReader: env.Client, Namespace: ns, Period: orphanPeriod,
		Listers: []provider.InstanceLister{k.act}, Recorder: rec, MaxDeletions: 2})
	var after []int
	for range 2 {
		if err := c.Pass(t.Context()); err != nil {
			t.Fatal(err)
		}
		after = append(after, len(left()))
	}
	if !slices.Equal(after, []int{1, 0}) {
		t.Errorf("orphans left after each pass: %v, want [1 0] (two a pass at most)", after)
	}
	if n := mine(rec, EventOrphanInstanceDeleted); n != 3 {
		t.Errorf("%d deletion events, want one per deleted Node (3)", n)
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	m := &dto.Metric{}
	if err := c.Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
