package apply_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/apply"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/render"
)

// renderPlatform renders the operator's objects for namespace ns on the
// kubemark platform, or, with noOp, on platform None (only the CRDs).
func renderPlatform(t *testing.T, ns string, noOp bool) []client.Object {
	t.Helper()
	infra := &configv1.Infrastructure{
		ObjectMeta: metav1.ObjectMeta{Name: config.ClusterConfigName},
		Spec: configv1.InfrastructureSpec{PlatformSpec: configv1.PlatformSpec{
			Type: configv1.ExternalPlatformType, External: &configv1.ExternalPlatformSpec{PlatformName: config.KubemarkPlatformName}}},
		Status: configv1.InfrastructureStatus{PlatformStatus: &configv1.PlatformStatus{
			Type: configv1.ExternalPlatformType, External: &configv1.ExternalPlatformStatus{}}},
	}
	if noOp {
		infra.Spec.PlatformSpec = configv1.PlatformSpec{Type: configv1.NonePlatformType}
		infra.Status.PlatformStatus = &configv1.PlatformStatus{Type: configv1.NonePlatformType}
	}
	cfg, err := config.Build(config.Inputs{
		Namespace:      ns,
		Images:         config.Images{MachineAPIOperator: "example.com/mao:1", ClusterAPIControllerKubemark: "example.com/mao:1"},
		Infrastructure: infra,
		Webhook:        config.WebhookTLS{CABundle: []byte("test CA")},
	})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := render.Render(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// prunableClusterScoped are the cluster-scoped objects of objs that Prune
// may delete (not CRDs).
func prunableClusterScoped(t *testing.T, objs []client.Object) []client.Object {
	t.Helper()
	var out []client.Object
	for _, o := range objs {
		gvk := o.GetObjectKind().GroupVersionKind()
		if o.GetNamespace() == "" && !apply.IsNeverPruned(gvk.GroupKind()) {
			out = append(out, o)
		}
	}
	if len(out) == 0 {
		t.Fatal("the render has no prunable cluster-scoped object: the test would be vacuous")
	}
	return out
}

// TestTwoInstallationsPruneOnlyTheirOwn: operators installed in two
// namespaces render the same cluster-scoped names. The second does not take
// the first one's cluster-scoped objects over (it reports them), and when
// its platform changes it prunes only what it applied itself; the first
// one's platform change still prunes its own.
func TestTwoInstallationsPruneOnlyTheirOwn(t *testing.T) {
	ctx := testContext(t)
	nsA := createNamespace(t, ctx, "install-a")
	nsB := createNamespace(t, ctx, "install-b")
	first := apply.New(apply.Options{Client: env.Client, Owner: nsA})
	second := apply.New(apply.Options{Client: env.Client, Owner: nsB})

	objsA := renderPlatform(t, nsA, false)
	shared := prunableClusterScoped(t, objsA)
	t.Cleanup(func() {
		for _, o := range shared {
			_ = env.Client.Delete(context.Background(), o)
		}
	})
	mustApply(t, ctx, first, objsA)

	// The second installation: its namespaced objects are applied; the
	// cluster-scoped ones, which the first applied, are refused and named.
	objsB := renderPlatform(t, nsB, false)
	res, err := second.Apply(ctx, objsB)
	if err == nil || !strings.Contains(err.Error(), "belongs to the machine-api-operator of namespace "+nsA) {
		t.Fatalf("second installation's apply: err = %v; want a refusal naming namespace %s", err, nsA)
	}
	var failed []string
	for _, r := range res.Failed {
		failed = append(failed, r.Name)
	}
	if len(res.Failed) != len(shared) {
		t.Errorf("refused %v; want the %d cluster-scoped objects of the first installation", failed, len(shared))
	}
	for _, r := range res.Failed {
		if r.Namespace != "" {
			t.Errorf("refused the namespaced %s", r)
		}
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: config.WebhookConfigurationName}, vwc); err != nil {
		t.Fatal(err)
	}
	if len(vwc.Webhooks) == 0 || vwc.Webhooks[0].ClientConfig.Service.Namespace != nsA || vwc.Labels[apply.OwnerLabel] != nsA {
		t.Errorf("the first installation's webhook configuration was taken over: labels %v", vwc.Labels)
	}

	// The second installation's platform becomes None: only the CRDs
	// remain; it prunes its own operand and nothing of the first's.
	noneB := renderPlatform(t, nsB, true)
	mustApply(t, ctx, second, noneB)
	deleted, err := second.Prune(ctx, operator.PrunableKinds, nsB, noneB)
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	if len(deleted) == 0 {
		t.Error("the second installation pruned nothing of its own operand")
	}
	for _, r := range deleted {
		if r.Namespace != nsB {
			t.Errorf("the second installation pruned %s, which it did not apply", r)
		}
	}
	for _, o := range objsA {
		live := o.DeepCopyObject().(client.Object)
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(o), live); err != nil {
			t.Errorf("the first installation's %T %s: %v", o, o.GetName(), err)
		} else if live.GetDeletionTimestamp() != nil {
			t.Errorf("the first installation's %T %s is being deleted", o, o.GetName())
		}
	}

	// The first installation's own platform change prunes its objects,
	// cluster-scoped ones included.
	noneA := renderPlatform(t, nsA, true)
	mustApply(t, ctx, first, noneA)
	deleted, err = first.Prune(ctx, operator.PrunableKinds, nsA, noneA)
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	for _, o := range shared {
		if !slices.ContainsFunc(deleted, func(r apply.ObjectRef) bool {
			return r.Name == o.GetName() && r.Namespace == "" && r.Kind == o.GetObjectKind().GroupVersionKind().Kind
		}) {
			t.Errorf("the first installation did not prune its %T %s (deleted %v)", o, o.GetName(), refs(deleted))
		}
		live := o.DeepCopyObject().(client.Object)
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(o), live); !apierrors.IsNotFound(err) && live.GetDeletionTimestamp() == nil {
			t.Errorf("%T %s still exists after the first installation pruned it (err %v)", o, o.GetName(), err)
		}
	}
}

