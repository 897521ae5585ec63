package webhooks

import (
	"context"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/render"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// TestPoliciesHoldWithoutWebhookServer: with the operator's webhook configurations
// installed (failurePolicy Ignore) and no server behind them, the ValidatingAdmissionPolicies
// still refuse a changed providerID and selector, an empty selector and a selector not
// matching the template, each with the webhook's own message for the same request.
// Breaks if: a policy is dropped from render.AdmissionPolicies, a CEL rule or message
// drifts from pkg/webhooks (e.g. formatSelector stops sorting), or the ratchet is lost.
func TestPoliciesHoldWithoutWebhookServer(t *testing.T) {
	const ns = "policies-test"
	c := startAPIServerWithWebhooks(t, apiServerOptions{policies: true, noServer: true})
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	// webhookMessage is the webhook's first error for the same request.
	webhookMessage := func(t *testing.T, errs field.ErrorList) string {
		t.Helper()
		if len(errs) == 0 {
			t.Fatal("the webhook's check finds no error")
		}
		return errs[0].Error()
	}
	refused := func(t *testing.T, err error, policy, want string) {
		t.Helper()
		if err == nil {
			t.Fatalf("accepted, want refused by %s with %q", policy, want)
		}
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+policy+"'") || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v\nwant 422 from %s containing %q", err, policy, want)
		}
	}

	// The API server loads policies asynchronously: wait until each refuses.
	withID := machine("with-id", value(validKubemark), func(m *machinev1beta1.Machine) {
		m.Namespace, m.Spec.ProviderID = ns, new("kubemark://with-id")
	})
	if err := c.Create(ctx, withID); err != nil {
		t.Fatal(err)
	}
	changeID := func(m *machinev1beta1.Machine, id *string) error {
		m = m.DeepCopy()
		m.Spec.ProviderID = id
		return c.Update(ctx, m, client.DryRunAll)
	}
	poll.Eventually(t, 30*time.Second, "the providerID policy to refuse", func(context.Context) (bool, error) {
		return changeID(withID, new("kubemark://other")) != nil, nil
	})
	emptySel := machineSet("empty", nil, map[string]string{"a": "1"}, value(validKubemark), func(ms *machinev1beta1.MachineSet) { ms.Namespace = ns })
	poll.Eventually(t, 30*time.Second, "the selector policy to refuse", func(context.Context) (bool, error) {
		return c.Create(ctx, emptySel.DeepCopy(), client.DryRunAll) != nil, nil
	})

	t.Run("providerID cannot change or be cleared", func(t *testing.T) {
		for _, id := range []*string{new("kubemark://other"), nil, new("")} {
			changed := withID.DeepCopy()
			changed.Spec.ProviderID = id
			errs, _ := ValidateMachineUpdate(changed, withID, unknownCluster, nil)
			refused(t, changeID(withID, id), render.ProviderIDPolicyName, webhookMessage(t, errs))
		}
		// Breaks if: the rule refuses setting it the first time.
		unset := machine("no-id", value(validKubemark), func(m *machinev1beta1.Machine) { m.Namespace = ns })
		if err := c.Create(ctx, unset); err != nil {
			t.Fatal(err)
		}
		if err := changeID(unset, new("kubemark://no-id")); err != nil {
			t.Errorf("setting providerID the first time: %v", err)
		}
	})

	// A selector with several requirements of every kind: the messages' order is the webhook's.
	sel := metav1.LabelSelector{
		MatchLabels: map[string]string{"role": "worker", "app.example.com/set": "b", "zone": ""},
		MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"gold", "bronze", "silver"}},
			{Key: "legacy", Operator: metav1.LabelSelectorOpDoesNotExist},
			{Key: "arch", Operator: metav1.LabelSelectorOpExists},
			{Key: "team", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"x"}},
		},
	}
	good := map[string]string{"role": "worker", "app.example.com/set": "b", "zone": "", "tier": "gold", "arch": "amd64", "extra": "1"}
	set := func(name string, labels map[string]string) *machinev1beta1.MachineSet {
		return machineSet(name, nil, labels, value(validKubemark), func(ms *machinev1beta1.MachineSet) {
			ms.Namespace, ms.Spec.Selector = ns, *sel.DeepCopy()
		})
	}

	t.Run("an empty selector is refused", func(t *testing.T) {
		errs, _ := ValidateMachineSet(emptySel, unknownCluster, nil)
		refused(t, c.Create(ctx, emptySel.DeepCopy()), render.SelectorPolicyName, webhookMessage(t, errs))
	})

	t.Run("a selector not matching the template is refused", func(t *testing.T) {
		for name, labels := range map[string]map[string]string{
			"wrong-in":     {"role": "worker", "app.example.com/set": "b", "zone": "", "tier": "tin", "arch": "a"},
			"has-legacy":   {"role": "worker", "app.example.com/set": "b", "zone": "", "tier": "gold", "arch": "a", "legacy": "y"},
			"no-arch":      {"role": "worker", "app.example.com/set": "b", "zone": "", "tier": "gold"},
			"team-x":       {"role": "worker", "app.example.com/set": "b", "zone": "", "tier": "gold", "arch": "a", "team": "x"},
			"wrong-label":  {"role": "infra", "app.example.com/set": "b", "zone": "", "tier": "gold", "arch": "a"},
			"no-zone":      {"role": "worker", "app.example.com/set": "b", "tier": "gold", "arch": "a"},
			"empty-labels": nil,
		} {
			ms := set(name, labels)
			errs, _ := ValidateMachineSet(ms, unknownCluster, nil)
			refused(t, c.Create(ctx, ms), render.SelectorPolicyName, webhookMessage(t, errs))
		}
		md := &mdv1beta1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "md"}}
		md.Spec.Selector, md.Spec.Template.Labels = *sel.DeepCopy(), map[string]string{"role": "worker"}
		errs, _ := ValidateMachineDeployment(md, unknownCluster, nil)
		refused(t, c.Create(ctx, md), render.SelectorPolicyName, webhookMessage(t, errs))
	})

	t.Run("a MachineSet's selector cannot change", func(t *testing.T) {
		ms := set("workers", good)
		if err := c.Create(ctx, ms); err != nil {
			t.Fatalf("a matching MachineSet: %v", err)
		}
		ms.Spec.Replicas = new(int32(3))
		ms.Labels = map[string]string{"touched": "yes"}
		if err := c.Update(ctx, ms); err != nil {
			t.Fatalf("scaling and labelling: %v", err)
		}
		for _, change := range []func(*metav1.LabelSelector){
			func(s *metav1.LabelSelector) { s.MatchLabels["role"] = "infra" },
			func(s *metav1.LabelSelector) { s.MatchExpressions[0].Values = []string{"gold"} },
			func(s *metav1.LabelSelector) { s.MatchExpressions = s.MatchExpressions[1:] },
		} {
			changed := ms.DeepCopy()
			change(&changed.Spec.Selector)
			errs, _ := ValidateMachineSetUpdate(changed, ms, unknownCluster, nil)
			refused(t, c.Update(ctx, changed, client.DryRunAll), render.SelectorPolicyName, webhookMessage(t, errs))
		}
		// Breaks if: sameSelector compares absent with empty lists as different.
		same := ms.DeepCopy()
		same.Spec.Selector.MatchExpressions[1].Values = []string{}
		if err := c.Update(ctx, same, client.DryRunAll); err != nil {
			t.Errorf("an equivalent selector (empty values list): %v", err)
		}
	})

	t.Run("a MachineSet that already mismatched may be updated if its labels stay", func(t *testing.T) {
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		if err := c.Get(ctx, client.ObjectKey{Name: render.SelectorPolicyName}, binding); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, binding); err != nil {
			t.Fatal(err)
		}
		bad := set("bad-before", map[string]string{"role": "worker"})
		poll.Eventually(t, 30*time.Second, "the selector policy to be unbound", func(context.Context) (bool, error) {
			return c.Create(ctx, bad.DeepCopy(), client.DryRunAll) == nil, nil
		})
		if err := c.Create(ctx, bad); err != nil {
			t.Fatal(err)
		}
		binding.ResourceVersion, binding.UID, binding.CreationTimestamp, binding.ManagedFields = "", "", metav1.Time{}, nil
		if err := c.Create(ctx, binding); err != nil {
			t.Fatal(err)
		}
		poll.Eventually(t, 30*time.Second, "the selector policy to be bound again", func(context.Context) (bool, error) {
			return c.Create(ctx, set("probe", map[string]string{"role": "worker"}), client.DryRunAll) != nil, nil
		})
		bad.Spec.Replicas = new(int32(0))
		if err := c.Update(ctx, bad); err != nil {
			t.Errorf("scaling a MachineSet that mismatched before: %v", err)
		}
		changed := bad.DeepCopy()
		changed.Spec.Template.Labels["role"] = "infra"
		errs, _ := ValidateMachineSetUpdate(changed, bad, unknownCluster, nil)
		refused(t, c.Update(ctx, changed), render.SelectorPolicyName, webhookMessage(t, errs))
	})
}
