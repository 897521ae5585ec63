package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsjson "sigs.k8s.io/json"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
)

// The seed corpus is the f.Add calls and testdata/fuzz/FuzzAdmission; plain
// `go test` runs it, `make fuzz` fuzzes for FUZZTIME.

// infraReader is a client.Reader holding only the Infrastructure "cluster"
// (nil: none); cheaper per request than the fake client.
type infraReader struct{ infra *configv1.Infrastructure }

func (r infraReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	out, ok := obj.(*configv1.Infrastructure)
	if !ok || r.infra == nil || key.Name != r.infra.Name {
		return apierrors.NewNotFound(configv1.Resource("infrastructures"), key.Name)
	}
	r.infra.DeepCopyInto(out)
	return nil
}

func (infraReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("infraReader cannot list")
}

// jsonPath is a path in a JSON document: identifier keys joined by ".",
// other keys as ["key"] (a Go string literal), array indexes as [N].
const jsonPath = `(?:[A-Za-z_][A-Za-z0-9_]*|\["(?:[^"\\]|\\.)*"\])(?:\.[A-Za-z_][A-Za-z0-9_]*|\["(?:[^"\\]|\\.)*"\]|\[\d+\])*`

var (
	// badRequest is the message of a request whose object cannot be decoded:
	// it says which object and where the document is wrong.
	badRequest = regexp.MustCompile(`^(old object: )?(the admission request has no object$|decoding the object: (malformed JSON at byte offset (\d+): |the document must be a JSON object, not [a-z]+$|(` + jsonPath + `): ))`)
	quotedKey  = regexp.MustCompile(`^\["(?:[^"\\]|\\.)*"\]`)
	// causeField is the field of a validation error: a path in the object,
	// or OpenShift's path of a platform's providerSpec field (providerSpec.ami
	// for spec.providerSpec.value.ami).
	causeField = regexp.MustCompile(`^(metadata|spec|providerSpec)[.\[]`)
	// defaultingRefusal is the one error OpenShift's defaulting refuses with.
	defaultingRefusal = regexp.MustCompile(`^providerSpec\.value: (Required value: a value must be provided|Invalid value: .*)$`)
)

// defaultedFields are the only places defaulting writes; a
// MachineDeployment's defaulting also writes machineDeploymentFields.
var (
	defaultedFields = [][]string{
		{"metadata", "labels"},
		{"spec", "providerSpec", "value"},
		{"spec", "template", "metadata", "labels"},
		{"spec", "template", "spec", "providerSpec", "value"},
	}
	machineDeploymentFields = [][]string{
		{"spec", "replicas"}, {"spec", "strategy"}, {"spec", "revisionHistoryLimit"}, {"spec", "progressDeadlineSeconds"},
	}
)

