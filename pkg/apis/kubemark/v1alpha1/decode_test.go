package v1alpha1

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const head = `"apiVersion":"kubemark.machine-api-operator.io/v1alpha1","kind":"KubemarkMachineProviderSpec"`

func TestDecodeProviderSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  string
		// want are substrings that must all appear in the joined errors.
		want []string
	}{
		{"empty", ``, []string{"providerSpec.value: Required value"}},
		{"null", `null`, []string{"providerSpec.value: Required value"}},
		{"not an object", `[1,2]`, []string{"providerSpec.value: Invalid value", "must be an object"}},
		{"syntax", `{"cpu":`, []string{"providerSpec.value: Invalid value", "not valid JSON"}},
		{"missing apiVersion and kind", `{"cpu":"1"}`, []string{
			"providerSpec.value.apiVersion: Required value: must be kubemark.machine-api-operator.io/v1alpha1",
			"providerSpec.value.kind: Required value: must be KubemarkMachineProviderSpec"}},
		{"apiVersion not a string", `{"apiVersion":5,"kind":"KubemarkMachineProviderSpec"}`,
			[]string{`providerSpec.value.apiVersion: Invalid value: "5": must be a string`}},
		{"wrong apiVersion", `{"apiVersion":"machine.openshift.io/v1beta1","kind":"KubemarkMachineProviderSpec"}`,
			[]string{`providerSpec.value.apiVersion: Invalid value: "machine.openshift.io/v1beta1": must be kubemark.machine-api-operator.io/v1alpha1`}},
		{"wrong kind", `{"apiVersion":"kubemark.machine-api-operator.io/v1alpha1","kind":"AWSMachineProviderConfig"}`,
			[]string{`providerSpec.value.kind: Invalid value: "AWSMachineProviderConfig": must be KubemarkMachineProviderSpec`}},
		{"unknown field", `{` + head + `,"cpus":"4"}`, []string{"providerSpec.value.cpus: Forbidden: unknown field (known: kind, apiVersion, cpu, memory, pods, bootDelay, health)"}},
		{"case matters", `{` + head + `,"CPU":"4"}`, []string{"providerSpec.value.CPU: Forbidden: unknown field"}},
		{"unknown nested field", `{` + head + `,"health":{"modee":"Once"}}`, []string{"providerSpec.value.health.modee: Forbidden: unknown field (known: unhealthyAfter, mode, unhealthyFor)"}},
		{"metadata is unknown", `{` + head + `,"metadata":{}}`, []string{"providerSpec.value.metadata: Forbidden: unknown field"}},
		{"duplicate key", `{` + head + `,"cpu":"1","cpu":"2"}`, []string{"providerSpec.value: Invalid value", `duplicate field "cpu"`}},
		{"duplicate nested key", `{` + head + `,"health":{"mode":"Once","mode":"Once"}}`, []string{`providerSpec.value.health: Invalid value: "mode": duplicate field "mode"`}},
		{"bad duplicate of a good quantity", `{` + head + `,"cpu":"lots","cpu":"1"}`, []string{`providerSpec.value.cpu: Invalid value: "lots": must be a quantity`}},
		{"negative cpu", `{` + head + `,"cpu":"-1"}`, []string{`providerSpec.value.cpu: Invalid value: "-1": must be positive`}},
		{"zero cpu", `{` + head + `,"cpu":0}`, []string{`providerSpec.value.cpu: Invalid value: "0": must be positive`}},
		{"unparsable cpu", `{` + head + `,"cpu":"lots"}`, []string{`providerSpec.value.cpu: Invalid value: "lots": must be a quantity such as "2", "500m" or "8Gi"`}},
		{"negative memory", `{` + head + `,"memory":"-4Gi"}`, []string{`providerSpec.value.memory: Invalid value: "-4Gi": must be positive`}},
		{"fractional pods", `{` + head + `,"pods":"1.5"}`, []string{`providerSpec.value.pods: Invalid value: "1500m": must be a whole number`}},
		{"zero pods", `{` + head + `,"pods":0}`, []string{`providerSpec.value.pods: Invalid value: "0": must be positive`}},
		{"pods object", `{` + head + `,"pods":{"n":1}}`, []string{`providerSpec.value.pods: Invalid value: "{\"n\":1}": must be a quantity`}},
		{"unparsable bootDelay", `{` + head + `,"bootDelay":"soon"}`, []string{`providerSpec.value.bootDelay: Invalid value: "soon": must be a duration such as "30s" or "5m"`}},
		{"number bootDelay", `{` + head + `,"bootDelay":30}`, []string{`providerSpec.value.bootDelay: Invalid value: "30": must be a duration`}},
		{"negative bootDelay", `{` + head + `,"bootDelay":"-5s"}`, []string{`providerSpec.value.bootDelay: Invalid value: "-5s": must not be negative`}},
		{"health not an object", `{` + head + `,"health":"sick"}`, []string{`providerSpec.value.health: Invalid value: "sick": must be an object`}},
		{"unknown health mode", `{` + head + `,"health":{"mode":"Sometimes"}}`, []string{`providerSpec.value.health.mode: Unsupported value: "Sometimes": supported values: "Once", "Periodic"`}},
		{"mode not a string", `{` + head + `,"health":{"mode":1}}`, []string{`providerSpec.value.health.mode: Invalid value: "1": must be a string`}},
		{"unparsable unhealthyAfter", `{` + head + `,"health":{"unhealthyAfter":"10 minutes"}}`, []string{`providerSpec.value.health.unhealthyAfter: Invalid value: "10 minutes": must be a duration`}},
		{"negative unhealthyAfter", `{` + head + `,"health":{"unhealthyAfter":"-1m"}}`, []string{`providerSpec.value.health.unhealthyAfter: Invalid value: "-1m0s": must not be negative`}},
		{"periodic needs unhealthyAfter", `{` + head + `,"health":{"mode":"Periodic"}}`, []string{`providerSpec.value.health.unhealthyAfter: Invalid value: "0s": must be positive when mode is Periodic`}},
		{"periodic zero unhealthyFor", `{` + head + `,"health":{"mode":"Periodic","unhealthyAfter":"1m","unhealthyFor":"0s"}}`, []string{`providerSpec.value.health.unhealthyFor: Invalid value: "0s": must be positive`}},
		{"unhealthyFor needs Periodic", `{` + head + `,"health":{"unhealthyAfter":"1m","unhealthyFor":"1m"}}`, []string{`providerSpec.value.health.unhealthyFor: Forbidden: may only be set when mode is Periodic`}},
		{"every error at once", `{` + head + `,"cpu":"-1","memory":"0","bootDelay":"-1s"}`, []string{
			"providerSpec.value.cpu:", "providerSpec.value.memory:", "providerSpec.value.bootDelay:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, errs := DecodeProviderSpec([]byte(tc.raw), field.NewPath("providerSpec", "value"))
			if len(errs) == 0 {
				t.Fatalf("no error, decoded %+v", spec)
			}
			if spec != nil {
				t.Errorf("spec returned with errors: %+v", spec)
			}
			got := errs.ToAggregate().Error()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("errors %q\ndo not contain %q", got, w)
				}
			}
		})
	}
}

