package webhooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"

	kubemarkv1alpha1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/kubemark/v1alpha1"
)

// providerSpecRaw returns the JSON of providerSpec.value; nil when absent or null.
func providerSpecRaw(ps machinev1beta1.ProviderSpec) ([]byte, error) {
	if ps.Value == nil {
		return nil, nil
	}
	raw := ps.Value.Raw
	if len(raw) == 0 && ps.Value.Object != nil {
		var err error
		if raw, err = json.Marshal(ps.Value.Object); err != nil {
			return nil, fmt.Errorf("encoding providerSpec.value: %w", err)
		}
	}
	if raw = bytes.TrimSpace(raw); len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	return raw, nil
}

// parseFields parses a providerSpec.value into its top-level keys, each value's JSON as given; nil when it is
// not a JSON object with unique keys (defaulting leaves such a value alone, validation reports it).
func parseFields(raw []byte) map[string]json.RawMessage {
	var fields map[string]json.RawMessage
	if strictErrs, err := sigsjson.UnmarshalStrict(raw, &fields); err != nil || len(strictErrs) > 0 {
		return nil
	}
	return fields
}

// stringField returns the value of key when it is a JSON string, else "".
func stringField(fields map[string]json.RawMessage, key string) string {
	var s string
	_ = json.Unmarshal(fields[key], &s) // leaves s "" for anything else
	return s
}

// providerFor says which provider serves a providerSpec.value with these keys (nil: none): the cluster's without
// apiVersion and kind, kubemark anywhere, else as OpenShift only the cluster's platform (else ProviderUnknown).
// ownType: the value names that provider's own type (kubemark's group, a platform's kind in machine.openshift.io) or no apiVersion.
func providerFor(fields map[string]json.RawMessage, cluster Provider) (p Provider, ownType bool) {
	apiVersion, kind := stringField(fields, "apiVersion"), stringField(fields, "kind")
	if apiVersion == "" && kind == "" {
		return cluster, true
	}
	group := ""
	if apiVersion != "" {
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err != nil {
			return ProviderUnknown, false
		}
		if group = gv.Group; group == kubemarkv1alpha1.GroupName {
			return ProviderKubemark, true
		}
	} else if kind == kubemarkv1alpha1.ProviderSpecKind {
		return ProviderKubemark, true
	}
	platform, ok := platforms[cluster]
	switch {
	case !ok:
		return ProviderUnknown, false
	case kind == platform.kind, kind == "" && (group == machinev1beta1.GroupName || slices.Contains(platform.groups, group)):
		return cluster, apiVersion == "" || group == machinev1beta1.GroupName && kind == platform.kind
	}
	return ProviderUnknown, false
}

// valueFields returns providerSpec.value's JSON (nil: none) and top-level keys
// (empty without a value); false when it is not a JSON object with unique keys.
func valueFields(ps machinev1beta1.ProviderSpec) ([]byte, map[string]json.RawMessage, bool) {
	raw, err := providerSpecRaw(ps)
	if err != nil {
		return nil, nil, false
	}
	if raw == nil {
		return nil, map[string]json.RawMessage{}, true
	}
	fields := parseFields(raw)
	return raw, fields, fields != nil
}

// kubemarkDefaults are the keys added to a kubemark providerSpec.value when missing (absent, null
// or ""), in order; bootDelay and health keep their run-time defaults, so the object stays small.
var kubemarkDefaults = []struct{ key, value string }{
	{"apiVersion", kubemarkv1alpha1.GroupVersion.String()},
	{"kind", kubemarkv1alpha1.ProviderSpecKind},
	{"cpu", kubemarkv1alpha1.DefaultCPU},
	{"memory", kubemarkv1alpha1.DefaultMemory},
	{"pods", kubemarkv1alpha1.DefaultPods},
}

// DefaultProviderSpec fills the keys a known provider's providerSpec.value lacks,
// keeping the others' JSON; it returns their names and the platform's notes.
func DefaultProviderSpec(ps *machinev1beta1.ProviderSpec, cluster ClusterInfo) (set, warnings []string) {
	raw, fields, ok := valueFields(*ps)
	if !ok {
		return nil, nil
	}
	provider, _ := providerFor(fields, cluster.Provider)
	if provider == ProviderKubemark {
		for _, d := range kubemarkDefaults {
			if v := string(bytes.TrimSpace(fields[d.key])); v == "" || v == "null" || v == `""` {
				fields[d.key], _ = json.Marshal(d.value) // a string always encodes
				set = append(set, d.key)
			}
		}
	} else if p, ok := platforms[provider]; ok && raw != nil {
		// As on OpenShift, only a given platform value is completed.
		set, warnings = p.defaults(raw, fields, platformEnv{cluster: cluster, arch: controlPlaneArch})
	}
	if len(set) == 0 {
		return nil, warnings
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, warnings
	}
	ps.Value = &runtime.RawExtension{Raw: out}
	return set, warnings
}

// ValidateProviderSpec checks a known provider's providerSpec: kubemark's as its actuator
// decodes it (under fldPath), a platform's with OpenShift's rules and paths.
func ValidateProviderSpec(ps machinev1beta1.ProviderSpec, cluster ClusterInfo, namespace, name string, secrets SecretLookup, fldPath *field.Path) (field.ErrorList, []string) {
	return validateProviderSpec(ps, cluster, platformEnv{namespace: namespace, name: name, secrets: secrets}, fldPath)
}

// validateProviderSpec is ValidateProviderSpec for the object env describes.
func validateProviderSpec(ps machinev1beta1.ProviderSpec, cluster ClusterInfo, env platformEnv, fldPath *field.Path) (field.ErrorList, []string) {
	raw, err := providerSpecRaw(ps)
	if err != nil {
		return field.ErrorList{field.Invalid(fldPath, "", err.Error())}, nil
	}
	// A value that is not an object is the cluster provider's to report.
	provider, _ := providerFor(parseFields(raw), cluster.Provider)
	if provider == ProviderKubemark {
		_, errs := kubemarkv1alpha1.DecodeProviderSpec(raw, fldPath)
		return errs, nil
	}
	if p, ok := platforms[provider]; ok {
		env.cluster, env.arch = cluster, controlPlaneArch
		return p.validate(raw, env)
	}
	return nil, nil
}

// ProviderSpecRefusal is what defaulting refuses, as OpenShift's defaulting webhook: a value of the cluster's
// platform that is missing or does not decode into its type (validation would find nothing else first).
func ProviderSpecRefusal(ps machinev1beta1.ProviderSpec, cluster ClusterInfo) field.ErrorList {
	raw, err := providerSpecRaw(ps)
	if err != nil {
		return nil // validation reports it where it is
	}
	provider, _ := providerFor(parseFields(raw), cluster.Provider)
	if p, ok := platforms[provider]; ok {
		return p.decodeErrs(raw)
	}
	return nil
}