// FuzzAdmission sends arbitrary bytes as the object (and old object) of
// CREATE and UPDATE requests to every handler, on a kubemark cluster and
// on a cluster without an Infrastructure. Properties:
//
//   - No handler panics; every response is one of the three below.
//   - 400 (the object cannot be decoded): the message matches badRequest,
//     i.e. it names the object (the object or the old object) and where it
//     is wrong: the byte offset of a syntax error, the field path (such as
//     metadata.labels or spec.taints[0].timeAdded) of a value of the wrong
//     type, or that the document is not an object / there is none.
//   - 422 Invalid (validating handlers only): every cause names a field of
//     the object (metadata... or spec...) and the message lists it.
//   - Allowed: only the mutating handlers on CREATE (MachineDeployment's on
//     UPDATE too) patch, only at metadata.labels,
//     spec[.template.spec].providerSpec.value and
//     spec.template.metadata.labels (a MachineDeployment's also at
//     spec.replicas, strategy, revisionHistoryLimit and
//     progressDeadlineSeconds; a Machine's at metadata.finalizers, only
//     appending the machine controller's when missing); the patched object
//     decodes, and (without duplicate keys) defaulting it again changes nothing.
func FuzzAdmission(f *testing.F) {
	sel := `{"matchLabels":{"machine.openshift.io/cluster-api-machineset":"w"}}`
	labels := `{"machine.openshift.io/cluster-api-machineset":"w"}`
	km := `{"apiVersion":"kubemark.machine-api-operator.io/v1alpha1","kind":"KubemarkMachineProviderSpec","cpu":"1"}`
	machine := `{"apiVersion":"machine.openshift.io/v1beta1","kind":"Machine","metadata":{"name":"m","namespace":"openshift-machine-api"},"spec":{"providerSpec":{"value":` + km + `}}}`
	machineSet := `{"apiVersion":"machine.openshift.io/v1beta1","kind":"MachineSet","metadata":{"name":"w","namespace":"openshift-machine-api"},"spec":{"selector":` + sel +
		`,"template":{"metadata":{"labels":` + labels + `},"spec":{"providerSpec":{"value":{}}}}}}`
	machineDeployment := `{"apiVersion":"machine.openshift.io/v1beta1","kind":"MachineDeployment","metadata":{"name":"w","namespace":"openshift-machine-api"},"spec":{"selector":` + sel +
		`,"template":{"metadata":{"labels":` + labels + `},"spec":{"providerSpec":{"value":{"cpu":"1"}}}}}}`
	for _, tc := range []struct {
		obj, old string
		kubemark bool
	}{
		{machine, machine, true},
		{machine, "", false},
		{`{"metadata":{"name":"m"},"spec":{"providerSpec":{"value":{}}}}`, "", true},
		{`{"metadata":{"generateName":"w-","labels":{"a":"b"}},"spec":{"providerID":"kubemark://x","providerSpec":{"value":{"cpu":"-1","cpus":2}}}}`,
			`{"metadata":{"name":"m"},"spec":{"providerID":"kubemark://y"}}`, true},
		{`{"metadata":{"name":"m","namespace":"openshift-machine-api","finalizers":["a"]},"spec":{"providerSpec":{"value":{}}}}`, "", true},
		{`{"metadata":{"name":"m","finalizers":["a"],"deletionTimestamp":"2026-01-01T00:00:00Z"},"spec":{}}`,
			`{"metadata":{"name":"m","finalizers":["a","b"],"deletionTimestamp":"2026-01-01T00:00:00Z"},"spec":{}}`, true},
		{`{"spec":{"lifecycleHooks":{"preDrain":[{"name":"a","owner":"x"},{"name":"a","owner":"y"}]}}}`, "", false},
		{machineSet, machineSet, true},
		{`{"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"x":"y"}}}}}`, `{"spec":{"selector":{}}}`, true},
		{`{"spec":{"selector":{"matchExpressions":[{"key":"a","operator":"Bogus"}]}}}`, "", false},
		{`{"metadata":{"creationTimestamp":"yesterday"}}`, "", true},
		{`{"metadata":{"labels":{"a":1}}}`, "", true},
		{`{"spec":{"taints":[{"key":"k","effect":"NoSchedule","timeAdded":"never"}]}}`, "", true},
		{`{"spec":`, `[]`, true},
		{`null`, `null`, true},
		{``, ``, true},
		{`"machine"`, ``, false},
		// Platform values (the platform clusters receive every input).
		{`{"metadata":{"name":"m","namespace":"openshift-machine-api"},"spec":{"providerSpec":{"value":{"ami":{"id":"ami-1"},"placement":{"Region":"","rack":1}}}}}`, "", false},
		{`{"spec":{"selector":` + sel + `,"template":{"metadata":{"labels":` + labels + `},"spec":{"providerSpec":{"value":{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig","instanceType":5}}}}}}`, "", false},
		{`{"spec":{"providerSpec":{"value":{"placement":{"tenancy":"shared"},"tags":[{"name":"a"},{"name":"a"}],"metadata":{"labels":{"a":"b"}}}}}}`,
			`{"spec":{"providerSpec":{"value":{"placement":{"tenancy":"shared"}}}}}`, false},
		// MachineDeployments.
		{machineDeployment, machineDeployment, true},
		{machineDeployment, `{"spec":{"template":{"spec":{"providerSpec":{"value":{"cpu":"2"}}}}}}`, true},
		{`{"spec":{"replicas":2,"strategy":{"type":"Recreate","rollingUpdate":{"maxSurge":"x%"}},"progressDeadlineSeconds":0}}`, `{"spec":{"strategy":{"type":"Recreate"}}}`, true},
		{`{"spec":{"strategy":{"rollingUpdate":{"maxSurge":0,"maxUnavailable":"0%"}},"selector":` + sel + `}}`, "", false},
		{`{"spec":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":true}}}}`, "", true},
		{`{"spec":{"replicas":1e400}}`, "", true},
	} {
		f.Add([]byte(tc.obj), []byte(tc.old), tc.kubemark)
	}

	clusters := map[bool]map[string]admission.Handler{
		true:  Handlers(Options{Reader: infraReader{kubemarkInfra()}, LookupTimeout: time.Minute, MachineNamespace: fuzzNamespace}),
		false: Handlers(Options{Reader: infraReader{}, LookupTimeout: time.Minute, MachineNamespace: fuzzNamespace}),
	}
	// Every input also goes to a cluster of each platform admitted here.
	var platformClusters []map[string]admission.Handler
	for _, p := range fuzzPlatforms {
		platformClusters = append(platformClusters, Handlers(Options{Reader: infraReader{platformInfra(p)}, LookupTimeout: time.Minute, MachineNamespace: fuzzNamespace}))
	}

	f.Fuzz(func(t *testing.T, obj, old []byte, kubemark bool) {
		for _, handlers := range append([]map[string]admission.Handler{clusters[kubemark]}, platformClusters...) {
			for _, path := range []string{MutateMachinePath, MutateMachineSetPath, MutateMachineDeploymentPath, ValidateMachinePath, ValidateMachineSetPath, ValidateMachineDeploymentPath} {
				for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
					req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
						UID: "uid", Operation: op, Object: runtime.RawExtension{Raw: obj}, OldObject: runtime.RawExtension{Raw: old}}}
					resp := handlers[path].Handle(context.Background(), req)
					checkResponse(t, handlers[path], path, req, resp)
				}
			}
		}
	})
}

