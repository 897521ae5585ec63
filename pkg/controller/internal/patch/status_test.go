package patch

import (
	"encoding/json"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func cond(t, status, reason string) machinev1beta1.Condition {
	return machinev1beta1.Condition{Type: machinev1beta1.ConditionType(t), Status: corev1.ConditionStatus(status), Reason: reason}
}

func machineStatus(t *testing.T, phase string, conds ...machinev1beta1.Condition) status {
	t.Helper()
	m := &machinev1beta1.Machine{}
	if phase != "" {
		m.Status.Phase = ptr.To(phase)
	}
	m.Status.Conditions = conds
	st, err := statusOf(m)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func opsJSON(t *testing.T, ops []op) string {
	t.Helper()
	b, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The JSON patch touches only the conditions this controller changed, each
// guarded by its type at the index it uses; foreign conditions (Synchronized)
// get no operation.
func TestJSONPatch(t *testing.T) {
	base := machineStatus(t, "Provisioned",
		cond("Drainable", "True", "NoHooks"), cond("Synchronized", "True", "Sync"), cond("InstanceExists", "False", "NotCreated"), cond("Old", "True", "X"))
	cases := []struct {
		name    string
		desired status
		want    string
	}{{
		name:    "one condition changed and the phase",
		desired: machineStatus(t, "Running", cond("Drainable", "True", "NoHooks"), cond("Synchronized", "True", "Sync"), cond("InstanceExists", "True", "Exists"), cond("Old", "True", "X")),
		want: `[{"op":"add","path":"/status/phase","value":"Running"},` +
			`{"op":"test","path":"/status/conditions/2/type","value":"InstanceExists"},` +
			`{"op":"replace","path":"/status/conditions/2","value":{"type":"InstanceExists","status":"True","lastTransitionTime":null,"reason":"Exists"}}]`,
	}, {
		name:    "removals from the highest index down, then appends",
		desired: machineStatus(t, "Provisioned", cond("Synchronized", "True", "Sync"), cond("InstanceExists", "False", "NotCreated"), cond("New", "True", "Y")),
		want: `[{"op":"test","path":"/status/conditions/3/type","value":"Old"},{"op":"remove","path":"/status/conditions/3"},` +
			`{"op":"test","path":"/status/conditions/0/type","value":"Drainable"},{"op":"remove","path":"/status/conditions/0"},` +
			`{"op":"add","path":"/status/conditions/-","value":{"type":"New","status":"True","lastTransitionTime":null,"reason":"Y"}}]`,
	}, {
		name:    "a field removed",
		desired: machineStatus(t, "", cond("Drainable", "True", "NoHooks"), cond("Synchronized", "True", "Sync"), cond("InstanceExists", "False", "NotCreated"), cond("New", "True", "Y")),
		want: `[{"op":"remove","path":"/status/phase"},` +
			`{"op":"test","path":"/status/conditions/3/type","value":"Old"},{"op":"remove","path":"/status/conditions/3"},` +
			`{"op":"add","path":"/status/conditions/-","value":{"type":"New","status":"True","lastTransitionTime":null,"reason":"Y"}}]`,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := opsJSON(t, diff(base, tc.desired).jsonPatch(base)); got != tc.want {
				t.Errorf("ops\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// Which patch goes first: conditions travel only as guarded operations or
// under a lock.
func TestFirstPatch(t *testing.T) {
	withConds := machineStatus(t, "Provisioned", cond("A", "True", "R"))
	cases := []struct {
		name          string
		base, desired status
		wantType      string
		wantBody      string
	}{{
		name:     "conditions unchanged: merge patch without them, no lock",
		base:     withConds,
		desired:  machineStatus(t, "Running", cond("A", "True", "R")),
		wantType: "application/merge-patch+json",
		wantBody: `{"status":{"phase":"Running"}}`,
	}, {
		name:     "first conditions: merge patch under a lock",
		base:     machineStatus(t, ""),
		desired:  machineStatus(t, "Provisioning", cond("A", "True", "R")),
		wantType: "application/merge-patch+json",
		wantBody: `{"metadata":{"resourceVersion":"7"},"status":{"conditions":[{"type":"A","status":"True","lastTransitionTime":null,"reason":"R"}],"phase":"Provisioning"}}`,
	}, {
		name:     "conditions changed: JSON patch",
		base:     withConds,
		desired:  machineStatus(t, "Provisioned", cond("A", "False", "R")),
		wantType: "application/json-patch+json",
		wantBody: `[{"op":"test","path":"/status/conditions/0/type","value":"A"},{"op":"replace","path":"/status/conditions/0","value":{"type":"A","status":"False","lastTransitionTime":null,"reason":"R"}}]`,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := diff(tc.base, tc.desired).firstPatch(tc.base, "7")
			if err != nil {
				t.Fatal(err)
			}
			body, err := p.Data(nil)
			if err != nil {
				t.Fatal(err)
			}
			if string(p.Type()) != tc.wantType || string(body) != tc.wantBody {
				t.Errorf("patch %s %s\nwant  %s %s", p.Type(), body, tc.wantType, tc.wantBody)
			}
		})
	}
}

// Rebasing keeps what another writer put in the fresh object and the place
// of each condition.
func TestApplyTo(t *testing.T) {
	base := machineStatus(t, "Provisioned", cond("A", "False", "R"), cond("B", "True", "R"))
	desired := machineStatus(t, "Running", cond("A", "True", "R"), cond("C", "True", "R"))
	fresh := machineStatus(t, "Provisioned", cond("Foreign", "True", "F"), cond("B", "True", "R"), cond("A", "False", "R"))
	fresh.fields["nodeRef"] = json.RawMessage(`{"name":"n"}`)

	got := diff(base, desired).applyTo(fresh)
	var types []string
	for _, c := range got.conds {
		types = append(types, c.Type+"="+string(c.raw))
	}
	want := []string{
		`Foreign={"type":"Foreign","status":"True","lastTransitionTime":null,"reason":"F"}`,
		`A={"type":"A","status":"True","lastTransitionTime":null,"reason":"R"}`,
		`C={"type":"C","status":"True","lastTransitionTime":null,"reason":"R"}`,
	}
	if len(types) != len(want) {
		t.Fatalf("conditions %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Errorf("condition %d = %s, want %s", i, types[i], want[i])
		}
	}
	if string(got.fields["phase"]) != `"Running"` || string(got.fields["nodeRef"]) != `{"name":"n"}` {
		t.Errorf("fields %v: want phase Running and the foreign nodeRef kept", got.fields)
	}
}

func TestNoChanges(t *testing.T) {
	st := machineStatus(t, "Running", cond("A", "True", "R"))
	if !diff(st, st).empty() {
		t.Error("equal statuses must give no changes (no write at rest)")
	}
}

// A merge patch merges objects key by key, so a key the controller dropped
// from an object field (providerStatus, lastOperation) must be sent as null,
// or the server keeps it.
func TestMergePatchRemovesNestedKeys(t *testing.T) {
	from := machineStatus(t, "Running")
	from.fields["providerStatus"] = json.RawMessage(`{"instanceId":"i-1","instanceState":"running","nested":{"a":1,"b":2}}`)
	to := machineStatus(t, "Running")
	to.fields["providerStatus"] = json.RawMessage(`{"instanceState":"terminated","nested":{"a":1}}`)

	got, err := mergePatch(from, diff(from, to), "")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"status":{"providerStatus":{"instanceId":null,"instanceState":"terminated","nested":{"b":null}}}}`
	if string(got) != want {
		t.Errorf("merge patch\n got %s\nwant %s", got, want)
	}
}
