package operator

import (
	"context"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/render"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// TestLifecycleHooksAdmissionPolicyEnforced: the policy the operator renders,
// installed in a real API server, makes lifecycle hooks immutable (except
// removal) once a Machine is being deleted.
func TestLifecycleHooksAdmissionPolicyEnforced(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	policy, binding := render.LifecycleHooksAdmissionPolicy()
	for _, o := range []client.Object{policy, binding} {
		if err := env.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("installing %s: %v", o.GetObjectKind().GroupVersionKind().Kind, err)
		}
	}
	t.Cleanup(func() {
		for _, o := range []client.Object{binding, policy} {
			if err := env.Client.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("cleanup: %v", err)
			}
		}
	})

	const keep = "test.example.com/keep"
	m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hooked", Finalizers: []string{keep}}}
	m.Spec.LifecycleHooks.PreDrain = []machinev1beta1.LifecycleHook{{Name: "drain-hook", Owner: "owner-a"}}
	if err := env.Client.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	update := func(mutate func(*machinev1beta1.Machine), opts ...client.PatchOption) error {
		cur := &machinev1beta1.Machine{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(m), cur); err != nil {
			return err
		}
		base := cur.DeepCopy()
		mutate(cur)
		return env.Client.Patch(ctx, cur, client.MergeFrom(base), opts...)
	}
	t.Cleanup(func() {
		if err := update(func(m *machinev1beta1.Machine) { m.Finalizers = nil }); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: %v", err)
		}
	})
	addHook := func(m *machinev1beta1.Machine) {
		m.Spec.LifecycleHooks.PreDrain = append(m.Spec.LifecycleHooks.PreDrain, machinev1beta1.LifecycleHook{Name: "new-hook", Owner: "owner-b"})
	}

	// Not being deleted: hooks may be added (dry run, nothing changes).
	if err := update(addHook, client.DryRunAll); err != nil {
		t.Fatalf("adding a hook to a Machine that is not being deleted: %v", err)
	}
	if err := env.Client.Delete(ctx, m); err != nil {
		t.Fatal(err)
	}
	// The API server loads a new policy asynchronously: wait until it
	// rejects, then check the outcome of each attempt.
	poll.Eventually(t, 15*time.Second, "the policy to reject adding a hook", func(context.Context) (bool, error) {
		err := update(addHook, client.DryRunAll)
		return apierrors.IsForbidden(err) || apierrors.IsInvalid(err), nil
	})

	err := update(addHook)
	if err == nil || !strings.Contains(err.Error(), render.LifecycleHooksMessage) || !strings.Contains(err.Error(), "new-hook") {
		t.Errorf("adding a preDrain hook: got %v", err)
	}
	err = update(func(m *machinev1beta1.Machine) { m.Spec.LifecycleHooks.PreDrain[0].Owner = "someone-else" })
	if err == nil || !strings.Contains(err.Error(), render.LifecycleHooksMessage) || !strings.Contains(err.Error(), "drain-hook") {
		t.Errorf("changing a hook's owner: got %v", err)
	}
	err = update(func(m *machinev1beta1.Machine) {
		m.Spec.LifecycleHooks.PreTerminate = []machinev1beta1.LifecycleHook{{Name: "term-hook", Owner: "owner-c"}}
	})
	if err == nil || !strings.Contains(err.Error(), "preTerminate") {
		t.Errorf("adding a preTerminate hook: got %v", err)
	}
	// The policy type-checks cleanly against the Machine schema.
	got := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(policy), got); err != nil {
		t.Fatal(err)
	}
	if tc := got.Status.TypeChecking; tc != nil && len(tc.ExpressionWarnings) > 0 {
		t.Errorf("type-checking warnings: %+v", tc.ExpressionWarnings)
	}
	// Other changes and removal are allowed.
	if err := update(func(m *machinev1beta1.Machine) { m.Labels = map[string]string{"touched": "yes"} }); err != nil {
		t.Errorf("a label change must be allowed: %v", err)
	}
	if err := update(func(m *machinev1beta1.Machine) { m.Spec.LifecycleHooks.PreDrain = nil }); err != nil {
		t.Errorf("removing the hook must be allowed: %v", err)
	}
}