func checkResponse(t *testing.T, h admission.Handler, path string, req admission.Request, resp admission.Response) {
	t.Helper()
	mutating := path == MutateMachinePath || path == MutateMachineSetPath || path == MutateMachineDeploymentPath
	where := path + " " + string(req.Operation)
	if !resp.Allowed {
		if resp.Result == nil {
			t.Fatalf("%s: refused without a status", where)
		}
		switch msg := resp.Result.Message; resp.Result.Code {
		case http.StatusBadRequest:
			m := badRequest.FindStringSubmatch(msg)
			if m == nil {
				t.Fatalf("%s: 400 %q names no field or position of %q", where, msg, req.Object.Raw)
			}
			doc := req.Object.Raw
			if m[1] != "" {
				doc = req.OldObject.Raw
			}
			if m[4] != "" {
				if off, _ := strconv.Atoi(m[4]); off > len(doc) || json.Valid(doc) {
					t.Fatalf("%s: %q for %q", where, msg, doc)
				}
			}
			if m[5] != "" && !fieldInDocument(m[5], doc) {
				t.Fatalf("%s: %q names %q, which is not in %q", where, msg, m[5], doc)
			}
		case http.StatusUnprocessableEntity:
			if mutating || resp.Result.Reason != metav1.StatusReasonInvalid || resp.Result.Details == nil || len(resp.Result.Details.Causes) == 0 {
				t.Fatalf("%s: 422 %+v", where, resp.Result)
			}
			for _, c := range resp.Result.Details.Causes {
				if !causeField.MatchString(c.Field) || !strings.Contains(msg, c.Field+": ") {
					t.Fatalf("%s: cause %+v does not name a field of the object (message %q)", where, c, msg)
				}
			}
		case http.StatusForbidden:
			// OpenShift's defaulting refusal: a CREATE whose platform value is missing or does not decode, that one error.
			if !mutating || req.Operation != admissionv1.Create || resp.Result.Reason != metav1.StatusReasonForbidden || !defaultingRefusal.MatchString(msg) {
				t.Fatalf("%s: 403 %+v for %q", where, resp.Result, req.Object.Raw)
			}
		default:
			t.Fatalf("%s: unexpected refusal %d %q for %q", where, resp.Result.Code, msg, req.Object.Raw)
		}
		return
	}
	if len(resp.Patches) == 0 {
		return
	}
	if !mutating || (req.Operation != admissionv1.Create && path != MutateMachineDeploymentPath) {
		t.Fatalf("%s: patches %v", where, resp.Patches)
	}
	var ops []patchOp
	for _, p := range resp.Patches {
		ops = append(ops, patchOp{Op: p.Operation, Path: p.Path, Value: p.Value})
	}
	patched, err := applyPatch(req.Object.Raw, ops)
	if err != nil {
		t.Fatalf("%s: patch %+v does not apply to %q: %v", where, ops, req.Object.Raw, err)
	}
	fields := defaultedFields
	switch path {
	case MutateMachineDeploymentPath:
		fields = append(slices.Clone(defaultedFields), machineDeploymentFields...)
	case MutateMachinePath:
		fields = append(slices.Clone(defaultedFields), []string{"metadata", "finalizers"})
	}
	if a, b := withoutDefaultedFields(t, req.Object.Raw, fields), withoutDefaultedFields(t, patched, fields); !reflect.DeepEqual(a, b) {
		t.Fatalf("%s: patch %+v changes more than the defaulted fields:\n%s\n%s", where, ops, req.Object.Raw, patched)
	}
	var into any = &machinev1beta1.Machine{}
	switch path {
	case MutateMachineSetPath:
		into = &machinev1beta1.MachineSet{}
	case MutateMachineDeploymentPath:
		into = &mdv1beta1.MachineDeployment{}
	}
	if err := decode(patched, into); err != nil {
		t.Fatalf("%s: patched object %s does not decode: %v", where, patched, err)
	}
	if m, ok := into.(*machinev1beta1.Machine); ok {
		orig := &machinev1beta1.Machine{}
		_ = decode(req.Object.Raw, orig) // the handler decoded it
		added := append(slices.Clone(orig.Finalizers), machinev1beta1.MachineFinalizer)
		if !slices.Equal(m.Finalizers, orig.Finalizers) && (slices.Contains(orig.Finalizers, machinev1beta1.MachineFinalizer) || !slices.Equal(m.Finalizers, added)) {
			t.Fatalf("%s: finalizers %q became %q", where, orig.Finalizers, m.Finalizers)
		}
	}
	// Applying the patch drops duplicate keys, which make defaulting leave
	// a providerSpec.value alone; the API server never sends any.
	if hasDuplicateKeys(req.Object.Raw) {
		return
	}
	again := req
	again.Object = runtime.RawExtension{Raw: patched}
	if resp2 := h.Handle(context.Background(), again); !resp2.Allowed || len(resp2.Patches) > 0 {
		t.Fatalf("%s: defaulting %s again: allowed %v, patches %v", where, patched, resp2.Allowed, resp2.Patches)
	}
}

