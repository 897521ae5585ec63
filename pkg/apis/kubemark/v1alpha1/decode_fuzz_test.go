package v1alpha1

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The seed corpus is the f.Add calls and testdata/fuzz/FuzzDecodeProviderSpec;
// plain `go test` runs it, `make fuzz` fuzzes for FUZZTIME.

var (
	// notJSONAt is the detail of a document that is not JSON.
	notJSONAt = regexp.MustCompile(`^is not valid JSON at byte offset (\d+): `)
	// duplicateKey is the detail of a key given twice in one object.
	duplicateKey = regexp.MustCompile(`^duplicate field "[^"]*"`)
)

// checkDecodeErrors enforces the error rule of DecodeProviderSpec (fldPath
// providerSpec.value): every error names the field it concerns, i.e. its
// Field is providerSpec.value.<key>[.<key>...] (field.Path renders the empty
// key as "[]", e.g. providerSpec.value[] for {"": 1}), except these errors about a
// whole object, whose Field is the object's path and whose detail says what
// is wrong and where:
//
//	Required                                   the document is empty or null (root only)
//	Invalid "is not valid JSON at byte offset N: ..."   (root only, 0 <= N <= len(raw))
//	Invalid "must be an object"                (the value at Field is not an object)
//	Invalid `duplicate field "<key>"`          (<key> appears twice in the object at Field)
func checkDecodeErrors(t *testing.T, raw []byte, errs field.ErrorList) {
	t.Helper()
	const root = "providerSpec.value"
	for _, e := range errs {
		msg := e.Error()
		if e.Field != root && !strings.HasPrefix(e.Field, root+".") && !strings.HasPrefix(e.Field, root+"[") {
			t.Fatalf("error %q: field %q is not below %s", msg, e.Field, root)
		}
		if !strings.HasPrefix(msg, e.Field+": ") {
			t.Fatalf("error %q does not start with its field %q", msg, e.Field)
		}
		switch {
		case e.Type == field.ErrorTypeRequired && e.Field == root:
			if trimmed := bytes.TrimSpace(raw); len(trimmed) != 0 && string(trimmed) != "null" {
				t.Fatalf("error %q for a non-empty document %q", msg, raw)
			}
		case e.Type == field.ErrorTypeInvalid && notJSONAt.MatchString(e.Detail):
			off, _ := strconv.Atoi(notJSONAt.FindStringSubmatch(e.Detail)[1])
			if e.Field != root || off > len(raw) || json.Valid(raw) {
				t.Fatalf("error %q for %q (offset %d of %d bytes)", msg, raw, off, len(raw))
			}
		case e.Type == field.ErrorTypeInvalid && (e.Detail == "must be an object" || duplicateKey.MatchString(e.Detail)):
		case e.Field == root:
			t.Fatalf("error %q for %q names no field", msg, raw)
		}
	}
}

// FuzzDecodeProviderSpec: DecodeProviderSpec never panics and returns either
// a spec or errors. Errors follow checkDecodeErrors. A returned spec is
// complete (no nil pointer after Default), passes Validate, and its JSON
// decodes to the same spec.
func FuzzDecodeProviderSpec(f *testing.F) {
	for _, s := range []string{
		`{` + head + `}`,
		`{` + head + `,"cpu":"500m","memory":"8Gi","pods":250,"bootDelay":"1m30s"}`,
		`{` + head + `,"health":{"mode":"Periodic","unhealthyAfter":"2m","unhealthyFor":"30s"}}`,
		`{` + head + `,"health":{"unhealthyAfter":"10m"}}`,
		`{` + head + `,"cpu":null,"health":null}`,
		`{` + head + `,"cpu":"-1","memory":"0","bootDelay":"-1s","pods":"1.5"}`,
		`{` + head + `,"cpus":"4","health":{"modee":"Once"}}`,
		`{` + head + `,"cpu":"1","cpu":"2"}`,
		`{` + head + `,"health":"sick"}`,
		`{"cpu":"1"}`,
		`[1,2]`,
		`{"cpu":`,
		`null`,
		``,
	} {
		f.Add([]byte(s))
	}
	path := field.NewPath("providerSpec", "value")
	f.Fuzz(func(t *testing.T, raw []byte) {
		spec, errs := DecodeProviderSpec(raw, path)
		if (spec == nil) == (len(errs) == 0) {
			t.Fatalf("spec %+v with errors %v", spec, errs)
		}
		if len(errs) > 0 {
			checkDecodeErrors(t, raw, errs)
			return
		}
		if spec.CPU == nil || spec.Memory == nil || spec.Pods == nil || spec.BootDelay == nil || spec.Health == nil ||
			spec.Health.UnhealthyAfter == nil || spec.Health.Mode == "" ||
			(spec.Health.Mode == HealthModePeriodic) != (spec.Health.UnhealthyFor != nil) {
			t.Fatalf("spec not completely defaulted: %s", mustJSON(t, spec))
		}
		if errs := spec.Validate(path); len(errs) > 0 {
			t.Fatalf("accepted spec does not validate: %v", errs)
		}
		encoded := mustJSON(t, spec)
		again, errs := DecodeProviderSpec([]byte(encoded), path)
		if len(errs) > 0 {
			t.Fatalf("%q was accepted, its encoding %s is not: %v", raw, encoded, errs.ToAggregate())
		}
		if !equality.Semantic.DeepEqual(spec, again) {
			t.Fatalf("round trip of %q changed the spec:\n %s\n %s", raw, encoded, mustJSON(t, again))
		}
	})
}

