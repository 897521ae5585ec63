package webhooks

import (
	"context"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
)

// TestMachineDeploymentThroughAPIServer: with the CRD and the webhook
// configurations the operator renders, a minimal MachineDeployment (as a
// user writes it in YAML) is stored with a Deployment's defaults and its
// template defaulted as a MachineSet's; invalid ones are refused naming the
// field.
func TestMachineDeploymentThroughAPIServer(t *testing.T) {
	c := startAPIServerWithWebhooks(t, apiServerOptions{})
	ctx := context.Background()
	const ns = "openshift-machine-api"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	createKubemarkInfrastructure(t, c)
	refused := wantRefused

	md := &mdv1beta1.MachineDeployment{}
	t.Run("a minimal MachineDeployment is stored defaulted", func(t *testing.T) {
		minimal := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineDeployment",
			"metadata": map[string]any{"name": "workers", "namespace": ns},
			"spec": map[string]any{
				"selector": map[string]any{"matchLabels": map[string]any{"machine.openshift.io/cluster-api-machineset": "workers"}},
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"machine.openshift.io/cluster-api-machineset": "workers"}},
					"spec":     map[string]any{"providerSpec": map[string]any{"value": map[string]any{"cpu": "4"}}},
				},
			},
		}}
		if err := c.Create(ctx, minimal); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(minimal), md); err != nil {
			t.Fatal(err)
		}
		s := md.Spec
		if *s.Replicas != 1 || *s.RevisionHistoryLimit != 10 || *s.ProgressDeadlineSeconds != 600 {
			t.Errorf("replicas %d, revisionHistoryLimit %d, progressDeadlineSeconds %d; want 1, 10, 600",
				*s.Replicas, *s.RevisionHistoryLimit, *s.ProgressDeadlineSeconds)
		}
		quarter := intstr.FromString("25%")
		if s.Strategy.Type != mdv1beta1.RollingUpdateStrategy || s.Strategy.RollingUpdate == nil ||
			*s.Strategy.RollingUpdate.MaxSurge != quarter || *s.Strategy.RollingUpdate.MaxUnavailable != quarter {
			t.Errorf("strategy = %+v, want RollingUpdate with maxSurge and maxUnavailable 25%%", s.Strategy)
		}
		if md.Labels[ClusterIDLabel] != testInfraName || s.Template.Labels[ClusterIDLabel] != testInfraName {
			t.Errorf("labels %v, template labels %v: want the cluster-ID label on both", md.Labels, s.Template.Labels)
		}
		jsonEqual(t, s.Template.Spec.ProviderSpec.Value.Raw,
			`{"apiVersion":"`+kubemarkAPIVersion+`","kind":"`+kubemarkKind+`","cpu":"4","memory":"4Gi","pods":"110"}`)
	})

	t.Run("neither surge nor unavailability is refused", func(t *testing.T) {
		bad := machineDeployment(value(validKubemark), rollingUpdate(intOrString("0"), intOrString("0%")))
		bad.Name = "stuck"
		refused(t, c.Create(ctx, bad), `admission webhook "validation.machinedeployment.machine.openshift.io" denied the request`,
			`spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "0%": may not be 0 when maxSurge is 0`)
	})

	// Breaks if: the CRD's rule on maxSurge/maxUnavailable were removed (the API server then
	// stores 4294967297, which no int32 holds, and the webhook alone sees 2147483647).
	t.Run("maxSurge and maxUnavailable beyond the bound are refused", func(t *testing.T) {
		const bound = "must be an integer from 0 to 10000 or a percentage from 0% to 100%"
		for i, tc := range []struct {
			field string
			value any
			want  string
		}{
			{"maxSurge", int64(2147483647), bound},
			// No int32 holds it: the defaulting webhook cannot decode it (the CRD's rule would refuse it too).
			{"maxSurge", int64(4294967297), "cannot unmarshal number 4294967297"},
			{"maxSurge", "200%", bound},
			{"maxUnavailable", int64(10001), bound},
			{"maxUnavailable", "99999999999999999999%", bound},
		} {
			u := &unstructured.Unstructured{}
			u.SetUnstructuredContent(map[string]any{
				"apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineDeployment",
				"metadata": map[string]any{"name": "huge-" + strconv.Itoa(i), "namespace": ns},
				"spec": map[string]any{
					"selector": map[string]any{"matchLabels": map[string]any{"machine.openshift.io/cluster-api-machineset": "workers"}},
					"strategy": map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{tc.field: tc.value}},
					"template": map[string]any{
						"metadata": map[string]any{"labels": map[string]any{"machine.openshift.io/cluster-api-machineset": "workers"}},
						"spec":     map[string]any{"providerSpec": map[string]any{"value": map[string]any{"cpu": "4"}}},
					},
				},
			})
			refused(t, c.Create(ctx, u), "spec.strategy.rollingUpdate."+tc.field, tc.want)
		}
		// The bound itself is accepted.
		ok := machineDeployment(value(validKubemark), rollingUpdate(intOrString("10000"), intOrString("100%")))
		ok.Name = "at-the-bound"
		if err := c.Create(ctx, ok); err != nil {
			t.Errorf("maxSurge 10000, maxUnavailable 100%%: %v", err)
		}
	})

	t.Run("Recreate with a rollingUpdate is refused", func(t *testing.T) {
		md.Spec.Strategy.Type = mdv1beta1.RecreateStrategy
		refused(t, c.Update(ctx, md), `spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy type is "Recreate"`)
		md.Spec.Strategy.RollingUpdate = nil
		if err := c.Update(ctx, md); err != nil {
			t.Fatalf("changing the strategy to Recreate: %v", err)
		}
	})

	t.Run("the selector is immutable", func(t *testing.T) {
		md.Spec.Selector.MatchLabels = map[string]string{ClusterIDLabel: testInfraName}
		// The CRD's rule refuses it even while the webhook is down.
		refused(t, c.Update(ctx, md), `spec.selector: Invalid value: selector is immutable: its MachineSets and Machines would no longer be selected`)
	})
}
