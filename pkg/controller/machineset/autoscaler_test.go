package machineset

import (
	"maps"
	"strings"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
)

func specWith(raw string) *machinev1beta1.MachineSpec {
	s := &machinev1beta1.MachineSpec{}
	if raw != "" {
		s.ProviderSpec.Value = &runtime.RawExtension{Raw: []byte(raw)}
	}
	return s
}

const (
	kubemarkHead = `"apiVersion":"kubemark.machine-api-operator.io/v1alpha1","kind":"KubemarkMachineProviderSpec"`
	vsphereHead  = `"apiVersion":"machine.openshift.io/v1beta1","kind":"VSphereMachineProviderSpec"`
)

func TestScaleFromZeroAnnotations(t *testing.T) {
	tests := []struct {
		name         string
		raw          string
		want         map[string]string
		wantProvider string
		wantErr      string
	}{
		{"no providerSpec", "", nil, "", ""},
		{"other provider", `{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig","instanceType":"m5.large"}`, nil, "", ""},
		{"not JSON", `not json`, nil, "", ""},
		{"defaults", `{` + kubemarkHead + `}`, map[string]string{
			CPUAnnotation: "2", MemoryAnnotation: "4096", MaxPodsAnnotation: "110",
			CapacityCPUAnnotation: "2", CapacityMemoryAnnotation: "4Gi", CapacityMaxPodsAnnotation: "110",
		}, ProviderKubemark, ""},
		{"explicit", `{` + kubemarkHead + `,"cpu":"8","memory":"32Gi","pods":"250"}`, map[string]string{
			CPUAnnotation: "8", MemoryAnnotation: "32768", MaxPodsAnnotation: "250",
			CapacityCPUAnnotation: "8", CapacityMemoryAnnotation: "32Gi", CapacityMaxPodsAnnotation: "250",
		}, ProviderKubemark, ""},
		{"fractional cpu rounds up, memory in MiB rounds down", `{` + kubemarkHead + `,"cpu":"1500m","memory":"1500M"}`, map[string]string{
			CPUAnnotation: "2", MemoryAnnotation: "1430", MaxPodsAnnotation: "110",
			CapacityCPUAnnotation: "1500m", CapacityMemoryAnnotation: "1500M", CapacityMaxPodsAnnotation: "110",
		}, ProviderKubemark, ""},
		{"other version of the kubemark group is still kubemark", `{"apiVersion":"kubemark.machine-api-operator.io/v1","kind":"KubemarkMachineProviderSpec"}`,
			nil, ProviderKubemark, "apiVersion"},
		{"invalid kubemark spec", `{` + kubemarkHead + `,"cpu":"-1"}`, nil, ProviderKubemark, "providerSpec.value.cpu"},
		{"unknown kubemark field", `{` + kubemarkHead + `,"cpus":"4"}`, nil, ProviderKubemark, "providerSpec.value.cpus"},
		// vSphere: OpenShift's vSphere MachineSet controller's two annotations, numCPUs and memoryMiB as they are.
		// Breaks if: the vSphere case is dropped, memoryMiB is converted, or the capacity/maxPods keys are added.
		{"vsphere", `{` + vsphereHead + `,"numCPUs":4,"numCoresPerSocket":2,"memoryMiB":16384,"diskGiB":120}`, map[string]string{
			CPUAnnotation: "4", MemoryAnnotation: "16384",
		}, ProviderVSphere, ""},
		// OpenShift writes "0" for an unset value (the webhook defaults both before).
		{"vsphere without sizes", `{` + vsphereHead + `}`, map[string]string{CPUAnnotation: "0", MemoryAnnotation: "0"}, ProviderVSphere, ""},
		// Decoded as leniently as OpenShift: an unknown field is no error.
		{"vsphere unknown field", `{` + vsphereHead + `,"numCPUs":2,"memoryMiB":8192,"cpus":9}`, map[string]string{
			CPUAnnotation: "2", MemoryAnnotation: "8192",
		}, ProviderVSphere, ""},
		// OpenShift's message (an event ReconcileError there and here).
		{"vsphere wrong type", `{` + vsphereHead + `,"numCPUs":"four"}`, nil, ProviderVSphere, "failed to get providerConfig: json: cannot unmarshal string"},
		// Breaks if: the kind is not checked (the group is every OpenShift provider's).
		{"other kind of the vSphere group", `{"apiVersion":"machine.openshift.io/v1beta1","kind":"GCPMachineProviderSpec","numCPUs":4}`, nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, provider, err := ScaleFromZeroAnnotations(specWith(tt.raw))
			if provider != tt.wantProvider {
				t.Errorf("provider = %q, want %q", provider, tt.wantProvider)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("err = %v, want it to mention %q", err, tt.wantErr)
				}
				if got != nil {
					t.Errorf("annotations with an error: %v", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("annotations = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMissingAnnotations(t *testing.T) {
	want := map[string]string{"a": "1", "b": "2"}
	if d := missingAnnotations(map[string]string{"a": "1", "b": "2", "other": "x"}, want); d != nil {
		t.Errorf("nothing missing, got %v", d)
	}
	if d := missingAnnotations(map[string]string{"a": "0"}, want); !maps.Equal(d, want) {
		t.Errorf("got %v, want %v", d, want)
	}
	if d := missingAnnotations(nil, want); !maps.Equal(d, want) {
		t.Errorf("got %v, want %v", d, want)
	}
}
