package v1alpha1

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
)

// DecodeProviderSpec decodes a providerSpec.value strictly (keys exact, none
// twice), defaults and validates it; every error names its field below
// fldPath. On errors the spec is nil.
func DecodeProviderSpec(raw []byte, fldPath *field.Path) (*KubemarkMachineProviderSpec, field.ErrorList) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, field.ErrorList{field.Required(fldPath, fmt.Sprintf("a %s with apiVersion %s", ProviderSpecKind, GroupVersion))}
	}
	if errs := checkTypedFields(raw, fldPath); len(errs) > 0 {
		return nil, errs
	}
	spec := &KubemarkMachineProviderSpec{}
	strict, err := sigsjson.UnmarshalStrict(raw, spec)
	if err != nil {
		return nil, field.ErrorList{decodeError(raw, err, fldPath)}
	}
	if len(strict) > 0 {
		return nil, strictErrors(strict, fldPath)
	}
	spec.Default()
	if errs := spec.Validate(fldPath); len(errs) > 0 {
		return nil, errs
	}
	return spec, nil
}

// checkTypedFields checks each quantity and duration (every occurrence):
// their UnmarshalJSON errors carry no path, and a quantity must pass
// costlyQuantity before anything parses it.
func checkTypedFields(raw []byte, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	check := func(v json.RawMessage, p *field.Path, into any, hint string) {
		detail := ""
		if _, ok := into.(*resource.Quantity); ok {
			detail = costlyQuantity(v)
		}
		if detail == "" && json.Unmarshal(v, into) != nil {
			detail = hint
		}
		if detail != "" {
			errs = append(errs, field.Invalid(p, shorten([]byte(badValue(v))), detail))
		}
	}
	keys, values := members(raw)
	for i, k := range keys {
		switch k {
		case "cpu", "memory", "pods":
			check(values[i], p.Child(k), new(resource.Quantity), `must be a quantity such as "2", "500m" or "8Gi"`)
		case "bootDelay":
			check(values[i], p.Child(k), new(metav1.Duration), durationHint)
		case "health":
			hkeys, hvalues := members(values[i])
			for j, hk := range hkeys {
				if hk == "unhealthyAfter" || hk == "unhealthyFor" {
					check(hvalues[j], p.Child(k, hk), new(metav1.Duration), durationHint)
				}
			}
		}
	}
	return errs
}

const durationHint = `must be a duration such as "30s" or "5m"`

// members returns the JSON object's keys and values in order, duplicates
// included; nothing if raw is not an object.
func members(raw []byte) (keys []string, values []json.RawMessage) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil
	}
	for dec.More() {
		k, err := dec.Token()
		var v json.RawMessage
		if err == nil {
			err = dec.Decode(&v)
		}
		if err != nil {
			return nil, nil
		}
		keys, values = append(keys, k.(string)), append(values, v)
	}
	return keys, values
}

// decodeError turns sigsjson.UnmarshalStrict's error into a field error.
func decodeError(raw []byte, err error, p *field.Path) *field.Error {
	if ok, offset := sigsjson.SyntaxErrorOffset(err); ok {
		return field.Invalid(p, shorten(raw), fmt.Sprintf("is not valid JSON at byte offset %d: %v", offset, err))
	}
	var typeErr *json.UnmarshalTypeError
	if !errors.As(err, &typeErr) {
		return field.Invalid(p, shorten(raw), err.Error())
	}
	value := raw
	if typeErr.Field != "" { // the inlined TypeMeta is not in the JSON path
		for _, k := range strings.Split(strings.TrimPrefix(typeErr.Field, "TypeMeta."), ".") {
			keys, values := members(value)
			value = nil
			for i := range keys {
				if keys[i] == k {
					value = values[i]
				}
			}
			p = p.Child(k)
		}
	}
	detail := map[reflect.Kind]string{reflect.Struct: "must be an object", reflect.String: "must be a string"}[typeErr.Type.Kind()]
	if detail == "" {
		detail = typeErr.Error()
	}
	return field.Invalid(p, badValue(value), detail)
}

// strictErrors turns sigsjson's unknown and duplicate field errors into field errors.
func strictErrors(strict []error, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, se := range strict {
		var fe sigsjson.FieldError
		if !errors.As(se, &fe) {
			errs = append(errs, field.Invalid(p, nil, se.Error()))
			continue
		}
		keys := strings.Split(fe.FieldPath(), ".")
		object, key := keys[:len(keys)-1], keys[len(keys)-1]
		parent := p
		for _, k := range object {
			parent = parent.Child(k)
		}
		if strings.HasPrefix(se.Error(), "duplicate field") {
			errs = append(errs, field.Invalid(parent, key, fmt.Sprintf("duplicate field %q", key)))
			continue
		}
		known := "kind, apiVersion, cpu, memory, pods, bootDelay, health" // as in types.go
		if len(object) > 0 {
			known = "unhealthyAfter, mode, unhealthyFor"
		}
		errs = append(errs, field.Forbidden(parent.Child(key), "unknown field (known: "+known+")"))
	}
	return errs
}

// Bounds of a quantity's text, checked before resource.ParseQuantity, which
// takes seconds to minutes on a million digits or "1e-99999999".
const (
	maxQuantityLength   = 64
	maxQuantityExponent = 100
)

// costlyQuantity says why the JSON value raw is too costly to parse as a
// quantity, or "".
func costlyQuantity(raw []byte) string {
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		text = string(bytes.TrimSpace(raw))
	}
	if len(text) > maxQuantityLength {
		return fmt.Sprintf("must be a quantity of at most %d characters", maxQuantityLength)
	}
	if i := strings.IndexAny(text, "eE"); i >= 0 {
		digits := strings.TrimLeft(text[i+1:], "+-")
		n, err := strconv.ParseUint(digits, 10, 64)
		if (err == nil && n > maxQuantityExponent) || errors.Is(err, strconv.ErrRange) {
			return fmt.Sprintf("must be a quantity with an exponent between -%d and %d", maxQuantityExponent, maxQuantityExponent)
		}
	}
	return ""
}

// badValue returns a JSON value for a message: a string's text, else shortened JSON.
func badValue(raw []byte) string {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	return shorten(raw)
}

// shorten returns raw as a string cut to fit in a message.
func shorten(raw []byte) string {
	const limit = 80
	s := string(bytes.TrimSpace(raw))
	if len(s) > limit {
		return s[:limit] + "..."
	}
	return s
}
