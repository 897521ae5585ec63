package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
)

func kubemarkReader() client.Reader {
	return fake.NewClientBuilder().WithScheme(scheme.New()).
		WithObjects(infrastructure(configv1.ExternalPlatformType, configv1.ExternalPlatformType, "kubemark", testInfraName)).Build()
}

func request(t *testing.T, op admissionv1.Operation, obj, old runtime.Object) admission.Request {
	t.Helper()
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "uid-1", Operation: op}}
	for _, x := range []struct {
		o   runtime.Object
		raw *runtime.RawExtension
	}{{obj, &req.Object}, {old, &req.OldObject}} {
		if x.o == nil || reflect.ValueOf(x.o).IsNil() {
			continue
		}
		b, err := json.Marshal(x.o)
		if err != nil {
			t.Fatal(err)
		}
		x.raw.Raw = b
	}
	return req
}

// patchOp is one JSON patch operation as sent to the API server.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// sortedPatches normalizes patch operations (any type that marshals to
// JSON patch operations) for comparison.
func sortedPatches(t *testing.T, p any) []patchOp {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var out []patchOp
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func TestMutatingHandlers(t *testing.T) {
	add := func(path string, v any) patchOp {
		return patchOp{Op: "add", Path: path, Value: v}
	}
	capacity := func(prefix string) []patchOp {
		return []patchOp{
			add(prefix+"/apiVersion", kubemarkAPIVersion), add(prefix+"/cpu", "2"),
			add(prefix+"/kind", kubemarkKind), add(prefix+"/memory", "4Gi"), add(prefix+"/pods", "110"),
		}
	}
	sel := map[string]string{"machine.openshift.io/cluster-api-machineset": "w"}
	tests := []struct {
		name       string
		path       string
		reader     client.Reader
		op         admissionv1.Operation
		obj        runtime.Object
		want       []patchOp
		wantResult string
		wantWarn   string
	}{
		{
			name: "Machine on a kubemark cluster", path: MutateMachinePath, reader: kubemarkReader(), op: admissionv1.Create,
			obj: machine("m", value(`{}`)),
			want: append(capacity("/spec/providerSpec/value"), add("/metadata/labels", map[string]any{ClusterIDLabel: testInfraName}),
				add("/metadata/finalizers", []any{machinev1beta1.MachineFinalizer})), wantResult: ResultPatched,
		},
		{
			name: "Machine with labels: only the new label is added", path: MutateMachinePath, reader: kubemarkReader(), op: admissionv1.Create,
			obj: machine("m", value(validKubemark), func(m *machinev1beta1.Machine) {
				m.Labels, m.Finalizers = map[string]string{"a": "b"}, []string{machinev1beta1.MachineFinalizer}
			}),
			want: []patchOp{add("/metadata/labels/machine.openshift.io~1cluster-api-cluster", testInfraName)}, wantResult: ResultPatched,
		},
		{
			name: "Machine already complete", path: MutateMachinePath, reader: kubemarkReader(), op: admissionv1.Create,
			obj: machine("m", value(validKubemark), func(m *machinev1beta1.Machine) {
				m.Labels, m.Finalizers = map[string]string{ClusterIDLabel: "x"}, []string{machinev1beta1.MachineFinalizer}
			}),
			wantResult: ResultAllowed,
		},
		{
			name: "no reader: by group only", path: MutateMachinePath, op: admissionv1.Create,
			obj: machine("m", value(`{"apiVersion":"`+kubemarkAPIVersion+`","kind":"`+kubemarkKind+`"}`)),
			want: []patchOp{
				add("/spec/providerSpec/value/cpu", "2"), add("/spec/providerSpec/value/memory", "4Gi"), add("/spec/providerSpec/value/pods", "110"),
			},
			wantResult: ResultPatched,
		},
		{
			name: "updates are not defaulted", path: MutateMachinePath, reader: kubemarkReader(), op: admissionv1.Update,
			obj: machine("m", value(`{}`)), wantResult: ResultAllowed,
		},
		{
			name: "Infrastructure read error: warning, group-based defaults", path: MutateMachinePath, op: admissionv1.Create,
			reader: fake.NewClientBuilder().WithScheme(scheme.New()).WithInterceptorFuncs(interceptor.Funcs{
				Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
					return errors.New("boom")
				}}).Build(),
			obj: machine("m", value(`{}`)), wantResult: ResultAllowed, wantWarn: "could not read the cluster's Infrastructure",
		},
		{
			name: "MachineSet on a kubemark cluster", path: MutateMachineSetPath, reader: kubemarkReader(), op: admissionv1.Create,
			obj: machineSet("w", sel, sel, value(`{"cpu":"1"}`)),
			want: []patchOp{
				add("/metadata/labels", map[string]any{ClusterIDLabel: testInfraName}),
				add("/spec/template/metadata/labels/machine.openshift.io~1cluster-api-cluster", testInfraName),
				add("/spec/template/spec/providerSpec/value/apiVersion", kubemarkAPIVersion),
				add("/spec/template/spec/providerSpec/value/kind", kubemarkKind),
				add("/spec/template/spec/providerSpec/value/memory", "4Gi"),
				add("/spec/template/spec/providerSpec/value/pods", "110"),
			},
			wantResult: ResultPatched,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := Handlers(Options{Reader: tc.reader, LookupTimeout: time.Second, MachineNamespace: "openshift-machine-api"})[tc.path]
			resp := h.Handle(context.Background(), request(t, tc.op, tc.obj, nil))
			if !resp.Allowed {
				t.Fatalf("refused: %+v", resp.Result)
			}
			if got, want := sortedPatches(t, resp.Patches), sortedPatches(t, tc.want); !reflect.DeepEqual(got, want) {
				t.Errorf("patches:\n got %+v\nwant %+v", got, want)
			}
			if len(tc.want) > 0 && (resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch) {
				t.Errorf("patch type = %v, want JSONPatch", resp.PatchType)
			}
			if got := resultOf(resp); got != tc.wantResult {
				t.Errorf("result = %s, want %s", got, tc.wantResult)
			}
			if tc.wantWarn != "" && (len(resp.Warnings) == 0 || !strings.Contains(resp.Warnings[0], tc.wantWarn)) {
				t.Errorf("warnings = %q, want %q", resp.Warnings, tc.wantWarn)
			}
		})
	}
}

