package webhooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsyaml "sigs.k8s.io/yaml"
)

// controlPlaneArch chooses the instance type and image defaults: as OpenShift,
// the webhook binary's, which runs on the control plane.
const controlPlaneArch = runtime.GOARCH

// Architectures with their own defaults.
const (
	archAMD64 = "amd64"
	archARM64 = "arm64"
)

// Secrets the platforms' defaults name (OpenShift's).
const (
	defaultUserDataSecret  = "worker-user-data"
	defaultSecretNamespace = "openshift-machine-api"
)

// providerSpecPath is the root of the platforms' field paths: OpenShift's,
// without ".value" (providerSpec.ami), for Machines and templates alike.
var providerSpecPath = field.NewPath("providerSpec")

// SecretLookup says whether the Secret namespace/name exists; nil: no check.
type SecretLookup func(namespace, name string) (bool, error)

// platformEnv is what a platform reads besides the providerSpec value.
type platformEnv struct {
	cluster         ClusterInfo
	arch            string // controlPlaneArch; tests set others
	namespace, name string // the Machine's; a template's name is ""
	secrets         SecretLookup
	// controlPlane: a Machine labelled as a control plane one; as OpenShift, never a template.
	controlPlane bool
}

// verdict collects a value's field errors and warnings in order.
type verdict struct {
	errs     field.ErrorList
	warnings []string
}

// check adds err when failed.
func (v *verdict) check(failed bool, err *field.Error) {
	if failed {
		v.errs = append(v.errs, err)
	}
}

// warn adds warning when cond holds.
func (v *verdict) warn(cond bool, warning string) {
	if cond {
		v.warnings = append(v.warnings, warning)
	}
}

func (v *verdict) add(errs field.ErrorList, warnings []string) {
	v.errs, v.warnings = append(v.errs, errs...), append(v.warnings, warnings...)
}

// credentialsWarnings is OpenShift's warning when the credentials Secret is missing or unreadable.
func (e platformEnv) credentialsWarnings(namespace, name string) []string {
	if e.secrets == nil {
		return nil
	}
	path := providerSpecPath.Child("credentialsSecret")
	exists, err := e.secrets(namespace, name)
	switch {
	case err != nil:
		return []string{field.Invalid(path, name, fmt.Sprintf("failed to get credentialsSecret: %v", err)).Error()}
	case !exists:
		return []string{field.Invalid(path, name, "not found. Expected CredentialsSecret to exist").Error()}
	}
	return nil
}

// defaultInstanceType sets an empty *instanceType to arch's (else amd64's), with OpenShift's note.
func defaultInstanceType(instanceType *string, platform Provider, arch string, byArch map[string]string) []string {
	if *instanceType != "" {
		return nil
	}
	if t, ok := byArch[arch]; ok {
		*instanceType = t
		return []string{fmt.Sprintf("setting the default instance type %q for cloud provider %q, based on the control plane architecture (%q)", t, platform, arch)}
	}
	*instanceType = byArch[archAMD64]
	return []string{fmt.Sprintf("no default instance type found for provider %q, arch %q. Defaulting to the amd64 one: %q", platform, arch, *instanceType)}
}

// platform is one platform's providerSpec admission.
type platform struct {
	kind string
	// groups are the apiVersion groups OpenShift accepts with kind (v1beta1, v1) without a warning; nil: no check.
	groups []string
	// defaults fills the missing fields into fields (the value's top-level keys), returning those keys and its notes.
	defaults func(raw []byte, fields map[string]json.RawMessage, env platformEnv) (set, warnings []string)
	// validate checks a value (raw is nil when there is none).
	validate func(raw []byte, env platformEnv) (field.ErrorList, []string)
	// decodeErrs is validate's error for a value that is missing or does not decode, else nil
	// (OpenShift's defaulting already refuses these).
	decodeErrs func(raw []byte) field.ErrorList
}

// platforms are the platforms this package admits, by provider.
var platforms = map[Provider]platform{}