func hasDuplicateKeys(doc []byte) bool {
	var v any
	strict, err := sigsjson.UnmarshalStrict(doc, &v, sigsjson.DisallowDuplicateFields)
	return err != nil || len(strict) > 0
}

// fieldInDocument is true when the first key of the path (such as
// "metadata" of metadata.labels, or "a b" of ["a b"].c) is a key of the JSON
// object doc.
func fieldInDocument(path string, doc []byte) bool {
	first, _, _ := strings.Cut(path, ".")
	first, _, _ = strings.Cut(first, "[")
	if strings.HasPrefix(path, `["`) {
		end := quotedKey.FindString(path)
		var err error
		if first, err = strconv.Unquote(end[1 : len(end)-1]); err != nil {
			return false
		}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(bytes.TrimSpace(doc), &obj); err != nil {
		return false
	}
	_, ok := obj[first]
	return ok
}

// applyPatch applies JSON patch operations (add, replace, remove; paths
// through objects and arrays) to the JSON document doc.
func applyPatch(doc []byte, ops []patchOp) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, err
	}
	for _, op := range ops {
		var keys []string
		for _, k := range strings.Split(op.Path, "/")[1:] {
			keys = append(keys, strings.ReplaceAll(strings.ReplaceAll(k, "~1", "/"), "~0", "~"))
		}
		var err error
		if root, err = applyOp(root, keys, op); err != nil {
			return nil, fmt.Errorf("%s %s: %w", op.Op, op.Path, err)
		}
	}
	return json.Marshal(root)
}