func TestValidatingHandlers(t *testing.T) {
	sel := map[string]string{"machine.openshift.io/cluster-api-machineset": "w"}
	deleting := func(m *machinev1beta1.Machine) {
		m.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		m.Finalizers = []string{"machine.machine.openshift.io"}
	}
	invalid := value(kubemarkSpec(`"cpu":"-1"`))
	tests := []struct {
		name     string
		path     string
		op       admissionv1.Operation
		obj, old runtime.Object
		want     string // "" = allowed, else a substring of the denial message
	}{
		{name: "valid Machine", path: ValidateMachinePath, op: admissionv1.Create, obj: machine("m", value(validKubemark))},
		{
			name: "invalid Machine", path: ValidateMachinePath, op: admissionv1.Create, obj: machine("m", invalid),
			want: `Machine.machine.openshift.io "m" is invalid: spec.providerSpec.value.cpu: Invalid value: "-1": must be positive`,
		},
		{
			name: "generateName in the message", path: ValidateMachinePath, op: admissionv1.Create,
			obj:  machine("", invalid, func(m *machinev1beta1.Machine) { m.GenerateName = "w-" }),
			want: `Machine.machine.openshift.io "w-*" is invalid`,
		},
		{
			name: "providerID changed", path: ValidateMachinePath, op: admissionv1.Update,
			old:  machine("m", value(validKubemark), func(m *machinev1beta1.Machine) { m.Spec.ProviderID = new("a") }),
			obj:  machine("m", value(validKubemark), func(m *machinev1beta1.Machine) { m.Spec.ProviderID = new("b") }),
			want: "spec.providerID: Forbidden: is immutable once set",
		},
		{
			name: "finalizer removal from a deleting, broken Machine", path: ValidateMachinePath, op: admissionv1.Update,
			old: machine("m", invalid, deleting, func(m *machinev1beta1.Machine) { m.Spec.ProviderID = new("a") }),
			obj: machine("m", invalid, deleting, func(m *machinev1beta1.Machine) { m.Spec.ProviderID = new("a"); m.Finalizers = nil }),
		},
		{
			name: "finalizer removal together with a bad change", path: ValidateMachinePath, op: admissionv1.Update,
			old:  machine("m", value(validKubemark), deleting),
			obj:  machine("m", invalid, deleting, func(m *machinev1beta1.Machine) { m.Finalizers = nil }),
			want: "spec.providerSpec.value.cpu",
		},
		{name: "delete is not checked", path: ValidateMachinePath, op: admissionv1.Delete, old: machine("m", invalid)},
		{name: "valid MachineSet", path: ValidateMachineSetPath, op: admissionv1.Create, obj: machineSet("w", sel, sel, value(validKubemark))},
		{
			name: "MachineSet selector not matching", path: ValidateMachineSetPath, op: admissionv1.Create,
			obj:  machineSet("w", sel, map[string]string{"x": "y"}, value(validKubemark)),
			want: `MachineSet.machine.openshift.io "w" is invalid: spec.template.metadata.labels: Invalid value: "x=y": does not match spec.selector`,
		},
		{
			name: "MachineSet selector changed", path: ValidateMachineSetPath, op: admissionv1.Update,
			old:  machineSet("w", sel, map[string]string{"machine.openshift.io/cluster-api-machineset": "w", "b": "c"}, value(validKubemark)),
			obj:  machineSet("w", map[string]string{"b": "c"}, map[string]string{"machine.openshift.io/cluster-api-machineset": "w", "b": "c"}, value(validKubemark)),
			want: `spec.selector: Invalid value: "b=c": field is immutable`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := Handlers(Options{Reader: kubemarkReader()})[tc.path]
			resp := h.Handle(context.Background(), request(t, tc.op, tc.obj, tc.old))
			if tc.want == "" {
				if !resp.Allowed {
					t.Fatalf("refused: %s", resp.Result.Message)
				}
				return
			}
			if resp.Allowed {
				t.Fatalf("allowed, want refused with %q", tc.want)
			}
			if resp.Result.Code != http.StatusUnprocessableEntity || resp.Result.Reason != metav1.StatusReasonInvalid {
				t.Errorf("status = %d %s, want 422 Invalid", resp.Result.Code, resp.Result.Reason)
			}
			if !strings.Contains(resp.Result.Message, tc.want) {
				t.Errorf("message = %q, want it to contain %q", resp.Result.Message, tc.want)
			}
			if resp.Result.Details == nil || len(resp.Result.Details.Causes) == 0 || resp.Result.Details.Causes[0].Field == "" {
				t.Errorf("details = %+v, want causes naming the field", resp.Result.Details)
			}
		})
	}
}

