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

// ScaleFromZeroAnnotations returns the cluster autoscaler's scale-from-zero
// annotations for Machines built from spec, when spec's providerSpec is a
// kubemark one (apiVersion group kubemark.machine-api-operator.io), with the
// provider's defaults applied:
//
//	machine.openshift.io/vCPU                          CPU count, rounded up ("2")
//	machine.openshift.io/memoryMb                      memory in MiB, rounded down ("4096")
//	machine.openshift.io/maxPods                       pod capacity ("110")
//	capacity.cluster-autoscaler.kubernetes.io/cpu      CPU quantity ("2", "500m")
//	capacity.cluster-autoscaler.kubernetes.io/memory   memory quantity ("4Gi")
//	capacity.cluster-autoscaler.kubernetes.io/maxPods  pod capacity ("110")
//
// kubemark is false for any other providerSpec (nothing to manage). For a
// kubemark providerSpec that does not decode or validate, err says why and
// the annotations are nil.
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
	ps.Default()
	cpu, mem, pods := ps.CPU, ps.Memory, ps.Pods
	if cpu == nil || mem == nil || pods == nil {
		return nil, true, fmt.Errorf("kubemark providerSpec lacks cpu, memory or pods after defaulting")
	}
	return map[string]string{
		CPUAnnotation:             strconv.FormatInt(cpu.Value(), 10),
		MemoryAnnotation:          strconv.FormatInt(mem.Value()/mebibyte, 10),
		MaxPodsAnnotation:         strconv.FormatInt(pods.Value(), 10),
		CapacityCPUAnnotation:     cpu.String(),
		CapacityMemoryAnnotation:  mem.String(),
		CapacityMaxPodsAnnotation: strconv.FormatInt(pods.Value(), 10),
	}, true, nil
}

// missingAnnotations returns the entries of want that current lacks or
// holds with another value (nil when none).
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
