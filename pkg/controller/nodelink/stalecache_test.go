package nodelink

import (
	"context"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/readyourwrites"
	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
)

// builderIndexer registers RegisterIndexes' indexes on a fake client builder.
type builderIndexer struct{ b *fake.ClientBuilder }

func (i builderIndexer) IndexField(_ context.Context, obj client.Object, field string, fn client.IndexerFunc) error {
	i.b.WithIndex(obj, field, fn)
	return nil
}

// TestStaleNodeCacheIsNotPatchedAgain: a reconcile that reads the Node
// version its own last metadata patch was based on (the informer has not
// delivered the patch yet), or a later version of another writer that still
// lacks it, waits for the cache instead of sending the patch again.
func TestStaleNodeCacheIsNotPatchedAgain(t *testing.T) {
	ctx := t.Context()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "node-uid"},
		Spec:       corev1.NodeSpec{ProviderID: "kubemark://ns/m"},
	}
	providerID := "kubemark://ns/m"
	machine := &machinev1beta1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m", Labels: map[string]string{}},
		Spec: machinev1beta1.MachineSpec{
			ProviderID: &providerID,
			ObjectMeta: machinev1beta1.ObjectMeta{Labels: map[string]string{"role": "worker"}},
		},
		Status: machinev1beta1.MachineStatus{NodeRef: &corev1.ObjectReference{Kind: "Node", Name: "n", UID: "node-uid"}},
	}

	b := fake.NewClientBuilder().WithScheme(scheme.New()).
		WithObjects(node, machine).WithStatusSubresource(&machinev1beta1.Machine{})
	if err := RegisterIndexes(ctx, builderIndexer{b}); err != nil {
		t.Fatal(err)
	}
	// The cache as the informer would show it: the Node as first read, until
	// the test lets it catch up.
	var snapshot *corev1.Node
	patches := 0
	c := interceptor.NewClient(b.Build(), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if n, ok := obj.(*corev1.Node); ok && snapshot != nil {
				snapshot.DeepCopyInto(n)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*corev1.Node); ok {
				patches++
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	r := NewReconciler(Options{Client: c, Namespace: "ns"})
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "n"}}

	first := &corev1.Node{}
	if err := c.Get(ctx, req.NamespacedName, first); err != nil {
		t.Fatal(err)
	}
	snapshot = first
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if patches != 1 {
		t.Fatalf("first reconcile sent %d Node patches, want 1 (the machine's label)", patches)
	}

	res, err := r.Reconcile(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if patches != 1 {
		t.Errorf("reconcile on the stale Node sent %d Node patches in all, want still 1", patches)
	}
	if res.RequeueAfter != readyourwrites.CatchUpDelay {
		t.Errorf("reconcile on the stale Node: RequeueAfter = %v, want %v (look again once the cache caught up)", res.RequeueAfter, readyourwrites.CatchUpDelay)
	}

	// Another writer's version (the TTL annotation) shows up first, still
	// without our patch: the same patch is pending, nothing is sent. Breaks
	// if: syncNode did not check nodePatchSent.
	other := first.DeepCopy()
	other.ResourceVersion = first.ResourceVersion + "0"
	other.Annotations = map[string]string{"node.alpha.kubernetes.io/ttl": "0"}
	snapshot = other
	res, err = r.Reconcile(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if patches != 1 {
		t.Errorf("reconcile on another writer's version sent %d Node patches in all, want still 1", patches)
	}
	if res.RequeueAfter != sentPendingRetry {
		t.Errorf("reconcile on another writer's version: RequeueAfter = %v, want %v (our write's event wakes it first)", res.RequeueAfter, sentPendingRetry)
	}

	// The cache catches up: the Node carries the label, nothing to write.
	snapshot = nil
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if patches != 1 {
		t.Errorf("reconcile after the cache caught up sent %d Node patches in all, want still 1", patches)
	}
	got := &corev1.Node{}
	if err := c.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	if got.Labels["role"] != "worker" {
		t.Errorf("node labels = %v, want role=worker from the machine", got.Labels)
	}
}