func TestUndecodableObject(t *testing.T) {
	for path, h := range Handlers(Options{}) {
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(`{"spec":`)}}}
		resp := h.Handle(context.Background(), req)
		if resp.Allowed || resp.Result.Code != http.StatusBadRequest || resultOf(resp) != ResultError {
			t.Errorf("%s: response %+v, want a 400 error", path, resp.AdmissionResponse)
		}
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	m := &dto.Metric{}
	if err := c.Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func TestMetrics(t *testing.T) {
	RegisterMetrics()
	RegisterMetrics() // idempotent
	hs := Handlers(Options{Reader: kubemarkReader()})
	count := func(webhook, op, result string) float64 {
		return counterValue(t, RequestsTotal.WithLabelValues(webhook, op, result))
	}
	before := map[string]float64{
		"patched": count(WebhookMutateMachine, "CREATE", ResultPatched),
		"allowed": count(WebhookValidateMachine, "CREATE", ResultAllowed),
		"denied":  count(WebhookValidateMachine, "CREATE", ResultDenied),
		"error":   count(WebhookValidateMachineSet, "CREATE", ResultError),
		"denials": counterValue(t, DenialsTotal.WithLabelValues(WebhookValidateMachine)),
	}
	ctx := context.Background()
	hs[MutateMachinePath].Handle(ctx, request(t, admissionv1.Create, machine("m", value(`{}`)), nil))
	hs[ValidateMachinePath].Handle(ctx, request(t, admissionv1.Create, machine("m", value(validKubemark)), nil))
	hs[ValidateMachinePath].Handle(ctx, request(t, admissionv1.Create, machine("m", value(kubemarkSpec(`"cpu":"-1"`))), nil))
	hs[ValidateMachineSetPath].Handle(ctx, admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create}})

	after := map[string]float64{
		"patched": count(WebhookMutateMachine, "CREATE", ResultPatched),
		"allowed": count(WebhookValidateMachine, "CREATE", ResultAllowed),
		"denied":  count(WebhookValidateMachine, "CREATE", ResultDenied),
		"error":   count(WebhookValidateMachineSet, "CREATE", ResultError),
		"denials": counterValue(t, DenialsTotal.WithLabelValues(WebhookValidateMachine)),
	}
	for k := range before {
		if after[k]-before[k] != 1 {
			t.Errorf("%s: counter went from %v to %v, want +1", k, before[k], after[k])
		}
	}
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, f := range families {
		found[f.GetName()] = true
	}
	for _, name := range []string{"machine_api_webhook_requests_total", "machine_api_webhook_denials_total"} {
		if !found[name] {
			t.Errorf("%s is not registered with controller-runtime's metrics registry", name)
		}
	}
}

