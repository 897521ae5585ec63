package v1alpha1

import (
	"cmp"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Default fills every field left out but apiVersion and kind (see types.go),
// so that no pointer field is nil.
func (s *KubemarkMachineProviderSpec) Default() {
	s.CPU = cmp.Or(s.CPU, new(resource.MustParse(DefaultCPU)))
	s.Memory = cmp.Or(s.Memory, new(resource.MustParse(DefaultMemory)))
	s.Pods = cmp.Or(s.Pods, new(resource.MustParse(DefaultPods)))
	s.BootDelay = cmp.Or(s.BootDelay, &metav1.Duration{})
	s.Health = cmp.Or(s.Health, &HealthPolicy{})
	s.Health.Default()
}

// Default fills the health policy's defaults (see types.go).
func (h *HealthPolicy) Default() {
	h.UnhealthyAfter = cmp.Or(h.UnhealthyAfter, &metav1.Duration{})
	h.Mode = cmp.Or(h.Mode, HealthModeOnce)
	if h.Mode == HealthModePeriodic && h.UnhealthyFor == nil {
		h.UnhealthyFor = h.UnhealthyAfter.DeepCopy()
	}
}
