package machine

import (
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

func TestLifecycleHooksAdmissionPolicyObjects(t *testing.T) {
	policy, binding := LifecycleHooksAdmissionPolicy()
	if policy.Kind != "ValidatingAdmissionPolicy" || policy.APIVersion != "admissionregistration.k8s.io/v1" ||
		binding.Kind != "ValidatingAdmissionPolicyBinding" || binding.APIVersion != "admissionregistration.k8s.io/v1" {
		t.Errorf("TypeMeta not set: %v / %v", policy.TypeMeta, binding.TypeMeta)
	}
	if policy.Name != LifecycleHooksPolicyName || binding.Name != LifecycleHooksPolicyName || binding.Spec.PolicyName != policy.Name {
		t.Errorf("names: policy %q binding %q → %q", policy.Name, binding.Name, binding.Spec.PolicyName)
	}
	out, err := LifecycleHooksAdmissionPolicyYAML()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "status:") || strings.Contains(string(out), "creationTimestamp") {
		t.Errorf("YAML has empty status or creationTimestamp:\n%s", out)
	}
	docs := strings.Split(strings.TrimPrefix(string(out), "---\n"), "---\n")
	if len(docs) != 2 {
		t.Fatalf("want 2 YAML documents, got %d:\n%s", len(docs), out)
	}
	var back admissionregistrationv1.ValidatingAdmissionPolicy
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Spec.Validations) != 2 || back.Spec.Validations[0].Expression != policy.Spec.Validations[0].Expression {
		t.Errorf("YAML round trip lost validations: %+v", back.Spec.Validations)
	}
}

// The policy, installed in the envtest API server, makes lifecycle hooks
// immutable (except removal) once a Machine is being deleted.
func TestLifecycleHooksAdmissionPolicyEnforced(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	policy, binding := LifecycleHooksAdmissionPolicy()
	for _, o := range []client.Object{policy, binding} {
		if err := env.Client.Create(f.ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("installing %s: %v", o.GetObjectKind().GroupVersionKind().Kind, err)
		}
	}

	const keep = "test.example.com/keep"
	m := f.machine("hooked", func(m *machinev1beta1.Machine) {
		m.Finalizers = []string{keep}
		m.Spec.LifecycleHooks.PreDrain = []machinev1beta1.LifecycleHook{{Name: "drain-hook", Owner: "owner-a"}}
	})
	t.Cleanup(func() {
		f.patchMachine(m, func(m *machinev1beta1.Machine) { m.Finalizers = nil })
	})
	addHook := func(m *machinev1beta1.Machine) {
		m.Spec.LifecycleHooks.PreDrain = append(m.Spec.LifecycleHooks.PreDrain, machinev1beta1.LifecycleHook{Name: "new-hook", Owner: "owner-b"})
	}
	update := func(mutate func(*machinev1beta1.Machine), opts ...client.PatchOption) error {
		cur := f.mustGet(m)
		base := cur.DeepCopy()
		mutate(cur)
		return env.Client.Patch(f.ctx, cur, client.MergeFrom(base), opts...)
	}

	// Not being deleted: hooks may be added (dry run, nothing changes).
	eventually(t, 10*time.Second, "the policy to be loaded", func() bool {
		// Wait until the API server enforces it: probe with a dry-run on a
		// deleting Machine below; first make sure a normal update works.
		return update(addHook, client.DryRunAll) == nil
	})

	f.deleteMachine(m)
	eventually(t, 15*time.Second, "the policy to reject adding a hook", func() bool {
		return apierrors.IsForbidden(update(addHook, client.DryRunAll)) || apierrors.IsInvalid(update(addHook, client.DryRunAll))
	})

	err := update(addHook)
	t.Logf("adding a hook: %v", err)
	if err == nil || !strings.Contains(err.Error(), LifecycleHooksMessage) || !strings.Contains(err.Error(), "new-hook") {
		t.Errorf("adding a preDrain hook: got %v", err)
	}
	err = update(func(m *machinev1beta1.Machine) { m.Spec.LifecycleHooks.PreDrain[0].Owner = "someone-else" })
	if err == nil || !strings.Contains(err.Error(), LifecycleHooksMessage) || !strings.Contains(err.Error(), "drain-hook") {
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
	if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(policy), got); err != nil {
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
	if got := f.mustGet(m); len(got.Spec.LifecycleHooks.PreDrain) != 0 {
		t.Errorf("hook not removed: %+v", got.Spec.LifecycleHooks)
	}
}