// applyOp applies op at keys below node and returns the new node.
func applyOp(node any, keys []string, op patchOp) (any, error) {
	if len(keys) == 0 {
		switch op.Op {
		case "add", "replace":
			return op.Value, nil
		}
		return nil, fmt.Errorf("cannot %s the document", op.Op)
	}
	key, rest := keys[0], keys[1:]
	switch n := node.(type) {
	case map[string]any:
		child, ok := n[key]
		if len(rest) == 0 {
			switch {
			case op.Op == "remove" && ok:
				delete(n, key)
			case op.Op == "add", op.Op == "replace" && ok:
				n[key] = op.Value
			default:
				return nil, fmt.Errorf("no key %q", key)
			}
			return n, nil
		}
		if !ok {
			return nil, fmt.Errorf("no key %q", key)
		}
		v, err := applyOp(child, rest, op)
		n[key] = v
		return n, err
	case []any:
		i, err := strconv.Atoi(key)
		if key == "-" && op.Op == "add" && len(rest) == 0 {
			return append(n, op.Value), nil
		}
		if err != nil || i < 0 || i > len(n) || (i == len(n) && (op.Op != "add" || len(rest) > 0)) {
			return nil, fmt.Errorf("bad index %q", key)
		}
		if len(rest) == 0 {
			switch op.Op {
			case "add":
				return append(n[:i], append([]any{op.Value}, n[i:]...)...), nil
			case "replace":
				n[i] = op.Value
				return n, nil
			case "remove":
				return append(n[:i], n[i+1:]...), nil
			}
			return nil, fmt.Errorf("unknown op %q", op.Op)
		}
		v, err := applyOp(n[i], rest, op)
		n[i] = v
		return n, err
	}
	return nil, fmt.Errorf("%q is below a scalar", key)
}

// withoutDefaultedFields decodes the JSON object doc, removes the
// defaultedFields, then every null and (recursively) empty object.
func withoutDefaultedFields(t *testing.T, doc []byte, fields [][]string) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%q: %v", doc, err)
	}
	for _, path := range fields {
		node, _ := v.(map[string]any)
		for _, k := range path[:len(path)-1] {
			node, _ = node[k].(map[string]any)
		}
		delete(node, path[len(path)-1])
	}
	return prune(v)
}

func prune(v any) any {
	switch n := v.(type) {
	case map[string]any:
		for k, x := range n {
			if x = prune(x); x == nil {
				delete(n, k)
			} else {
				n[k] = x
			}
		}
		if len(n) == 0 {
			return nil
		}
	case []any:
		for i := range n {
			n[i] = prune(n[i])
		}
	}
	return v
}

// Regressions found by FuzzAdmission.

// TestNullObject: a CREATE whose object is JSON null was decoded into an
// empty Machine, then defaulting assigned into a nil map and panicked.
func TestNullObject(t *testing.T) {
	for path, h := range Handlers(Options{Reader: infraReader{kubemarkInfra()}}) {
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(" null ")}}}
		resp := h.Handle(context.Background(), req)
		if resp.Allowed || resp.Result.Code != http.StatusBadRequest || resp.Result.Message != "decoding the object: the document must be a JSON object, not null" {
			t.Errorf("%s: %+v", path, resp.Result)
		}
	}
}

