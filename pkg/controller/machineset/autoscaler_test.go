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

const kubemarkHead = `"apiVersion":"kubemark.machine-api-operator.io/v1alpha1","kind":"KubemarkMachineProviderSpec"`

func TestScaleFromZeroAnnotations(t *testing.T) {
	tests := []struct {
		name         string
		raw          string
		want         map[string]string
		wantKubemark bool
		wantErr      string
	}{
		{"no providerSpec", "", nil, false, ""},
		{"other provider", `{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig","instanceType":"m5.large"}`, nil, false, ""},
		{"not JSON", `not json`, nil, false, ""},
		{"defaults", `{` + kubemarkHead + `}`, map[string]string{
			CPUAnnotation: "2", MemoryAnnotation: "4096", MaxPodsAnnotation: "110",
			CapacityCPUAnnotation: "2", CapacityMemoryAnnotation: "4Gi", CapacityMaxPodsAnnotation: "110",
		}, true, ""},
		{"explicit", `{` + kubemarkHead + `,"cpu":"8","memory":"32Gi","pods":"250"}`, map[string]string{
			CPUAnnotation: "8", MemoryAnnotation: "32768", MaxPodsAnnotation: "250",
			CapacityCPUAnnotation: "8", CapacityMemoryAnnotation: "32Gi", CapacityMaxPodsAnnotation: "250",
		}, true, ""},
		{"fractional cpu rounds up, memory in MiB rounds down", `{` + kubemarkHead + `,"cpu":"1500m","memory":"1500M"}`, map[string]string{
			CPUAnnotation: "2", MemoryAnnotation: "1430", MaxPodsAnnotation: "110",
			CapacityCPUAnnotation: "1500m", CapacityMemoryAnnotation: "1500M", CapacityMaxPodsAnnotation: "110",
		}, true, ""},
		{"other version of the kubemark group is still kubemark", `{"apiVersion":"kubemark.machine-api-operator.io/v1","kind":"KubemarkMachineProviderSpec"}`,
			nil, true, "apiVersion"},
		{"invalid kubemark spec", `{` + kubemarkHead + `,"cpu":"-1"}`, nil, true, "providerSpec.value.cpu"},
		{"unknown kubemark field", `{` + kubemarkHead + `,"cpus":"4"}`, nil, true, "providerSpec.value.cpus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, kubemark, err := ScaleFromZeroAnnotations(specWith(tt.raw))
			if kubemark != tt.wantKubemark {
				t.Errorf("kubemark = %v, want %v", kubemark, tt.wantKubemark)
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