// Regressions found by FuzzDecodeProviderSpec.

// TestDecodeProviderSpecSyntaxErrorOffset: a document that is not JSON gets
// an error that says where it breaks.
func TestDecodeProviderSpecSyntaxErrorOffset(t *testing.T) {
	for raw, want := range map[string]string{
		`{"cpu":`:       `is not valid JSON at byte offset 7: unexpected end of JSON input`,
		`{"cpu":"1"} x`: `is not valid JSON at byte offset 13: invalid character 'x' after top-level value`,
	} {
		_, errs := DecodeProviderSpec([]byte(raw), field.NewPath("providerSpec", "value"))
		if len(errs) != 1 || errs[0].Field != "providerSpec.value" || errs[0].Detail != want {
			t.Errorf("%s: errors %v, want providerSpec.value: %s", raw, errs, want)
		}
	}
}

// TestDecodeProviderSpecCostlyQuantities: resource.ParseQuantity takes
// minutes for "1e-99999999" and seconds for a million digits, so such
// values are refused before parsing, naming the field.
func TestDecodeProviderSpecCostlyQuantities(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{`"1e-99999999"`, `providerSpec.value.cpu: Invalid value: "1e-99999999": must be a quantity with an exponent between -100 and 100`},
		{`1e-99999999`, `providerSpec.value.cpu: Invalid value: "1e-99999999": must be a quantity with an exponent between -100 and 100`},
		{`"1E+99999999999999999999999"`, `providerSpec.value.cpu: Invalid value: "1E+99999999999999999999999": must be a quantity with an exponent between -100 and 100`},
		{`"` + strings.Repeat("9", 1_000_000) + `"`, `providerSpec.value.cpu: Invalid value: "` + strings.Repeat("9", 80) + `...": must be a quantity of at most 64 characters`},
		{`"0.` + strings.Repeat("0", 1_000_000) + `1"`, `must be a quantity of at most 64 characters`},
	} {
		done := make(chan field.ErrorList, 1)
		go func() {
			_, errs := DecodeProviderSpec([]byte(`{`+head+`,"cpu":`+tc.value+`}`), field.NewPath("providerSpec", "value"))
			done <- errs
		}()
		select {
		case errs := <-done:
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
				t.Errorf("cpu %.40s: errors %v, want %q", tc.value, errs, tc.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("cpu %.40s: still decoding after 5s", tc.value)
		}
	}
	// The bounds leave every reasonable quantity alone.
	for _, v := range []string{`"1e100"`, `"1E-100"`, `"1E"`, `"8Ei"`, `"500m"`, `1e3`, `"` + strings.Repeat("1", 64) + `"`} {
		if _, errs := DecodeProviderSpec([]byte(`{`+head+`,"cpu":`+v+`}`), field.NewPath("providerSpec", "value")); len(errs) > 0 {
			t.Errorf("cpu %s: %v", v, errs)
		}
	}
}