// TestDecodeErrorsSayWhere: an undecodable object gets an error naming the
// byte offset of a syntax error or the path of the bad value, also when the
// error comes from a type's own UnmarshalJSON (metav1.Time).
func TestDecodeErrorsSayWhere(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{``, `the admission request has no object`},
		{`{"spec":`, `decoding the object: malformed JSON at byte offset 8: unexpected end of JSON input`},
		{`{"spec":{}} x`, `decoding the object: malformed JSON at byte offset 13: invalid character 'x' after top-level value`},
		{"\f{}", `decoding the object: malformed JSON at byte offset 1: invalid character '\f' looking for beginning of value`},
		{`[]`, `decoding the object: the document must be a JSON object, not array`},
		{`"m"`, `decoding the object: the document must be a JSON object, not string`},
		{`{"metadata":{"labels":{"a":1}}}`, `decoding the object: metadata.labels: json: cannot unmarshal number`},
		{`{"metadata":{"creationTimestamp":"yesterday"}}`, `decoding the object: metadata.creationTimestamp: parsing time "yesterday"`},
		{`{"metadata":{"creationTimestamp":5}}`, `decoding the object: metadata.creationTimestamp: `},
		{`{"metadata":{"creationTimestamp":{"a":"b"}}}`, `decoding the object: metadata.creationTimestamp: `},
		{`{"metadata":{"name":"m","creationTimestamp":"2026-01-01T00:00:00Z","deletionTimestamp":"x"},"spec":{"taints":[{"key":"a"},{"key":"b","timeAdded":"never"}]}}`,
			`decoding the object: metadata.deletionTimestamp: parsing time "x"`},
		{`{"spec":{"taints":[{"key":"a"},{"key":"b","timeAdded":"never"}]}}`, `decoding the object: spec.taints[1].timeAdded: parsing time "never"`},
		{`{"metadata":{"creationTimestamp":"x","creationTimestamp":"2026-01-01T00:00:00Z"}}`, `decoding the object: metadata.creationTimestamp: parsing time "x"`},
	} {
		err := decode([]byte(tc.raw), &machinev1beta1.Machine{})
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q...", tc.raw, err, tc.want)
		}
	}
}

// fuzzNamespace is the machine controller's namespace in FuzzAdmission, its seeds' own.
const fuzzNamespace = "openshift-machine-api"

// fuzzPlatforms are the platforms FuzzAdmission also sends every input to.
var fuzzPlatforms = []configv1.PlatformType{configv1.AWSPlatformType, configv1.AzurePlatformType, configv1.GCPPlatformType, configv1.VSpherePlatformType, configv1.PowerVSPlatformType, configv1.NutanixPlatformType}

// platformInfra is the Infrastructure of a cluster on platform p, with the
// platform status its defaults read.
func platformInfra(p configv1.PlatformType) *configv1.Infrastructure {
	infra := infrastructure(p, p, "", testInfraName)
	switch p {
	case configv1.AWSPlatformType:
		infra.Status.PlatformStatus.AWS = &configv1.AWSPlatformStatus{Region: "us-east-1"}
	case configv1.AzurePlatformType:
		infra.Status.PlatformStatus.Azure = &configv1.AzurePlatformStatus{CloudName: configv1.AzurePublicCloud}
	}
	return infra
}

func kubemarkInfra() *configv1.Infrastructure {
	infra := &configv1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	infra.Spec.PlatformSpec = configv1.PlatformSpec{Type: configv1.ExternalPlatformType, External: &configv1.ExternalPlatformSpec{PlatformName: "kubemark"}}
	infra.Status = configv1.InfrastructureStatus{InfrastructureName: testInfraName, PlatformStatus: &configv1.PlatformStatus{Type: configv1.ExternalPlatformType}}
	return infra
}

// TestHugeNumber: a number beyond float64 (1e400) anywhere in the object
// made the JSON patch computation fail with a 500 "invalid JSON Document".
func TestHugeNumber(t *testing.T) {
	h := Handlers(Options{Reader: infraReader{kubemarkInfra()}})[MutateMachinePath]
	for raw, want := range map[string]string{
		`{"metadata":{"name":"m","x":1e400},"spec":{}}`:                                 "decoding the object: metadata.x: number 1e400 is out of range",
		`{"":{"a b":{"c":[{"":1e700}]}}}`:                                               `decoding the object: [""]["a b"].c[0][""]: number 1e700 is out of range`,
		`{"metadata":{"name":"m"},"spec":{"providerSpec":{"value":{"n":[1,-1E+999]}}}}`: "decoding the object: spec.providerSpec.value.n[1]: number -1E+999 is out of range",
	} {
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(raw)}}}
		resp := h.Handle(context.Background(), req)
		if resp.Allowed || resp.Result.Code != http.StatusBadRequest || resp.Result.Message != want {
			t.Errorf("%s: %+v, want 400 %q", raw, resp.Result, want)
		}
	}
}
