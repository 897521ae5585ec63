package render

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
)

// TestRoundTrip applies every case with server-side apply to a real API
// server and checks the property the operator's drift check relies on: every
// field Render sets comes back from the server with an equal value (nothing
// is rewritten, dropped or canonicalised), and applying the same objects
// again changes nothing (no new resourceVersion).
func TestRoundTrip(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	for _, ns := range []string{config.DefaultNamespace, "custom-ns"} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	custom := inputs("gcp")
	custom.Namespace = "custom-ns"
	cases := append(renderCases(), renderCase{name: "custom-ns", in: custom})

	t.Run("pod-security-restricted", func(t *testing.T) { checkPodSecurity(ctx, t, env.Client) })
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, objs := mustRender(t, tc.in)
			for _, obj := range objs {
				want, err := ToUnstructured(obj)
				if err != nil {
					t.Fatal(err)
				}
				live := apply(ctx, t, env.Client, want)
				for _, d := range subsetDiff(want.Object, live.Object, "") {
					t.Errorf("%s: %s", describe(obj), d)
				}
				again := apply(ctx, t, env.Client, want)
				if again.GetResourceVersion() != live.GetResourceVersion() {
					t.Errorf("%s: re-applying the same object wrote it (resourceVersion %s -> %s)",
						describe(obj), live.GetResourceVersion(), again.GetResourceVersion())
				}
			}
		})
	}
}

// checkPodSecurity creates (dry run) the operand pod in a namespace that
// enforces the "restricted" Pod Security Standard: it must be admitted. The
// termination handler pod must be rejected there (it needs the host network
// and kubelet files, see daemonset.go), which proves the check is enforced.
func checkPodSecurity(ctx context.Context, t *testing.T, c client.Client) {
	const ns = "restricted"
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest",
	}}})
	if err != nil {
		t.Fatal(err)
	}
	in := inputs("aws")
	in.Namespace = ns
	_, objs := mustRender(t, in)
	newPod := func(tmpl corev1.PodTemplateSpec) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "check-", Namespace: ns, Labels: tmpl.Labels}, Spec: tmpl.Spec}
	}
	if err := c.Create(ctx, newPod(operandDeployment(t, objs).Spec.Template), client.DryRunAll); err != nil {
		t.Errorf("the operand pod is not admitted under the restricted Pod Security Standard: %v", err)
	}
	ds := find[*appsv1.DaemonSet](objs, config.TerminationHandlerName)
	if err := c.Create(ctx, newPod(ds.Spec.Template), client.DryRunAll); !apierrors.IsForbidden(err) {
		t.Errorf("the termination handler pod should be forbidden under the restricted Pod Security Standard, got %v", err)
	}
}

func apply(ctx context.Context, t *testing.T, c client.Client, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()), client.FieldOwner(config.FieldManager), client.ForceOwnership)
	if err != nil {
		t.Fatalf("applying %s/%s %s: %v", obj.GetNamespace(), obj.GetName(), obj.GetKind(), err)
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
		t.Fatal(err)
	}
	return live
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// subsetDiff lists the paths where want is not contained in got: maps must
// have every key of want with a contained value, lists the same length with
// contained elements, scalars equal values.
func subsetDiff(want, got any, path string) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: rendered a map, live has %v", path, got)}
		}
		var out []string
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				out = append(out, fmt.Sprintf("%s.%s: rendered %v, missing in the live object", path, k, wv))
				continue
			}
			out = append(out, subsetDiff(wv, gv, path+"."+k)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: rendered %v, live has %v", path, want, got)}
		}
		var out []string
		for i := range w {
			out = append(out, subsetDiff(w[i], g[i], fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	default:
		// Numbers compare by value: typed float64 fields (CRD schema minimum)
		// convert to float64, the server's JSON decodes to int64.
		if wf, ok := number(want); ok {
			if gf, ok := number(got); ok && wf == gf {
				return nil
			}
		}
		if !reflect.DeepEqual(want, got) {
			return []string{fmt.Sprintf("%s: rendered %#v, live has %#v", path, want, got)}
		}
		return nil
	}
}
