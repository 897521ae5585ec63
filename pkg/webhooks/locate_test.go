package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// hostileKeys and hostileSize shape the hostile providerSpecs: 3,000 keys, about 1 MB.
const (
	hostileKeys = 3_000
	hostileSize = 1_000_000
)

// wideSpec is a providerSpec.value of hostileKeys keys of about hostileSize bytes in all,
// the key before last holding bad.
func wideSpec(bad string) string {
	pad := strings.Repeat("x", hostileSize/hostileKeys-10)
	var b strings.Builder
	b.WriteString("{")
	for i := range hostileKeys {
		v := `"` + pad + `"`
		if i == hostileKeys-2 {
			v = bad
		}
		fmt.Fprintf(&b, `"k%04d":%s,`, i, v)
	}
	b.WriteString(`"last":1}`)
	return b.String()
}

// deepSpec is a providerSpec.value nesting hostileKeys objects, each with a padding key,
// about hostileSize bytes in all, bad at the bottom.
func deepSpec(bad string) string {
	pad := `"pad":"` + strings.Repeat("y", hostileSize/hostileKeys-14) + `",`
	return strings.Repeat(`{`+pad+`"a":`, hostileKeys) + bad + strings.Repeat("}", hostileKeys)
}

// hostileCases are Machines whose only fault sits in a large providerSpec (found by the
// mutating handler's locate on map[string]any), or after it (the typed decode's locate).
var hostileCases = []struct {
	name, machine, want string
}{
	{"wide", `{"metadata":{"name":"m"},"spec":{"providerSpec":{"value":` + wideSpec("1e400") + `}}}`,
		"decoding the object: spec.providerSpec.value.k2998: number 1e400 is out of range"},
	{"deep", `{"metadata":{"name":"m"},"spec":{"providerSpec":{"value":` + deepSpec("-1E+999") + `}}}`,
		"decoding the object: spec.providerSpec.value" + strings.Repeat(".a", hostileKeys) + ": number -1E+999 is out of range"},
	{"wide-then-typed", `{"spec":{"providerSpec":{"value":` + wideSpec(`"x"`) + `}},"metadata":{"name":"m","creationTimestamp":"never"}}`,
		`decoding the object: metadata.creationTimestamp: parsing time "never"`},
	{"deep-then-typed", `{"spec":{"providerSpec":{"value":` + deepSpec(`"x"`) + `}},"metadata":{"name":"m","creationTimestamp":"never"}}`,
		`decoding the object: metadata.creationTimestamp: parsing time "never"`},
}

func hostileRequest(raw string) admission.Request {
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(raw)},
	}}
}

// TestHostileProviderSpecRefusedNamingTheField: a 1 MB, 3,000-key providerSpec, wide or 3,000
// deep, with one bad value (or a bad field after it) is refused with 400 naming that value's path.
// The time is BenchmarkHostileProviderSpec's (docs/performance.md); locate is linear in the size.
// Breaks if: locate names a parent, a sibling or no path (e.g. fieldType misses an embedded
// struct's field, or join drops a key), or descends into a value of a type with its own UnmarshalJSON.
func TestHostileProviderSpecRefusedNamingTheField(t *testing.T) {
	h := Handlers(Options{Reader: infraReader{kubemarkInfra()}})[MutateMachinePath]
	for _, tc := range hostileCases {
		if len(tc.machine) < hostileSize {
			t.Fatalf("%s: only %d bytes", tc.name, len(tc.machine))
		}
		resp := h.Handle(context.Background(), hostileRequest(tc.machine))
		if resp.Allowed || resp.Result.Code != http.StatusBadRequest || !strings.HasPrefix(resp.Result.Message, tc.want) {
			got := resp.Result.Message
			if len(got) > 300 {
				got = got[:150] + "..." + got[len(got)-150:]
			}
			t.Errorf("%s: allowed=%v %d %q, want 400 %q", tc.name, resp.Allowed, resp.Result.Code, got, tc.want[:min(len(tc.want), 150)])
		}
	}
}

// TestLocateSkipsWhatCannotFail: locate decodes a value of a type with its own
// UnmarshalJSON once, whole, and names the first failing one of duplicates.
// Breaks if: RawExtension is entered (its content never fails) or duplicates are searched last first.
func TestLocateSkipsWhatCannotFail(t *testing.T) {
	raw := `{"spec":{"providerSpec":{"value":{"creationTimestamp":"never"}}},"metadata":{"creationTimestamp":"x","creationTimestamp":"never"}}`
	err := decode([]byte(raw), &machinev1beta1.Machine{})
	if want := `decoding the object: metadata.creationTimestamp: parsing time "x"`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %v, want %q...", err, want)
	}
}

// BenchmarkHostileProviderSpec times the mutating handler refusing each hostile Machine.
func BenchmarkHostileProviderSpec(b *testing.B) {
	h := Handlers(Options{Reader: infraReader{kubemarkInfra()}})[MutateMachinePath]
	for _, tc := range hostileCases {
		req := hostileRequest(tc.machine)
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.machine)))
			for b.Loop() {
				if resp := h.Handle(context.Background(), req); resp.Allowed {
					b.Fatal("allowed")
				}
			}
		})
	}
}
