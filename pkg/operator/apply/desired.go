package apply

import (
	"crypto/sha256"
	"encoding"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// sentMetadata are the metadata fields sent and compared; the others
// (resourceVersion, uid, generation, creationTimestamp, managedFields, ...)
// belong to the server.
var sentMetadata = []string{"name", "namespace", "labels", "annotations", "ownerReferences", "finalizers"}

// Desired returns obj as the unstructured object Apply sends: apiVersion and
// kind set from the scheme, only the metadata fields in sentMetadata, no
// status, no null values, the ownership label and the AppliedHashAnnotation
// added. obj is not modified.
//
// Typed objects are converted with runtime.DefaultUnstructuredConverter and
// then every field that is not a pointer, slice, map or interface and holds
// its zero value is removed, also where the field has no omitempty tag. A
// typed object cannot tell "set to the zero value" from "not set" for such
// fields, and by the API conventions a zero value there means "not set": it
// is what the server's defaulting replaces (a Service port's targetPort 0
// becomes the port). Sending it would make us own the field with a value the
// server never keeps, and the object would never match. Zero values behind
// pointers (replicas: 0, automountServiceAccountToken: false) are explicit
// and are kept.
//
// A v1 Secret's stringData is merged into data (the server does the same and
// never returns stringData).
func Desired(obj client.Object, scheme *runtime.Scheme) (*unstructured.Unstructured, error) {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if u, ok := obj.(runtime.Unstructured); ok {
		m = runtime.DeepCopyJSON(u.UnstructuredContent())
	} else {
		m, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, fmt.Errorf("converting to unstructured: %w", err)
		}
		v := reflect.ValueOf(obj)
		for v.Kind() == reflect.Pointer && !v.IsNil() {
			v = v.Elem()
		}
		if v.Kind() == reflect.Struct {
			pruneZeroFields(v, m)
		}
	}
	stripNulls(m)
	delete(m, "status")

	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)

	meta, _ := m["metadata"].(map[string]any)
	kept := map[string]any{}
	for _, k := range sentMetadata {
		if v, ok := meta[k]; ok {
			kept[k] = v
		}
	}
	m["metadata"] = kept

	if gvk.Group == "" && gvk.Version == "v1" && gvk.Kind == "Secret" {
		mergeStringData(m)
	}

	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[config.ManagedByLabel] = config.ManagedByValue
	u.SetLabels(labels)

	annotations := u.GetAnnotations()
	delete(annotations, AppliedHashAnnotation)
	u.SetAnnotations(annotations)
	hash, err := hashObject(m)
	if err != nil {
		return nil, err
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[AppliedHashAnnotation] = hash
	u.SetAnnotations(annotations)
	return u, nil
}

// hashObject hashes the JSON form of m (encoding/json sorts map keys, so the
// hash is deterministic).
func hashObject(m map[string]any) (string, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("hashing the desired object: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16]), nil
}

func mergeStringData(m map[string]any) {
	sd, ok := m["stringData"].(map[string]any)
	delete(m, "stringData")
	if !ok || len(sd) == 0 {
		return
	}
	data, _ := m["data"].(map[string]any)
	if data == nil {
		data = map[string]any{}
	}
	for k, v := range sd {
		if s, ok := v.(string); ok {
			data[k] = base64.StdEncoding.EncodeToString([]byte(s))
		}
	}
	m["data"] = data
}

// stripNulls removes null values from maps, recursively (null means "not
// set"; the converter emits it for nil non-omitempty fields).
func stripNulls(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if e == nil {
				delete(v, k)
				continue
			}
			stripNulls(e)
		}
	case []any:
		for _, e := range v {
			stripNulls(e)
		}
	}
}

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	unstructuredType  = reflect.TypeFor[interface{ ToUnstructured() any }]()
)

// isLeaf reports whether t is serialized by its own marshaller (IntOrString,
// Quantity, Time, RawExtension, JSON, ...), so its fields are not JSON fields.
func isLeaf(t reflect.Type) bool {
	for _, it := range []reflect.Type{jsonMarshalerType, textMarshalerType, unstructuredType} {
		if t.Implements(it) || reflect.PointerTo(t).Implements(it) {
			return true
		}
	}
	return false
}

// pruneZeroFields walks the struct v alongside m, its unstructured form, and
// deletes from m the fields of v that are not pointers, slices, maps or
// interfaces and hold their zero value; non-pointer structs left empty are
// deleted too. It recurses into pointers to structs, slices and maps of
// structs.
func pruneZeroFields(v reflect.Value, m map[string]any) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		fv := v.Field(i)
		if f.Anonymous && (name == "" || strings.Contains(","+opts+",", ",inline,")) {
			// Embedded struct: its fields are inlined into m.
			for fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					break
				}
				fv = fv.Elem()
			}
			if fv.Kind() == reflect.Struct && !isLeaf(fv.Type()) {
				pruneZeroFields(fv, m)
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		val, present := m[name]
		if !present {
			continue
		}
		switch fv.Kind() {
		case reflect.Pointer:
			if fv.IsNil() {
				continue
			}
			pruneNested(fv.Elem(), val)
		case reflect.Slice, reflect.Array, reflect.Map:
			pruneNested(fv, val)
		case reflect.Interface:
		case reflect.Struct:
			if fv.IsZero() {
				delete(m, name)
				continue
			}
			if isLeaf(fv.Type()) {
				continue
			}
			if sub, ok := val.(map[string]any); ok {
				pruneZeroFields(fv, sub)
				if len(sub) == 0 {
					delete(m, name)
				}
			}
		default:
			if fv.IsZero() {
				delete(m, name)
			}
		}
	}
}

// pruneNested recurses into the structs held by v (a struct, or a slice,
// array or map of structs or pointers to structs), whose unstructured form is
// val. The containers themselves are kept.
func pruneNested(v reflect.Value, val any) {
	switch v.Kind() {
	case reflect.Struct:
		if isLeaf(v.Type()) {
			return
		}
		if sub, ok := val.(map[string]any); ok {
			pruneZeroFields(v, sub)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			pruneNested(v.Elem(), val)
		}
	case reflect.Slice, reflect.Array:
		list, ok := val.([]any)
		if !ok || len(list) != v.Len() {
			return
		}
		for i := range list {
			pruneNested(v.Index(i), list[i])
		}
	case reflect.Map:
		sub, ok := val.(map[string]any)
		if !ok || v.Type().Key().Kind() != reflect.String {
			return
		}
		iter := v.MapRange()
		for iter.Next() {
			if e, ok := sub[iter.Key().String()]; ok {
				pruneNested(iter.Value(), e)
			}
		}
	}
}
