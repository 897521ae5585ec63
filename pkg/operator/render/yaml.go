package render

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// ToUnstructured converts a rendered object to exactly the fields Render set
// (the zero status typed structs serialize is dropped).
func ToUnstructured(obj client.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %s to unstructured: %w", describe(obj), err)
	}
	delete(m, "status")
	return &unstructured.Unstructured{Object: m}, nil
}

// ToYAML returns the clean YAML of a rendered object (see ToUnstructured).
func ToYAML(obj client.Object) ([]byte, error) {
	u, err := ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	data, err := yaml.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("marshalling %s: %w", describe(obj), err)
	}
	return data, nil
}

// FileName is "<ii>_<kind>[_<namespace>]_<name>.yaml" for the i-th object,
// sorting in apply order.
func FileName(i int, obj client.Object) string {
	parts := []string{fmt.Sprintf("%02d", i), strings.ToLower(kindOf(obj))}
	if ns := obj.GetNamespace(); ns != "" {
		parts = append(parts, ns)
	}
	parts = append(parts, obj.GetName())
	return strings.Join(parts, "_") + ".yaml"
}

// kindOf is the TypeMeta kind, or the Go type name if TypeMeta is unset.
func kindOf(obj client.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	return reflect.Indirect(reflect.ValueOf(obj)).Type().Name()
}

func describe(obj client.Object) string {
	return kindOf(obj) + " " + client.ObjectKeyFromObject(obj).String()
}
