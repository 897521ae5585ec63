package webhooks

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	kubemarkAPIVersion = "kubemark.machine-api-operator.io/v1alpha1"
	kubemarkKind       = "KubemarkMachineProviderSpec"
	testInfraName      = "test-x7k2p"
)

var (
	kubemarkCluster = ClusterInfo{Provider: ProviderKubemark, InfrastructureName: testInfraName}
	unknownCluster  = ClusterInfo{}
)

// value returns a providerSpec with the given JSON value ("" = no value).
func value(raw string) machinev1beta1.ProviderSpec {
	if raw == "" {
		return machinev1beta1.ProviderSpec{}
	}
	return machinev1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: []byte(raw)}}
}

// kubemarkSpec is a complete, valid kubemark providerSpec.value plus extra keys.
func kubemarkSpec(extra string) string {
	s := `{"apiVersion":"` + kubemarkAPIVersion + `","kind":"` + kubemarkKind + `"`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

func machine(name string, ps machinev1beta1.ProviderSpec, mutate ...func(*machinev1beta1.Machine)) *machinev1beta1.Machine {
	m := &machinev1beta1.Machine{
		TypeMeta:   metav1.TypeMeta{APIVersion: "machine.openshift.io/v1beta1", Kind: "Machine"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "openshift-machine-api"},
		Spec:       machinev1beta1.MachineSpec{ProviderSpec: ps},
	}
	for _, f := range mutate {
		f(m)
	}
	return m
}

func machineSet(name string, selector map[string]string, templateLabels map[string]string, ps machinev1beta1.ProviderSpec, mutate ...func(*machinev1beta1.MachineSet)) *machinev1beta1.MachineSet {
	ms := &machinev1beta1.MachineSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "machine.openshift.io/v1beta1", Kind: "MachineSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "openshift-machine-api"},
		Spec: machinev1beta1.MachineSetSpec{
			Selector: metav1.LabelSelector{MatchLabels: selector},
			Template: machinev1beta1.MachineTemplateSpec{
				ObjectMeta: machinev1beta1.ObjectMeta{Labels: templateLabels},
				Spec:       machinev1beta1.MachineSpec{ProviderSpec: ps},
			},
		},
	}
	for _, f := range mutate {
		f(ms)
	}
	return ms
}

func hooks(names ...string) []machinev1beta1.LifecycleHook {
	var out []machinev1beta1.LifecycleHook
	for _, n := range names {
		out = append(out, machinev1beta1.LifecycleHook{Name: n, Owner: "tests"})
	}
	return out
}

// jsonEqual compares two JSON documents semantically.
func jsonEqual(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got invalid JSON %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want invalid JSON %s: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("JSON differs:\n got: %s\nwant: %s", got, want)
	}
}

// checkErrors asserts that errs has exactly the wanted messages (each a
// substring of one error, in order); no wants means no errors.
func checkErrors(t *testing.T, errs field.ErrorList, want ...string) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("got %d errors %v, want %d %q", len(errs), errs, len(want), want)
	}
	for i, w := range want {
		if !strings.Contains(errs[i].Error(), w) {
			t.Errorf("error %d = %q, want it to contain %q", i, errs[i].Error(), w)
		}
	}
}

var admissionReviewType = metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}

func rawExtension(b []byte) runtime.RawExtension { return runtime.RawExtension{Raw: b} }
