package machineset

import (
	"encoding/json"
	"fmt"
	"strconv"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kubemarkv1alpha1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/kubemark/v1alpha1"
)

const mebibyte = 1 << 20

// vsphereProviderSpecKind is the kind of OpenShift's vSphere providerSpec (group machine.openshift.io, which
// OpenShift's other providers share: the kind tells them apart).
const vsphereProviderSpecKind = "VSphereMachineProviderSpec"

// Providers whose MachineSets get scale-from-zero annotations (ScaleFromZeroAnnotations).
const (
	ProviderKubemark = "kubemark"
	ProviderVSphere  = "vsphere"
)

// ScaleFromZeroAnnotations returns the scale-from-zero annotations of spec when its providerSpec is one this
// controller annotates for (provider not ""): kubemark's, or a vSphere one as OpenShift's vSphere MachineSet
// controller annotates it; err says why that providerSpec cannot be read.
func ScaleFromZeroAnnotations(spec *machinev1beta1.MachineSpec) (annotations map[string]string, provider string, err error) {
	if spec.ProviderSpec.Value == nil || len(spec.ProviderSpec.Value.Raw) == 0 {
		return nil, "", nil
	}
	raw := spec.ProviderSpec.Value.Raw
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if json.Unmarshal(raw, &tm) != nil || tm.APIVersion == "" {
		return nil, "", nil
	}
	gv, perr := schema.ParseGroupVersion(tm.APIVersion)
	switch {
	case perr != nil:
		return nil, "", nil
	case gv.Group == kubemarkv1alpha1.GroupName:
		a, err := kubemarkAnnotations(raw)
		return a, ProviderKubemark, err
	case gv.Group == machinev1beta1.GroupName && tm.Kind == vsphereProviderSpecKind:
		a, err := vsphereAnnotations(raw)
		return a, ProviderVSphere, err
	}
	return nil, "", nil
}

func kubemarkAnnotations(raw []byte) (map[string]string, error) {
	ps, errs := kubemarkv1alpha1.DecodeProviderSpec(raw, field.NewPath("spec", "template", "spec", "providerSpec", "value"))
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	cpu, mem, pods := ps.CPU, ps.Memory, ps.Pods // defaulted by DecodeProviderSpec
	return map[string]string{
		CPUAnnotation:             strconv.FormatInt(cpu.Value(), 10),
		MemoryAnnotation:          strconv.FormatInt(mem.Value()/mebibyte, 10),
		MaxPodsAnnotation:         strconv.FormatInt(pods.Value(), 10),
		CapacityCPUAnnotation:     cpu.String(),
		CapacityMemoryAnnotation:  mem.String(),
		CapacityMaxPodsAnnotation: strconv.FormatInt(pods.Value(), 10),
	}, nil
}

// vsphereAnnotations are OpenShift's two, numCPUs and memoryMiB as they are (0 when unset, as there), decoded
// as leniently as OpenShift does (unknown fields ignored); the error is OpenShift's message.
func vsphereAnnotations(raw []byte) (map[string]string, error) {
	var ps machinev1beta1.VSphereMachineProviderSpec
	if err := json.Unmarshal(raw, &ps); err != nil {
		return nil, fmt.Errorf("failed to get providerConfig: %w", err)
	}
	return map[string]string{
		CPUAnnotation:    strconv.FormatInt(int64(ps.NumCPUs), 10),
		MemoryAnnotation: strconv.FormatInt(ps.MemoryMiB, 10),
	}, nil
}

// missingAnnotations returns the entries of want that current lacks or differs on (nil: none).
func missingAnnotations(current, want map[string]string) map[string]string {
	var out map[string]string
	for k, v := range want {
		if cv, ok := current[k]; !ok || cv != v {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}