// register adds a platform whose value decodes into T (from each platform file's init).
func register[T any](p Provider, kind string, groups []string,
	def func(spec *T, env platformEnv) []string,
	validate func(spec *T, env platformEnv) (field.ErrorList, []string)) {
	platforms[p] = platform{
		kind: kind, groups: groups,
		defaults: func(raw []byte, fields map[string]json.RawMessage, env platformEnv) ([]string, []string) {
			spec, errs := decodeValue[T](raw)
			if errs != nil {
				return nil, nil // refused (ProviderSpecRefusal)
			}
			before, errBefore := json.Marshal(spec)
			warnings := def(spec, env)
			after, errAfter := json.Marshal(spec)
			if errBefore != nil || errAfter != nil {
				return nil, nil
			}
			return overlay(fields, before, after), warnings
		},
		decodeErrs: func(raw []byte) field.ErrorList {
			_, errs := decodeValue[T](raw)
			return errs
		},
		validate: func(raw []byte, env platformEnv) (field.ErrorList, []string) {
			spec, errs := decodeValue[T](raw)
			if errs != nil {
				return errs, nil
			}
			var v verdict
			for _, w := range []string{unknownFieldWarning(raw, new(T)), gvkWarning(raw, kind, groups)} {
				v.warn(w != "", w)
			}
			v.add(validate(spec, env))
			return v.errs, v.warnings
		},
	}
}

// decodeValue decodes a providerSpec value into T, or returns OpenShift's error for one missing or not decoding.
func decodeValue[T any](raw []byte) (*T, field.ErrorList) {
	if raw == nil {
		return nil, field.ErrorList{field.Required(providerSpecPath.Child("value"), "a value must be provided")}
	}
	spec := new(T)
	// OpenShift's decoder: through YAML, so a number or bool where a string is expected is that string.
	if err := sigsyaml.Unmarshal(raw, spec); err != nil {
		return nil, field.ErrorList{field.Invalid(providerSpecPath.Child("value"), spec, err.Error())}
	}
	return spec, nil
}

// unknownFieldWarning is OpenShift's warning for the first key of raw into's type lacks.
func unknownFieldWarning(raw []byte, into any) string {
	err := sigsyaml.Unmarshal(raw, into, sigsyaml.DisallowUnknownFields) // as decodeValue, strictly
	_, name, ok := strings.Cut(fmt.Sprint(err), "unknown field ")
	if !ok {
		return ""
	}
	name = strings.ReplaceAll(name, `"`, "")
	return (&field.Error{Type: field.ErrorTypeNotSupported, Field: providerSpecPath.Child("value").String(), BadValue: name,
		Detail: fmt.Sprintf("Unknown field (%s) will be ignored", name)}).Error()
}

// gvkWarning is OpenShift's warning for a value not of kind in groups, version v1beta1 or v1.
func gvkWarning(raw []byte, kind string, groups []string) string {
	if groups == nil {
		return ""
	}
	var tm metav1.TypeMeta
	_ = json.Unmarshal(raw, &tm)
	gvk := schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind)
	if gvk.Kind == kind && slices.Contains(groups, gvk.Group) && (gvk.Version == "v1beta1" || gvk.Version == "v1") {
		return ""
	}
	return fmt.Sprintf("incorrect GroupVersionKind for %s object: %s", kind, gvk)
}

// overlay writes into fields every member of after that differs from before (the typed value around defaulting),
// returning their keys; it descends into objects in all three, so the user's other keys stay verbatim.
func overlay(fields map[string]json.RawMessage, before, after []byte) []string {
	var b, a map[string]json.RawMessage
	if json.Unmarshal(before, &b) != nil || json.Unmarshal(after, &a) != nil {
		return nil
	}
	var set []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if bytes.Equal(b[k], a[k]) {
			continue
		}
		set = append(set, k)
		var orig map[string]json.RawMessage
		if isObject(fields[k]) && isObject(b[k]) && isObject(a[k]) && json.Unmarshal(fields[k], &orig) == nil {
			overlay(orig, b[k], a[k])
			if merged, err := json.Marshal(orig); err == nil {
				fields[k] = merged
				continue
			}
		}
		fields[k] = a[k]
	}
	return set
}

func isObject(raw json.RawMessage) bool {
	return bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{"))
}

// defaultSecretRefs names the user-data and credentials Secrets where none are.
func defaultSecretRefs(userData, credentials **corev1.LocalObjectReference, credentialsSecret string) {
	defaultPtr(userData, corev1.LocalObjectReference{Name: defaultUserDataSecret})
	defaultPtr(credentials, corev1.LocalObjectReference{Name: credentialsSecret})
}

// validateSecretRef requires a named Secret at providerSpec.<what>; a credentials Secret must exist too.
func (e platformEnv) validateSecretRef(ref *corev1.LocalObjectReference, what string) (field.ErrorList, []string) {
	path := providerSpecPath.Child(what)
	switch {
	case ref == nil:
		return field.ErrorList{field.Required(path, what+" must be provided")}, nil
	case ref.Name == "":
		return field.ErrorList{field.Required(path.Child("name"), "name must be provided")}, nil
	case what == "credentialsSecret":
		return nil, e.credentialsWarnings(e.namespace, ref.Name)
	}
	return nil, nil
}
