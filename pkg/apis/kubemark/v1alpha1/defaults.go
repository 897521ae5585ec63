package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Default fills every field left out with its default, so that after Default
// no pointer field is nil:
//
//	cpu 2, memory 4Gi, pods 110, bootDelay 0s,
//	health {unhealthyAfter 0s (never), mode Once},
//	and in Periodic mode unhealthyFor = unhealthyAfter.
//
// It does not touch apiVersion and kind.
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

// Default fills the health policy's defaults: unhealthyAfter 0s, mode Once,
// and in Periodic mode unhealthyFor = unhealthyAfter.
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
