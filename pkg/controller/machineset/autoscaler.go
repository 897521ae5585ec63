package machineset

import (
	"encoding/json"
	"strconv"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kubemarkv1alpha1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/kubemark/v1alpha1"
)

const mebibyte = 1 << 20

// ScaleFromZeroAnnotations returns the scale-from-zero annotations of spec when its
// providerSpec is a kubemark one (kubemark true); err says why that one is invalid.
func ScaleFromZeroAnnotations(spec *machinev1beta1.MachineSpec) (annotations map[string]string, kubemark bool, err error) {
	if spec.ProviderSpec.Value == nil || len(spec.ProviderSpec.Value.Raw) == 0 {
		return nil, false, nil
	}
	raw := spec.ProviderSpec.Value.Raw
	var tm struct {
		APIVersion string `json:"apiVersion"`
	}
	if json.Unmarshal(raw, &tm) != nil || tm.APIVersion == "" {
		return nil, false, nil
	}
	gv, perr := schema.ParseGroupVersion(tm.APIVersion)
	if perr != nil || gv.Group != kubemarkv1alpha1.GroupName {
		return nil, false, nil
	}
	ps, errs := kubemarkv1alpha1.DecodeProviderSpec(raw, field.NewPath("spec", "template", "spec", "providerSpec", "value"))
	if len(errs) > 0 {
		return nil, true, errs.ToAggregate()
	}
	cpu, mem, pods := ps.CPU, ps.Memory, ps.Pods // defaulted by DecodeProviderSpec
	return map[string]string{
		CPUAnnotation:             strconv.FormatInt(cpu.Value(), 10),
		MemoryAnnotation:          strconv.FormatInt(mem.Value()/mebibyte, 10),
		MaxPodsAnnotation:         strconv.FormatInt(pods.Value(), 10),
		CapacityCPUAnnotation:     cpu.String(),
		CapacityMemoryAnnotation:  mem.String(),
		CapacityMaxPodsAnnotation: strconv.FormatInt(pods.Value(), 10),
	}, true, nil
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
