package apply

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Matches reports whether every field set in desired is present with an
// equal value in live: the drift check. It is pure.
//
// What is compared:
//   - apiVersion, kind and status are ignored, and of metadata only name,
//     namespace, labels, annotations, ownerReferences and finalizers.
//   - Maps: every key of desired must be in live with a matching value;
//     extra keys in live (API defaults, other managers' fields) are fine.
//   - Lists (of maps or of scalars): every element of desired must match
//     some element of live, in any order; extra live elements are fine, so
//     items another manager added never cause re-applies. The cost: a
//     foreign addition to, or reordering of, a list we set (container args,
//     for example) is not reverted; a foreign change or removal of one of our
//     elements is.
//   - Scalars: equal; numbers compare by value whatever their Go type
//     (int64 7 equals float64 7.0).
//
// Nil and empty values in desired:
//   - null, an empty map, an empty list, and a map whose values are all such
//     "vacuous" values constrain nothing: they match anything, including an
//     absent field. They set no value, the server drops most of them (empty
//     maps and lists do not survive protobuf storage), and requiring them
//     would re-apply forever.
//   - false or a zero number in desired matches an absent or null live
//     field: the server omits omitempty zero values when it serializes, so
//     absent and zero mean the same (hand-written objects say "hostNetwork:
//     false"). They are compared normally when live has the field. An empty
//     string is a value like any other: it is a meaningful label, annotation
//     and node selector value, and the server never omits map values. (Desired
//     strips non-pointer zero fields of typed objects before they get here,
//     so for typed objects this leniency does not matter; see Desired.)
//
// A nil desired matches anything; a nil live matches only a nil desired.
func Matches(desired, live *unstructured.Unstructured) bool {
	return MismatchPath(desired, live) == ""
}

// MismatchPath is Matches returning the path of the first desired field that
// live does not match (for logs and test failures), or "" when live matches.
func MismatchPath(desired, live *unstructured.Unstructured) string {
	if desired == nil {
		return ""
	}
	if live == nil {
		return "."
	}
	for _, k := range sortedKeys(desired.Object) {
		dv := desired.Object[k]
		switch k {
		case "apiVersion", "kind", "status":
			continue
		case "metadata":
			dm, _ := dv.(map[string]any)
			lm, _ := live.Object["metadata"].(map[string]any)
			for _, mk := range sentMetadata {
				d, ok := dm[mk]
				if !ok {
					continue
				}
				if p := matchField("metadata."+mk, d, lm, mk); p != "" {
					return p
				}
			}
		default:
			if p := matchField(k, dv, live.Object, k); p != "" {
				return p
			}
		}
	}
	return ""
}

// matchField matches desired value d against the field key of the live map lm
// (which may be nil).
func matchField(path string, d any, lm map[string]any, key string) string {
	if isVacuous(d) {
		return ""
	}
	l, ok := lm[key]
	if !ok || l == nil {
		if isZeroScalar(d) {
			return ""
		}
		return path
	}
	return matchValue(path, d, l)
}

func matchValue(path string, d, l any) string {
	if isVacuous(d) {
		return ""
	}
	switch d := d.(type) {
	case map[string]any:
		lm, ok := l.(map[string]any)
		if !ok {
			return path
		}
		for _, k := range sortedKeys(d) {
			if p := matchField(path+"."+k, d[k], lm, k); p != "" {
				return p
			}
		}
		return ""
	case []any:
		ll, ok := l.([]any)
		if !ok {
			return path
		}
		for i, de := range d {
			if isVacuous(de) {
				continue
			}
			elemPath := fmt.Sprintf("%s[%d]", path, i)
			found := false
			for _, le := range ll {
				if matchValue(elemPath, de, le) == "" {
					found = true
					break
				}
			}
			if !found {
				return elemPath
			}
		}
		return ""
	default:
		if scalarEqual(d, l) {
			return ""
		}
		return path
	}
}

// isVacuous reports whether v sets nothing: null, an empty map or list, or a
// map whose values are all vacuous.
func isVacuous(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		for _, e := range v {
			if !isVacuous(e) {
				return false
			}
		}
		return true
	case []any:
		return len(v) == 0
	}
	return false
}

// isZeroScalar reports whether v is false or a zero number. Empty strings are
// not included: they are common meaningful map values (a label or node
// selector "node-role.kubernetes.io/master": ""), and map values are never
// omitted by the server.
func isZeroScalar(v any) bool {
	switch v := v.(type) {
	case bool:
		return !v
	}
	if n, ok := toNumber(v); ok {
		return n.isZero()
	}
	return false
}

func scalarEqual(d, l any) bool {
	if dn, ok := toNumber(d); ok {
		ln, ok := toNumber(l)
		return ok && dn.equal(ln)
	}
	dt, lt := reflect.TypeOf(d), reflect.TypeOf(l)
	if dt != lt {
		return false
	}
	if dt.Comparable() {
		return d == l
	}
	return reflect.DeepEqual(d, l)
}

// number is a JSON number as an integer when it is one, else a float.
type number struct {
	isInt bool
	i     int64
	f     float64
}

func (n number) isZero() bool {
	if n.isInt {
		return n.i == 0
	}
	return n.f == 0
}

func (n number) equal(o number) bool {
	switch {
	case n.isInt && o.isInt:
		return n.i == o.i
	case n.isInt:
		return float64(n.i) == o.f && o.f == math.Trunc(o.f)
	case o.isInt:
		return n.f == float64(o.i) && n.f == math.Trunc(n.f)
	default:
		return n.f == o.f
	}
}

func toNumber(v any) (number, bool) {
	switch v := v.(type) {
	case int:
		return number{isInt: true, i: int64(v)}, true
	case int8:
		return number{isInt: true, i: int64(v)}, true
	case int16:
		return number{isInt: true, i: int64(v)}, true
	case int32:
		return number{isInt: true, i: int64(v)}, true
	case int64:
		return number{isInt: true, i: v}, true
	case uint:
		return uintNumber(uint64(v)), true
	case uint8:
		return number{isInt: true, i: int64(v)}, true
	case uint16:
		return number{isInt: true, i: int64(v)}, true
	case uint32:
		return number{isInt: true, i: int64(v)}, true
	case uint64:
		return uintNumber(v), true
	case float32:
		return number{f: float64(v)}, true
	case float64:
		return number{f: v}, true
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return number{isInt: true, i: i}, true
		}
		if f, err := v.Float64(); err == nil {
			return number{f: f}, true
		}
	}
	return number{}, false
}

func uintNumber(u uint64) number {
	if u <= math.MaxInt64 {
		return number{isInt: true, i: int64(u)}
	}
	return number{f: float64(u)}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
