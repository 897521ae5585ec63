package apply

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// sentMetadata are the metadata fields sent; the others belong to the server.
var sentMetadata = []string{"name", "namespace", "labels", "annotations", "ownerReferences", "finalizers"}

// Desired returns obj (not modified) as Apply sends it: typed, sentMetadata only, no status
// or nulls, labelled and hashed; a Secret's stringData in data, so we own the data keys.
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
	}
	stripNulls(m)
	delete(m, "status")

	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)

	meta, _ := m["metadata"].(map[string]any)
	maps.DeleteFunc(meta, func(k string, _ any) bool { return !slices.Contains(sentMetadata, k) })

	if gvk.Group == "" && gvk.Version == "v1" && gvk.Kind == "Secret" {
		mergeStringData(m)
	}

	u.SetLabels(withKey(u.GetLabels(), config.ManagedByLabel, config.ManagedByValue))

	annotations := u.GetAnnotations()
	delete(annotations, AppliedHashAnnotation)
	u.SetAnnotations(annotations)
	b, err := json.Marshal(m) // sorted map keys: deterministic
	if err != nil {
		return nil, fmt.Errorf("hashing the desired object: %w", err)
	}
	sum := sha256.Sum256(b)
	u.SetAnnotations(withKey(annotations, AppliedHashAnnotation, hex.EncodeToString(sum[:16])))
	return u, nil
}

// withKey sets m[k] = v, making m if it is nil.
func withKey(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
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

// stripNulls removes null ("not set") values from maps, recursively.
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