func TestMachineFinalizerAdmission(t *testing.T) {
	const fin = machinev1beta1.MachineFinalizer
	complete := func(m *machinev1beta1.Machine) {
		m.Labels = map[string]string{ClusterIDLabel: testInfraName}
		m.Finalizers = []string{"example.com/hold"}
	}
	withOurs := func(m *machinev1beta1.Machine) { m.Finalizers = append(m.Finalizers, fin) }
	tests := []struct {
		name     string
		op       admissionv1.Operation
		obj, old *machinev1beta1.Machine
		want     []patchOp
	}{
		{
			name: "create: appended to the Machine's finalizers", op: admissionv1.Create, obj: machine("m", value(validKubemark), complete),
			want: []patchOp{{Op: "add", Path: "/metadata/finalizers/1", Value: fin}},
		},
		{name: "create with ours: no patch", op: admissionv1.Create, obj: machine("m", value(validKubemark), complete, withOurs)},
		{
			name: "update: never added", op: admissionv1.Update,
			obj: machine("m", value(validKubemark), complete), old: machine("m", value(validKubemark), complete, withOurs),
		},
	}
	h := Handlers(Options{Reader: kubemarkReader(), MachineNamespace: "openshift-machine-api"})[MutateMachinePath]
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.Handle(context.Background(), request(t, tc.op, tc.obj, tc.old))
			if !resp.Allowed {
				t.Fatalf("refused: %+v", resp.Result)
			}
			if got, want := sortedPatches(t, resp.Patches), sortedPatches(t, tc.want); !reflect.DeepEqual(got, want) {
				t.Errorf("patches:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// The Machine's defaulting, finalizer included, runs on CREATE only: the
// operator registers the mutating webhook for nothing else.
func TestMachineDefaultingRegisteredForCreateOnly(t *testing.T) {
	mutating, _ := renderedWebhookConfigurations(t)
	found := false
	for _, w := range mutating[0].Webhooks {
		if *w.ClientConfig.Service.Path != MutateMachinePath {
			continue
		}
		found = true
		for _, r := range w.Rules {
			if !reflect.DeepEqual(r.Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Create}) {
				t.Errorf("%s operations = %v, want [CREATE]", w.Name, r.Operations)
			}
		}
	}
	if !found {
		t.Fatalf("no mutating webhook for %s", MutateMachinePath)
	}
}

// TestDecodeErrorLocationInLongArray: locating the bad value bisects the
// siblings (O(size log n)) and names the right index.
func TestDecodeErrorLocationInLongArray(t *testing.T) {
	const n = 2_000
	taints := strings.Repeat(`{"key":"a","timeAdded":"2026-01-01T00:00:00Z"},`, n-1) + `{"key":"b","timeAdded":"never"}`
	start := time.Now()
	err := decode([]byte(`{"spec":{"taints":[`+taints+`]}}`), &machinev1beta1.Machine{})
	want := fmt.Sprintf(`decoding the object: spec.taints[%d].timeAdded: parsing time "never"`, n-1)
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %v, want %q...", err, want)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestDefaultingRefusesMissingValue: on a platform cluster, the defaulting webhooks refuse a CREATE without a
// providerSpec value as OpenShift's do (403 Forbidden, the one field error, no patch); an UPDATE is left to
// validation, which ratchets.
func TestDefaultingRefusesMissingValue(t *testing.T) {
	reader := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(withStatus(
		infrastructure(configv1.AWSPlatformType, configv1.AWSPlatformType, "", testInfraName),
		func(ps *configv1.PlatformStatus) { ps.AWS = &configv1.AWSPlatformStatus{Region: "us-east-1"} })).Build()
	sel := map[string]string{"machine.openshift.io/cluster-api-machineset": "w"}
	h := Handlers(Options{Reader: reader, LookupTimeout: time.Second, MachineNamespace: "openshift-machine-api"})
	for _, tc := range []struct {
		name, path string
		obj        runtime.Object
	}{
		{"Machine", MutateMachinePath, machine("m", value(""))},
		{"MachineSet", MutateMachineSetPath, machineSet("w", sel, sel, value(""))},
		{"MachineDeployment", MutateMachineDeploymentPath, machineDeployment(value(""))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := h[tc.path].Handle(context.Background(), request(t, admissionv1.Create, tc.obj, nil))
			// Breaks if: mutate ignores Defaulted.Refused (the value is then only refused by validation, 422).
			if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusForbidden || resp.Result.Reason != metav1.StatusReasonForbidden ||
				resp.Result.Message != "providerSpec.value: Required value: a value must be provided" || len(resp.Patches) != 0 {
				t.Errorf("response = allowed %v, %+v, patches %v; want 403 Forbidden with OpenShift's message", resp.Allowed, resp.Result, resp.Patches)
			}
			if got := resultOf(resp); got != ResultDenied {
				t.Errorf("result = %s, want %s", got, ResultDenied)
			}
		})
	}
	t.Run("MachineDeployment update", func(t *testing.T) {
		old := machineDeployment(value(""))
		changed := machineDeployment(value(""), func(md *mdv1beta1.MachineDeployment) { md.Spec.Template.Labels = map[string]string{"a": "b"} })
		resp := h[MutateMachineDeploymentPath].Handle(context.Background(), request(t, admissionv1.Update, changed, old))
		if !resp.Allowed {
			t.Errorf("update refused: %+v", resp.Result)
		}
	})
}
