package machine

import (
	"strings"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

func TestForeignProviderSpec(t *testing.T) {
	served := []schema.GroupKind{{Group: "kubemark.machine-api-operator.io"}}
	// This project's binary: kubemark's group and vSphere's kind in the
	// group every OpenShift provider shares.
	both := []schema.GroupKind{{Group: "kubemark.machine-api-operator.io"}, {Group: "machine.openshift.io", Kind: "VSphereMachineProviderSpec"}}
	raw := func(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }
	tests := []struct {
		name    string
		value   *runtime.RawExtension
		served  []schema.GroupKind
		want    bool
		wantAPI string
	}{
		{"ours", raw(`{"apiVersion":"kubemark.machine-api-operator.io/v1alpha1","kind":"KubemarkMachineProviderSpec"}`), served, false, ""},
		{"ours, another version (the provider says what is wrong)", raw(`{"apiVersion":"kubemark.machine-api-operator.io/v9","kind":"X"}`), served, false, ""},
		{"AWS", raw(`{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig"}`), served, true, "machine.openshift.io/v1beta1"},
		{"vSphere", raw(`{"apiVersion":"vsphereprovider.openshift.io/v1beta1","kind":"VSphereMachineProviderSpec"}`), served, true, "vsphereprovider.openshift.io/v1beta1"},
		{"core group", raw(`{"apiVersion":"v1","kind":"ConfigMap"}`), served, true, "v1"},
		{"no apiVersion", raw(`{"cpu":"1"}`), served, false, ""},
		{"unparsable apiVersion", raw(`{"apiVersion":"a/b/c"}`), served, false, ""},
		{"not an object", raw(`[1]`), served, false, ""},
		{"not JSON", raw(`{`), served, false, ""},
		{"no value", nil, served, false, ""},
		{"provider serves everything", raw(`{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig"}`), nil, false, ""},
		{"vSphere kind served by kind", raw(`{"apiVersion":"machine.openshift.io/v1beta1","kind":"VSphereMachineProviderSpec"}`), both, false, ""},
		{"AWS kind in the shared group is foreign", raw(`{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig"}`), both, true, "machine.openshift.io/v1beta1"},
		{"shared group, no kind is foreign", raw(`{"apiVersion":"machine.openshift.io/v1beta1"}`), both, true, "machine.openshift.io/v1beta1"},
		{"kubemark beside vSphere", raw(`{"apiVersion":"kubemark.machine-api-operator.io/v1alpha1","kind":"KubemarkMachineProviderSpec"}`), both, false, ""},
		{"typed object", &runtime.RawExtension{Object: &runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "machine.openshift.io/v1beta1", Kind: "AWSMachineProviderConfig"}}}, served, true, "machine.openshift.io/v1beta1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, foreign := foreignProviderSpec(tt.value, tt.served)
			if foreign != tt.want || (foreign && got.APIVersion != tt.wantAPI) {
				t.Errorf("foreignProviderSpec = %+v, %v; want foreign=%v apiVersion %q", got, foreign, tt.want, tt.wantAPI)
			}
		})
	}
}

func TestUnsupportedProviderMessage(t *testing.T) {
	msg := unsupportedProviderMessage(provider.SpecType{APIVersion: "machine.openshift.io/v1beta1", Kind: "AWSMachineProviderConfig", Group: "machine.openshift.io"},
		[]schema.GroupKind{{Group: "kubemark.machine-api-operator.io"}, {Group: "machine.openshift.io", Kind: "VSphereMachineProviderSpec"}})
	for _, want := range []string{"AWSMachineProviderConfig", "apiVersion machine.openshift.io/v1beta1", "serving machine.openshift.io",
		"serves only kubemark.machine-api-operator.io, VSphereMachineProviderSpec (machine.openshift.io)", "untouched"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not contain %q", msg, want)
		}
	}
}

// awsProviderSpec is a providerSpec of a provider the fixture's fake does not
// serve (OpenShift's AWS provider).
func awsProviderSpec(m *machinev1beta1.Machine) {
	m.Spec.ProviderSpec.Value = rawJSON(`{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig","instanceType":"m6i.xlarge"}`)
}

