package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Default fills every field left out but apiVersion and kind (see types.go),
// so that no pointer field is nil.
func (s *KubemarkMachineProviderSpec) Default() {
	if s.CPU == nil {
		s.CPU = new(resource.MustParse(DefaultCPU))
	}
	if s.Memory == nil {
		s.Memory = new(resource.MustParse(DefaultMemory))
	}
	if s.Pods == nil {
		s.Pods = new(resource.MustParse(DefaultPods))
	}
	if s.BootDelay == nil {
		s.BootDelay = &metav1.Duration{}
	}
	if s.Health == nil {
		s.Health = &HealthPolicy{}
	}
	s.Health.Default()
}

// Default fills the health policy's defaults (see types.go).
func (h *HealthPolicy) Default() {
	if h.UnhealthyAfter == nil {
		h.UnhealthyAfter = &metav1.Duration{}
	}
	if h.Mode == "" {
		h.Mode = HealthModeOnce
	}
	if h.Mode == HealthModePeriodic && h.UnhealthyFor == nil {
		h.UnhealthyFor = h.UnhealthyAfter.DeepCopy()
	}
}
