package webhooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// edit replaces the value at path of the object's JSON.
type edit struct {
	path  []string
	value any
}

// patchResponse answers with the JSON patch of edits to the request's object:
// only the edited fields, never those a typed round trip would add.
func patchResponse(original []byte, edits []edit) admission.Response {
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(original))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the object: %w", err))
	}
	// The JSON patch is computed on float64 numbers.
	if path, n := hugeNumber(obj, ""); n != "" {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the object: %s: number %s is out of range", path, n))
	}
	for _, e := range edits {
		parent := obj
		for _, k := range e.path[:len(e.path)-1] {
			child, ok := parent[k].(map[string]any)
			if !ok {
				child = map[string]any{}
				parent[k] = child
			}
			parent = child
		}
		parent[e.path[len(e.path)-1]] = e.value
	}
	patched, err := json.Marshal(obj)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("encoding the defaulted object: %w", err))
	}
	return admission.PatchResponseFromRaw(original, patched)
}

// hugeNumber returns the path and text of the first number in v (decoded
// with UseNumber) too large for a float64, such as 1e400; "" if none.
func hugeNumber(v any, path string) (string, json.Number) {
	switch n := v.(type) {
	case json.Number:
		if _, err := strconv.ParseFloat(string(n), 64); err != nil {
			return path, n
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(n)) {
			if p, num := hugeNumber(n[k], childPath(path, k)); num != "" {
				return p, num
			}
		}
	case []any:
		for i, x := range n {
			if p, num := hugeNumber(x, fmt.Sprintf("%s[%d]", path, i)); num != "" {
				return p, num
			}
		}
	}
	return "", ""
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// childPath appends a key to a field path: metadata.name, or ["a key"] for a non-identifier.
func childPath(path, key string) string {
	switch {
	case !identifier.MatchString(key):
		return path + "[" + strconv.Quote(key) + "]"
	case path == "":
		return key
	}
	return path + "." + key
}

func defaultMachineEdits(m, _ *machinev1beta1.Machine, cluster ClusterInfo) (Defaulted, []edit) {
	d := DefaultMachine(m, cluster)
	var edits []edit
	if d.Labels {
		edits = append(edits, edit{[]string{"metadata", "labels"}, m.Labels})
	}
	if len(d.ProviderSpec) > 0 {
		edits = append(edits, edit{[]string{"spec", "providerSpec", "value"}, json.RawMessage(m.Spec.ProviderSpec.Value.Raw)})
	}
	return d, edits
}

func defaultMachineSetEdits(ms, _ *machinev1beta1.MachineSet, cluster ClusterInfo) (Defaulted, []edit) {
	d := DefaultMachineSet(ms, cluster)
	return d, templatedEdits(d, ms.Labels, &ms.Spec.Template)
}

// templatedEdits are the edits of what defaultTemplated changed.
func templatedEdits(d Defaulted, labels map[string]string, tmpl *machinev1beta1.MachineTemplateSpec) []edit {
	var edits []edit
	if d.Labels {
		edits = append(edits, edit{[]string{"metadata", "labels"}, labels},
			edit{[]string{"spec", "template", "metadata", "labels"}, tmpl.Labels})
	}
	if len(d.ProviderSpec) > 0 {
		edits = append(edits, edit{[]string{"spec", "template", "spec", "providerSpec", "value"}, json.RawMessage(tmpl.Spec.ProviderSpec.Value.Raw)})
	}
	return edits
}