// A Machine whose providerSpec belongs to another provider is never touched:
// no finalizer, no phase, no provider call, never Failed; it only gets
// ProviderSupported=False naming the providerSpec's apiVersion and kind, and
// one UnsupportedProvider event. Without our finalizer it is deleted at once;
// a deleting one held by another controller's finalizer (the AWS controller
// uses the same name) is left to that controller.
func TestForeignProviderSpecLeftUntouched(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := f.machine("aws", awsProviderSpec)

	if res := f.mustReconcile(m); res != (ctrl.Result{}) {
		t.Errorf("nothing to come back for: %+v", res)
	}
	got := f.mustGet(m)
	c := wantCondition(t, got, ProviderSupportedCondition, corev1.ConditionFalse, ReasonUnsupportedProvider,
		"AWSMachineProviderConfig", "apiVersion machine.openshift.io/v1beta1", "serves only "+testGroup)
	t.Logf("condition: %s", c.Message)
	if len(got.Status.Conditions) != 1 {
		t.Errorf("only ProviderSupported is written, got %+v", got.Status.Conditions)
	}
	if got.Status.Phase != nil || got.Status.ErrorReason != nil || got.Status.ErrorMessage != nil || got.Status.LastUpdated != nil {
		t.Errorf("status touched: phase %v, errorReason %v, errorMessage %v, lastUpdated %v",
			got.Status.Phase, got.Status.ErrorReason, got.Status.ErrorMessage, got.Status.LastUpdated)
	}
	if len(got.Finalizers) != 0 || len(got.Annotations) != 0 {
		t.Errorf("metadata touched: finalizers %v, annotations %v", got.Finalizers, got.Annotations)
	}
	wantCalls(t, f.act, map[string]int{})
	if n := f.rec.count(EventUnsupportedProvider); n != 1 {
		t.Errorf("UnsupportedProvider recorded %d times:\n%s", n, f.rec)
	}

	// Steady state: no write, no new event.
	f.counter.Reset()
	f.mustReconcile(m)
	if w := f.counter.Writes(); w != 0 {
		t.Errorf("writes on a Machine of another provider: %v", f.counter.WriteRequests())
	}
	if n := f.rec.count(EventUnsupportedProvider); n != 1 {
		t.Errorf("UnsupportedProvider recorded %d times:\n%s", n, f.rec)
	}

	// Deleting it does not wait for us.
	f.deleteMachine(m)
	if f.get(m) != nil {
		t.Error("a Machine of another provider waits for a finalizer on deletion")
	}
	f.mustReconcile(m)

	// Held by another controller's finalizer of the same name: hands off.
	held := f.machine("aws-held", awsProviderSpec, func(m *machinev1beta1.Machine) {
		m.Finalizers = []string{machinev1beta1.MachineFinalizer}
	})
	t.Cleanup(func() { f.patchMachine(held, func(m *machinev1beta1.Machine) { m.Finalizers = nil }) })
	f.deleteMachine(held)
	f.mustReconcile(held)
	got = f.mustGet(held)
	if !hasFinalizer(got) || got.Status.Phase != nil {
		t.Errorf("a deleting Machine of another provider was touched: finalizers %v, phase %v", got.Finalizers, got.Status.Phase)
	}
	wantCondition(t, got, ProviderSupportedCondition, corev1.ConditionFalse, ReasonUnsupportedProvider)
	wantCalls(t, f.act, map[string]int{})
}

// When the providerSpec is changed to one the provider serves, the Machine is
// provisioned and the condition goes away.
func TestForeignProviderSpecBecomesServed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := f.machine("switch", awsProviderSpec)
	f.mustReconcile(m)
	wantCondition(t, f.mustGet(m), ProviderSupportedCondition, corev1.ConditionFalse, ReasonUnsupportedProvider)

	f.patchMachine(m, func(m *machinev1beta1.Machine) { m.Spec.ProviderSpec = providerSpec() })
	f.mustReconcile(m)
	got := f.mustGet(m)
	if conditions.Get(got.Status.Conditions, ProviderSupportedCondition) != nil {
		t.Errorf("ProviderSupported kept: %+v", got.Status.Conditions)
	}
	if !hasFinalizer(got) || phaseOf(got) != machinev1beta1.PhaseProvisioning {
		t.Errorf("not provisioned: finalizers %v, phase %q", got.Finalizers, phaseOf(got))
	}
	if f.act.Calls(opCreate) != 1 {
		t.Errorf("provider calls %v", f.act.AllCalls())
	}
}