func TestDecodeProviderSpecDefaults(t *testing.T) {
	spec, errs := DecodeProviderSpec([]byte(`{`+head+`}`), field.NewPath("providerSpec", "value"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := &KubemarkMachineProviderSpec{
		TypeMeta:  metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: ProviderSpecKind},
		CPU:       new(resource.MustParse("2")),
		Memory:    new(resource.MustParse("4Gi")),
		Pods:      new(resource.MustParse("110")),
		BootDelay: &metav1.Duration{},
		Health:    &HealthPolicy{UnhealthyAfter: &metav1.Duration{}, Mode: HealthModeOnce},
	}
	if got, w := mustJSON(t, spec), mustJSON(t, want); got != w {
		t.Errorf("defaulted spec\n got %s\nwant %s", got, w)
	}
}

func TestDecodeProviderSpecValues(t *testing.T) {
	for _, tc := range []struct {
		name  string
		raw   string
		check func(t *testing.T, s *KubemarkMachineProviderSpec)
	}{
		{"quantities as strings and numbers", `{` + head + `,"cpu":"500m","memory":"8Gi","pods":250}`, func(t *testing.T, s *KubemarkMachineProviderSpec) {
			if s.CPU.MilliValue() != 500 || s.Memory.Value() != 8<<30 || s.Pods.Value() != 250 {
				t.Errorf("got cpu %s memory %s pods %s", s.CPU, s.Memory, s.Pods)
			}
		}},
		{"pods as a string with a suffix", `{` + head + `,"pods":"1k"}`, func(t *testing.T, s *KubemarkMachineProviderSpec) {
			if s.Pods.Value() != 1000 {
				t.Errorf("pods %s", s.Pods)
			}
		}},
		{"bootDelay", `{` + head + `,"bootDelay":"1m30s"}`, func(t *testing.T, s *KubemarkMachineProviderSpec) {
			if s.BootDelay.Duration != 90*time.Second {
				t.Errorf("bootDelay %s", s.BootDelay.Duration)
			}
		}},
		{"null fields take defaults", `{` + head + `,"cpu":null,"health":null}`, func(t *testing.T, s *KubemarkMachineProviderSpec) {
			if s.CPU.String() != "2" || s.Health == nil || s.Health.Mode != HealthModeOnce {
				t.Errorf("cpu %s health %+v", s.CPU, s.Health)
			}
		}},
		{"once", `{` + head + `,"health":{"unhealthyAfter":"10m"}}`, func(t *testing.T, s *KubemarkMachineProviderSpec) {
			if s.Health.Mode != HealthModeOnce || s.Health.UnhealthyAfter.Duration != 10*time.Minute || s.Health.UnhealthyFor != nil {
				t.Errorf("health %+v", s.Health)
			}
		}},
		{"periodic defaults unhealthyFor to unhealthyAfter", `{` + head + `,"health":{"mode":"Periodic","unhealthyAfter":"2m"}}`, func(t *testing.T, s *KubemarkMachineProviderSpec) {
			if s.Health.UnhealthyFor == nil || s.Health.UnhealthyFor.Duration != 2*time.Minute {
				t.Errorf("health %+v", s.Health)
			}
		}},
		{"periodic with unhealthyFor", `{` + head + `,"health":{"mode":"Periodic","unhealthyAfter":"2m","unhealthyFor":"30s"}}`, func(t *testing.T, s *KubemarkMachineProviderSpec) {
			if s.Health.UnhealthyFor.Duration != 30*time.Second {
				t.Errorf("health %+v", s.Health)
			}
		}},
		{"whitespace around", "\n  {" + head + "}\n", func(t *testing.T, s *KubemarkMachineProviderSpec) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, errs := DecodeProviderSpec([]byte(tc.raw), field.NewPath("providerSpec", "value"))
			if len(errs) > 0 {
				t.Fatal(errs.ToAggregate())
			}
			tc.check(t, spec)
		})
	}
}

