//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// TestWebhooksOnASwitchedPlatform (local cluster only): with the Infrastructure
// switched to AWS, then GCP, the operand's webhooks refuse OpenShift's invalid
// values with OpenShift's messages (dry-run creates: nothing is stored), and the
// cluster returns to kubemark afterwards. The provider image of the switched
// platform is not run locally; the webhooks are this project's container.
// Breaks if: a platform's rule is missing, or the defaulting webhook admits a
// Machine without a providerSpec value.
func TestWebhooksOnASwitchedPlatform(t *testing.T) {
	ctx := kubemarkTest(t, 6*time.Minute)
	pod := operandPod(ctx, t)
	if len(pod.Status.ContainerStatuses) == 0 || localPID(pod.Status.ContainerStatuses[0]) == 0 {
		t.Skip("the operand pod is not run by the local pod runner (make test-e2e-local): a test switches only a local cluster's platform")
	}
	key := client.ObjectKey{Name: config.ClusterConfigName}
	orig := &configv1.Infrastructure{}
	if err := cluster.Get(ctx, key, orig); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { restorePlatform(t, orig) })

	aws := `"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig","ami":{"id":"ami-1"},"instanceType":"m5.large"`
	for _, step := range []struct {
		platform configv1.PlatformStatus
		cases    []switchedCase
	}{{
		platform: configv1.PlatformStatus{Type: configv1.AWSPlatformType, AWS: &configv1.AWSPlatformStatus{Region: "us-east-1"}},
		cases: []switchedCase{
			{"spot with a capacity reservation", nil, `{` + aws + `,"placement":{"region":"us-east-1"},"spotMarketOptions":{},"capacityReservationId":"cr-0123456789abcdef0"}`,
				"spotMarketOptions and capacityReservationID may not be used together"},
			{"control plane on a dedicated host", map[string]string{"machine.openshift.io/cluster-api-machine-role": "master"},
				`{` + aws + `,"placement":{"region":"us-east-1","tenancy":"host","host":{"affinity":"AnyAvailable"}}}`,
				"dedicated host tenancy is not supported for control plane machines"},
			{"no providerSpec value", nil, "", "providerSpec.value: Required value: a value must be provided"},
		},
	}, {
		platform: configv1.PlatformStatus{Type: configv1.GCPPlatformType, GCP: &configv1.GCPPlatformStatus{ProjectID: "e2e", Region: "us-central1"}},
		cases: []switchedCase{
			{"an unknown provisioningModel", nil, `{"apiVersion":"machine.openshift.io/v1beta1","kind":"GCPMachineProviderSpec","region":"us-central1","zone":"us-central1-a","machineType":"n1-standard-4","provisioningModel":"Reserved"}`,
				`provisioningModel must be "Spot" or omit for standard provisioning`},
		},
	}} {
		before := operandGeneration(ctx, t)
		setPlatformStatus(ctx, t, step.platform)
		// The operator renders the operand for the platform (its provider image is not run here).
		waitFor(ctx, t, "the operand rendered for "+string(step.platform.Type), func(ctx context.Context) (bool, error) {
			return operandGeneration(ctx, t) > before, nil
		})
		for _, c := range step.cases {
			m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{
				Name: "e2e-switched-" + rand.String(5), Namespace: operandNamespace(), Labels: c.labels,
			}}
			if c.value != "" {
				m.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: []byte(c.value)}
			}
			// Until the webhooks read the new platform (they read the Infrastructure per request;
			// the operand pod is rendered again for it), a dry run may still be admitted.
			var last error
			waitFor(ctx, t, fmt.Sprintf("%s: %s refused with %q", step.platform.Type, c.name, c.want), func(ctx context.Context) (bool, error) {
				last = cluster.Create(ctx, m.DeepCopy(), client.DryRunAll)
				return last != nil && strings.Contains(last.Error(), c.want), nil
			})
			t.Logf("%s: %s: %v", step.platform.Type, c.name, last)
		}
	}
}

type switchedCase struct {
	name   string
	labels map[string]string
	value  string // the providerSpec value ("": none)
	want   string // in the refusal
}

// setPlatformStatus switches the Infrastructure's spec and status to ps's platform.
func setPlatformStatus(ctx context.Context, t *testing.T, ps configv1.PlatformStatus) {
	t.Helper()
	waitFor(ctx, t, "the Infrastructure switched to "+string(ps.Type), func(ctx context.Context) (bool, error) {
		infra := &configv1.Infrastructure{}
		if err := cluster.Get(ctx, client.ObjectKey{Name: config.ClusterConfigName}, infra); err != nil {
			return false, err
		}
		infra.Spec.PlatformSpec = configv1.PlatformSpec{Type: ps.Type}
		if err := cluster.Update(ctx, infra); err != nil {
			return false, err
		}
		infra.Status.PlatformStatus = ps.DeepCopy()
		return true, cluster.Status().Update(ctx, infra)
	})
}

// restorePlatform puts the Infrastructure's spec and status back as orig had them and, when
// they had changed, waits until the operand is rendered again and rolled out; then until the
// ClusterOperator is settled, with one Ready operand pod.
func restorePlatform(t *testing.T, orig *configv1.Infrastructure) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	changed, gen := false, operandGeneration(ctx, t)
	waitFor(ctx, t, "the Infrastructure restored", func(ctx context.Context) (bool, error) {
		infra := &configv1.Infrastructure{}
		if err := cluster.Get(ctx, client.ObjectKey{Name: config.ClusterConfigName}, infra); err != nil {
			return false, err
		}
		if equality.Semantic.DeepEqual(infra.Spec, orig.Spec) && equality.Semantic.DeepEqual(infra.Status, orig.Status) {
			return true, nil
		}
		changed = true
		infra.Spec = *orig.Spec.DeepCopy()
		if err := cluster.Update(ctx, infra); err != nil {
			return false, err
		}
		infra.Status = *orig.Status.DeepCopy()
		return false, cluster.Status().Update(ctx, infra) // true at the next poll, once read back
	})
	if changed {
		waitFor(ctx, t, "the operand rendered again and rolled out", func(ctx context.Context) (bool, error) {
			d := &appsv1.Deployment{}
			if err := cluster.Get(ctx, client.ObjectKey{Namespace: operandNamespace(), Name: config.OperandDeploymentName}, d); err != nil {
				return false, err
			}
			want := ptr.Deref(d.Spec.Replicas, 1)
			return d.Generation > gen && d.Status.ObservedGeneration == d.Generation && d.Status.UpdatedReplicas == want &&
				d.Status.AvailableReplicas == want && d.Status.Replicas == want, nil
		})
	}
	waitFor(ctx, t, "the ClusterOperator Available, not Progressing, not Degraded", func(ctx context.Context) (bool, error) {
		co, err := clusterOperator(ctx)
		if err != nil {
			return false, err
		}
		a, p, d := condition(co, configv1.OperatorAvailable), condition(co, configv1.OperatorProgressing), condition(co, configv1.OperatorDegraded)
		return a != nil && p != nil && d != nil && a.Status == configv1.ConditionTrue &&
			p.Status == configv1.ConditionFalse && d.Status == configv1.ConditionFalse, nil
	})
	operandPod(ctx, t)
}

// operandGeneration is the operand Deployment's metadata.generation (0: none).
func operandGeneration(ctx context.Context, t *testing.T) int64 {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := cluster.Get(ctx, client.ObjectKey{Namespace: operandNamespace(), Name: config.OperandDeploymentName}, d); err != nil {
		t.Logf("reading the operand Deployment: %v", err)
		return 0
	}
	return d.Generation
}
