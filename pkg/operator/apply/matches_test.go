package apply

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// deployment returns a small Deployment-shaped object as the server would
// return it, with defaults filled in; mutate edits it.
func liveDeployment(mutate func(m map[string]any)) *unstructured.Unstructured {
	m := map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata": map[string]any{
			"name":              "ctrl",
			"namespace":         "ns",
			"uid":               "1234",
			"resourceVersion":   "77",
			"generation":        int64(3),
			"creationTimestamp": "2026-01-01T00:00:00Z",
			"labels":            map[string]any{"app": "ctrl", "managed": "yes"},
			"annotations":       map[string]any{"a": "1"},
			"managedFields":     []any{map[string]any{"manager": "x"}},
		},
		"spec": map[string]any{
			"replicas":                int64(1),
			"revisionHistoryLimit":    int64(10),
			"progressDeadlineSeconds": int64(600),
			"strategy":                map[string]any{"type": "RollingUpdate"},
			"template": map[string]any{
				"spec": map[string]any{
					"dnsPolicy": "ClusterFirst",
					"containers": []any{
						map[string]any{
							"name":                   "c",
							"image":                  "img:1",
							"imagePullPolicy":        "IfNotPresent",
							"terminationMessagePath": "/dev/termination-log",
							"args":                   []any{"--a", "--b"},
							"env": []any{
								map[string]any{"name": "A", "value": "1"},
								map[string]any{"name": "B", "value": "2"},
							},
						},
					},
				},
			},
		},
		"status": map[string]any{"replicas": int64(1)},
	}
	if mutate != nil {
		mutate(m)
	}
	return &unstructured.Unstructured{Object: m}
}

func desiredDeployment(mutate func(m map[string]any)) *unstructured.Unstructured {
	m := map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata": map[string]any{
			"name":        "ctrl",
			"namespace":   "ns",
			"labels":      map[string]any{"app": "ctrl"},
			"annotations": map[string]any{"a": "1"},
		},
		"spec": map[string]any{
			"replicas": int64(1),
			"template": map[string]any{
				"spec": map[string]any{
					"containers": []any{
						map[string]any{
							"name":  "c",
							"image": "img:1",
							"args":  []any{"--a", "--b"},
							"env": []any{
								map[string]any{"name": "A", "value": "1"},
							},
						},
					},
				},
			},
		},
	}
	if mutate != nil {
		mutate(m)
	}
	return &unstructured.Unstructured{Object: m}
}