// TestRoundTrip: a defaulted spec encodes to JSON that decodes to the same spec.
func TestRoundTrip(t *testing.T) {
	in := &KubemarkMachineProviderSpec{
		TypeMeta:  metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: ProviderSpecKind},
		CPU:       new(resource.MustParse("4")),
		BootDelay: &metav1.Duration{Duration: time.Minute},
		Health:    &HealthPolicy{UnhealthyAfter: &metav1.Duration{Duration: time.Hour}, Mode: HealthModePeriodic},
	}
	in.Default()
	out, errs := DecodeProviderSpec([]byte(mustJSON(t, in)), field.NewPath("providerSpec", "value"))
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if a, b := mustJSON(t, in), mustJSON(t, out); a != b {
		t.Errorf("round trip\n in %s\nout %s", a, b)
	}
	if cp := in.DeepCopy(); mustJSON(t, cp) != mustJSON(t, in) {
		t.Error("DeepCopy differs")
	}
}

func TestAddToScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for kind, obj := range map[string]runtime.Object{ProviderSpecKind: &KubemarkMachineProviderSpec{}, ProviderStatusKind: &KubemarkMachineProviderStatus{}} {
		gvks, _, err := s.ObjectKinds(obj)
		if err != nil || len(gvks) != 1 || gvks[0] != GroupVersion.WithKind(kind) {
			t.Errorf("%s: kinds %v, %v", kind, gvks, err)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
