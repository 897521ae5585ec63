package safety

import (
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machine"
)

// orphanInstances returns the instances older than grace that no Machine owns or may
// still be creating (docs/safety.md, "Orphan instances").
func orphanInstances(instances []machine.Instance, machines []*machinev1beta1.Machine, now time.Time, grace time.Duration) []machine.Instance {
	owned := make(map[string]bool, len(machines))
	creating := map[string]bool{}
	for _, m := range machines {
		if id := ptr.Deref(m.Spec.ProviderID, ""); id != "" {
			owned[id] = true
		}
		phase := ptr.Deref(m.Status.Phase, "")
		if ptr.Deref(m.Spec.ProviderID, "") == "" || phase == "" || phase == machinev1beta1.PhaseProvisioning {
			creating[m.Name] = true
		}
	}
	var out []machine.Instance
	for _, inst := range instances {
		switch {
		case inst.ProviderID == "" || inst.CreatedAt.IsZero():
		case owned[inst.ProviderID], creating[inst.Name]:
		case now.Sub(inst.CreatedAt) < grace:
		default:
			out = append(out, inst)
		}
	}
	return out
}