func container(m map[string]any) map[string]any {
	return m["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
}

func TestMatches(t *testing.T) {
	tests := []struct {
		name    string
		desired *unstructured.Unstructured
		live    *unstructured.Unstructured
		want    string // "" = matches, else the mismatch path
	}{
		{
			name:    "equal",
			desired: desiredDeployment(nil),
			live:    desiredDeployment(nil),
		},
		{
			name:    "live has extra defaulted fields, metadata and status",
			desired: desiredDeployment(nil),
			live:    liveDeployment(nil),
		},
		{
			name:    "desired field changed in live",
			desired: desiredDeployment(nil),
			live:    liveDeployment(func(m map[string]any) { container(m)["image"] = "img:2" }),
			want:    "spec.template.spec.containers[0]",
		},
		{
			name:    "desired top-level scalar changed in live",
			desired: desiredDeployment(nil),
			live:    liveDeployment(func(m map[string]any) { m["spec"].(map[string]any)["replicas"] = int64(3) }),
			want:    "spec.replicas",
		},
		{
			name:    "desired list item missing in live",
			desired: desiredDeployment(nil),
			live: liveDeployment(func(m map[string]any) {
				container(m)["env"] = []any{map[string]any{"name": "B", "value": "2"}}
			}),
			want: "spec.template.spec.containers[0]",
		},
		{
			name:    "desired list item changed in live",
			desired: desiredDeployment(nil),
			live: liveDeployment(func(m map[string]any) {
				container(m)["env"] = []any{map[string]any{"name": "A", "value": "changed"}}
			}),
			want: "spec.template.spec.containers[0]",
		},
		{
			name:    "live list has an extra item",
			desired: desiredDeployment(nil),
			live: liveDeployment(func(m map[string]any) {
				container(m)["env"] = []any{
					map[string]any{"name": "EXTRA", "value": "x"},
					map[string]any{"name": "A", "value": "1"},
				}
			}),
		},
		{
			name:    "live has an extra list element of maps (second container)",
			desired: desiredDeployment(nil),
			live: liveDeployment(func(m map[string]any) {
				spec := m["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
				spec["containers"] = append([]any{map[string]any{"name": "sidecar", "image": "s"}}, spec["containers"].([]any)...)
			}),
		},
		{
			name:    "scalar list in another order",
			desired: desiredDeployment(nil),
			live:    liveDeployment(func(m map[string]any) { container(m)["args"] = []any{"--b", "--a"} }),
		},
		{
			name:    "scalar list with an extra item",
			desired: desiredDeployment(nil),
			live:    liveDeployment(func(m map[string]any) { container(m)["args"] = []any{"--a", "--b", "--c"} }),
		},
		{
			name:    "scalar list item changed",
			desired: desiredDeployment(nil),
			live:    liveDeployment(func(m map[string]any) { container(m)["args"] = []any{"--a", "--B"} }),
			want:    "spec.template.spec.containers[0]",
		},
		{
			name:    "scalar list missing in live",
			desired: desiredDeployment(nil),
			live:    liveDeployment(func(m map[string]any) { delete(container(m), "args") }),
			want:    "spec.template.spec.containers[0]",
		},
		{
			name:    "numeric int64 vs float64",
			desired: desiredDeployment(func(m map[string]any) { m["spec"].(map[string]any)["replicas"] = int64(1) }),
			live:    liveDeployment(func(m map[string]any) { m["spec"].(map[string]any)["replicas"] = float64(1) }),
		},
		{
			name:    "numeric float64 vs int64, different value",
			desired: desiredDeployment(func(m map[string]any) { m["spec"].(map[string]any)["replicas"] = float64(1.5) }),
			live:    liveDeployment(func(m map[string]any) { m["spec"].(map[string]any)["replicas"] = int64(1) }),
			want:    "spec.replicas",
		},
		{
			name:    "numeric int vs int32 vs int64",
			desired: desiredDeployment(func(m map[string]any) { m["spec"].(map[string]any)["replicas"] = int32(1) }),
			live:    liveDeployment(func(m map[string]any) { m["spec"].(map[string]any)["replicas"] = 1 }),
		},
		{
			name:    "number vs string",
			desired: desiredDeployment(nil),
			live:    liveDeployment(func(m map[string]any) { m["spec"].(map[string]any)["replicas"] = "1" }),
			want:    "spec.replicas",
		},
		{
			name:    "label removed in live",
			desired: desiredDeployment(nil),
			live: liveDeployment(func(m map[string]any) {
				m["metadata"].(map[string]any)["labels"] = map[string]any{"managed": "yes"}
			}),
			want: "metadata.labels.app",
		},
		{
			name:    "label value changed in live",
			desired: desiredDeployment(nil),
			live: liveDeployment(func(m map[string]any) {
				m["metadata"].(map[string]any)["labels"] = map[string]any{"app": "other"}
			}),
			want: "metadata.labels.app",
		},
		{
			name:    "all labels removed in live",
			desired: desiredDeployment(nil),
			live:    liveDeployment(func(m map[string]any) { delete(m["metadata"].(map[string]any), "labels") }),
			want:    "metadata.labels",
		},
		{
			name:    "annotation changed",
			desired: desiredDeployment(nil),
			live: liveDeployment(func(m map[string]any) {
				m["metadata"].(map[string]any)["annotations"] = map[string]any{"a": "2"}
			}),
			want: "metadata.annotations.a",
		},
		{
			name:    "live has an extra annotation and label",
			desired: desiredDeployment(nil),
			live: liveDeployment(func(m map[string]any) {
				md := m["metadata"].(map[string]any)
				md["annotations"] = map[string]any{"a": "1", "b": "2"}
				md["labels"] = map[string]any{"app": "ctrl", "x": "y"}
			}),
		},
		{
			name: "empty label value is a value",
			desired: desiredDeployment(func(m map[string]any) {
				m["metadata"].(map[string]any)["labels"] = map[string]any{"node-role": ""}
			}),
			live: liveDeployment(nil),
			want: "metadata.labels.node-role",
		},
		{
			name: "other metadata is ignored",
			desired: desiredDeployment(func(m map[string]any) {
				md := m["metadata"].(map[string]any)
				md["resourceVersion"] = "1"
				md["uid"] = "other"
				md["generation"] = int64(1)
			}),
			live: liveDeployment(nil),
		},
		{
			name: "status and kind are ignored",
			desired: desiredDeployment(func(m map[string]any) {
				m["status"] = map[string]any{"replicas": int64(5)}
				m["apiVersion"] = "apps/v1beta2"
			}),
			live: liveDeployment(nil),
		},
		{
			name: "ownerReferences are compared",
			desired: desiredDeployment(func(m map[string]any) {
				m["metadata"].(map[string]any)["ownerReferences"] = []any{map[string]any{"kind": "ClusterOperator", "name": "machine-api"}}
			}),
			live: liveDeployment(nil),
			want: "metadata.ownerReferences",
		},
		{
			name: "null, empty map and empty list in desired constrain nothing",
			desired: desiredDeployment(func(m map[string]any) {
				spec := m["spec"].(map[string]any)
				spec["selector"] = nil
				spec["paused"] = nil
				spec["minReadySeconds"] = nil
				spec["template"].(map[string]any)["metadata"] = map[string]any{"creationTimestamp": nil}
				c := container(m)
				c["resources"] = map[string]any{}
				c["ports"] = []any{}
				c["securityContext"] = map[string]any{"capabilities": map[string]any{}}
			}),
			live: liveDeployment(nil),
		},
		{
			name: "zero scalar in desired matches an absent live field",
			desired: desiredDeployment(func(m map[string]any) {
				spec := m["spec"].(map[string]any)
				spec["minReadySeconds"] = int64(0)
				spec["paused"] = false
			}),
			live: liveDeployment(nil),
		},
		{
			name: "empty string in desired does not match an absent live field",
			desired: desiredDeployment(func(m map[string]any) {
				container(m)["workingDir"] = ""
			}),
			live: liveDeployment(nil),
			want: "spec.template.spec.containers[0]",
		},
		{
			name: "zero scalar in desired is compared when live has the field",
			desired: desiredDeployment(func(m map[string]any) {
				m["spec"].(map[string]any)["replicas"] = int64(0)
			}),
			live: liveDeployment(nil),
			want: "spec.replicas",
		},
		{
			name:    "non-zero field absent in live",
			desired: desiredDeployment(func(m map[string]any) { m["spec"].(map[string]any)["minReadySeconds"] = int64(5) }),
			live:    liveDeployment(nil),
			want:    "spec.minReadySeconds",
		},
		{
			name:    "type mismatch map vs scalar",
			desired: desiredDeployment(func(m map[string]any) { m["spec"].(map[string]any)["strategy"] = map[string]any{"type": "Recreate"} }),
			live:    liveDeployment(func(m map[string]any) { m["spec"].(map[string]any)["strategy"] = "Recreate" }),
			want:    "spec.strategy",
		},
		{
			name: "top-level fields outside spec (ConfigMap data)",
			desired: &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "c", "namespace": "ns"},
				"data":     map[string]any{"k": "v"},
			}},
			live: &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "c", "namespace": "ns"},
				"data":     map[string]any{"k": "edited"},
			}},
			want: "data.k",
		},
		{
			name:    "nil live",
			desired: desiredDeployment(nil),
			live:    nil,
			want:    ".",
		},
		{
			name:    "nil desired",
			desired: nil,
			live:    liveDeployment(nil),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := MismatchPath(tc.desired, tc.live)
			if got != tc.want {
				t.Errorf("MismatchPath = %q, want %q", got, tc.want)
			}
			if m := Matches(tc.desired, tc.live); m != (tc.want == "") {
				t.Errorf("Matches = %v, want %v", m, tc.want == "")
			}
		})
	}
}