// TestPruneNeedsAnOwner: an Applier that cannot tell its objects from
// another installation's prunes nothing.
func TestPruneNeedsAnOwner(t *testing.T) {
	a := apply.New(apply.Options{Client: env.Client})
	deleted, err := a.Prune(testContext(t), operator.PrunableKinds, "default", nil)
	if err == nil || len(deleted) != 0 {
		t.Errorf("Prune without an Owner: deleted %v, err %v; want an error and nothing deleted", deleted, err)
	}
}

// TestTakeOverFromRemovedInstallation: an object whose installation's
// namespace is gone, or being deleted, is taken over; one of a live
// installation is not.
func TestTakeOverFromRemovedInstallation(t *testing.T) {
	ctx := testContext(t)
	live := createNamespace(t, ctx, "live-installation")
	terminating := createNamespace(t, ctx, "removed-installation")
	// envtest runs no namespace controller: a deleted namespace stays
	// Terminating.
	if err := env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: terminating}}); err != nil {
		t.Fatal(err)
	}
	me := apply.New(apply.Options{Client: env.Client, Owner: testOwner})
	for _, tc := range []struct {
		owner    string
		takeOver bool
	}{
		{owner: "no-such-namespace-" + live, takeOver: true},
		{owner: terminating, takeOver: true},
		{owner: live, takeOver: false},
	} {
		cr := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "takeover-" + tc.owner},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}},
		}
		cleanupClusterScoped(t, []client.Object{cr})
		mustApply(t, ctx, apply.New(apply.Options{Client: env.Client, Owner: tc.owner}), []client.Object{cr.DeepCopy()})
		_, err := me.Apply(ctx, []client.Object{cr.DeepCopy()})
		got := &rbacv1.ClusterRole{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cr), got); err != nil {
			t.Fatal(err)
		}
		if tc.takeOver && (err != nil || got.Labels[apply.OwnerLabel] != testOwner) {
			t.Errorf("owner %s: err %v, owner label %q; want taken over", tc.owner, err, got.Labels[apply.OwnerLabel])
		}
		if !tc.takeOver && (err == nil || got.Labels[apply.OwnerLabel] != tc.owner) {
			t.Errorf("owner %s (a live installation): err %v, owner label %q; want refused and left alone", tc.owner, err, got.Labels[apply.OwnerLabel])
		}
	}
}
