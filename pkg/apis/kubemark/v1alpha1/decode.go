package v1alpha1

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
)

// DecodeProviderSpec decodes the JSON of a providerSpec.value strictly,
// applies the defaults and validates the result. fldPath is the path of the
// value in the Machine (providerSpec.value); every error names the field:
//
//	providerSpec.value.cpus: Forbidden: unknown field (known: kind, apiVersion, cpu, ...)
//	providerSpec.value.cpu: Invalid value: "-1": must be positive
//	providerSpec.value.bootDelay: Invalid value: "soon": must be a duration such as "30s" or "5m"
//	providerSpec.value.health.mode: Unsupported value: "Sometimes": supported values: "Once", "Periodic"
//
// Keys are matched exactly (case-sensitive); a key given twice is an error.
// A quantity longer than 64 characters or with an exponent beyond ±100 is
// refused before it is parsed (parsing such values takes seconds to minutes).
// On errors the returned spec is nil.
func DecodeProviderSpec(raw []byte, fldPath *field.Path) (*KubemarkMachineProviderSpec, field.ErrorList) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, field.ErrorList{field.Required(fldPath, fmt.Sprintf("a %s with apiVersion %s", ProviderSpecKind, GroupVersion))}
	}
	spec := &KubemarkMachineProviderSpec{}
	if errs := decodeStruct(raw, reflect.ValueOf(spec).Elem(), fldPath); len(errs) > 0 {
		return nil, errs
	}
	spec.Default()
	if errs := spec.Validate(fldPath); len(errs) > 0 {
		return nil, errs
	}
	return spec, nil
}

var (
	quantityType = reflect.TypeFor[resource.Quantity]()
	durationType = reflect.TypeFor[metav1.Duration]()
	unmarshaler  = reflect.TypeFor[json.Unmarshaler]()
)

// decodeStruct decodes a JSON object into the struct v field by field, so that
// each error carries the path of the field it concerns.
func decodeStruct(raw []byte, v reflect.Value, p *field.Path) field.ErrorList {
	var obj map[string]json.RawMessage
	strictErrs, err := sigsjson.UnmarshalStrict(raw, &obj)
	if err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return field.ErrorList{field.Invalid(p, badValue(raw), "must be an object")}
		}
		if ok, offset := sigsjson.SyntaxErrorOffset(err); ok {
			return field.ErrorList{field.Invalid(p, shorten(raw), fmt.Sprintf("is not valid JSON at byte offset %d: %v", offset, err))}
		}
		return field.ErrorList{field.Invalid(p, shorten(raw), "is not valid JSON: "+err.Error())}
	}
	var errs field.ErrorList
	for _, se := range strictErrs {
		// Only duplicate keys can be reported for a map.
		errs = append(errs, field.Invalid(p, shorten(raw), se.Error()))
	}
	fields := jsonFields(v)
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fv, ok := fields[k]
		if !ok {
			errs = append(errs, field.Forbidden(p.Child(k), "unknown field (known: "+strings.Join(fieldNames(v), ", ")+")"))
			continue
		}
		errs = append(errs, decodeValue(obj[k], fv, p.Child(k))...)
	}
	return errs
}

// decodeValue decodes one JSON value into fv, the field at path p.
func decodeValue(raw json.RawMessage, fv reflect.Value, p *field.Path) field.ErrorList {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		fv.SetZero()
		return nil
	}
	t := fv.Type()
	elem := t
	if t.Kind() == reflect.Pointer {
		elem = t.Elem()
	}
	if elem.Kind() == reflect.Struct && !reflect.PointerTo(elem).Implements(unmarshaler) {
		target := reflect.New(elem)
		if errs := decodeStruct(raw, target.Elem(), p); len(errs) > 0 {
			return errs
		}
		if t.Kind() == reflect.Pointer {
			fv.Set(target)
		} else {
			fv.Set(target.Elem())
		}
		return nil
	}
	if elem == quantityType {
		if detail := costlyQuantity(raw); detail != "" {
			return field.ErrorList{field.Invalid(p, shorten([]byte(badValue(raw))), detail)}
		}
	}
	target := reflect.New(t)
	if err := json.Unmarshal(raw, target.Interface()); err != nil {
		return field.ErrorList{field.Invalid(p, badValue(raw), hint(elem, err))}
	}
	fv.Set(target.Elem())
	return nil
}

// Bounds of a quantity's text, checked before resource.ParseQuantity, whose
// time grows steeply with the number of digits and the exponent (seconds for
// a million digits, minutes for "1e-99999999"). No capacity needs more.
const (
	maxQuantityLength   = 64
	maxQuantityExponent = 100
)

// costlyQuantity says why the JSON value raw (a string or a number) is too
// long or has too large an exponent to be parsed as a quantity, or "".
func costlyQuantity(raw []byte) string {
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		text = string(bytes.TrimSpace(raw))
	}
	if len(text) > maxQuantityLength {
		return fmt.Sprintf("must be a quantity of at most %d characters", maxQuantityLength)
	}
	// The decimal exponent form: <number>e<signed number> (or E).
	if i := strings.IndexAny(text, "eE"); i >= 0 {
		digits := strings.TrimLeft(text[i+1:], "+-")
		n, err := strconv.ParseUint(digits, 10, 64)
		if (err == nil && n > maxQuantityExponent) || errors.Is(err, strconv.ErrRange) {
			return fmt.Sprintf("must be a quantity with an exponent between -%d and %d", maxQuantityExponent, maxQuantityExponent)
		}
	}
	return ""
}

// hint says what a value of type t looks like.
func hint(t reflect.Type, err error) string {
	switch t {
	case quantityType:
		return `must be a quantity such as "2", "500m" or "8Gi"`
	case durationType:
		return `must be a duration such as "30s" or "5m"`
	}
	if t.Kind() == reflect.String {
		return "must be a string"
	}
	return err.Error()
}

// jsonFields maps each JSON key of the struct v (including inlined embedded
// structs) to its field.
func jsonFields(v reflect.Value) map[string]reflect.Value {
	out := map[string]reflect.Value{}
	for i := range v.NumField() {
		sf := v.Type().Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" || !sf.IsExported() {
			continue
		}
		if name == "" && sf.Anonymous && strings.Contains(opts, "inline") {
			for k, f := range jsonFields(v.Field(i)) {
				out[k] = f
			}
			continue
		}
		if name == "" {
			name = sf.Name
		}
		out[name] = v.Field(i)
	}
	return out
}

// fieldNames lists the JSON keys of the struct v in declaration order.
func fieldNames(v reflect.Value) []string {
	var out []string
	for i := range v.NumField() {
		sf := v.Type().Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		switch {
		case name == "-" || !sf.IsExported():
		case name == "" && sf.Anonymous && strings.Contains(opts, "inline"):
			out = append(out, fieldNames(v.Field(i))...)
		case name == "":
			out = append(out, sf.Name)
		default:
			out = append(out, name)
		}
	}
	return out
}

// badValue returns a JSON value for an error message: a JSON string as its
// text, anything else as JSON, cut to a length that fits in a message.
func badValue(raw []byte) string {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	return shorten(raw)
}

// shorten returns raw as a string, cut to a length that fits in a message.
func shorten(raw []byte) string {
	const limit = 80
	s := string(bytes.TrimSpace(raw))
	if len(s) > limit {
		return s[:limit] + "..."
	}
	return s
}
