package safety

import (
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machine"
)

// orphanInstances returns the instances that no Machine owns or may still
// be creating, and that are older than grace (docs/safety.md, "Orphan
// instances"). An instance is kept when:
//   - a Machine's spec.providerID is its providerID (whatever the Machine's
//     phase, deletion included: the machine controller deletes it);
//   - a Machine of its name has no providerID yet, or is in phase "" or
//     Provisioning: the instance may be that Machine's, just created;
//   - it has no providerID or no creation time (nothing to judge by), or
//     was created less than grace ago (its Machine may not be in the
//     cache yet).
func orphanInstances(instances []machine.Instance, machines []*machinev1beta1.Machine, now time.Time, grace time.Duration) []machine.Instance {
	owned := make(map[string]bool, len(machines))
	creating := map[string]bool{}
	for _, m := range machines {
		if m.Spec.ProviderID != nil && *m.Spec.ProviderID != "" {
			owned[*m.Spec.ProviderID] = true
		}
		if phase := phaseOf(m); m.Spec.ProviderID == nil || *m.Spec.ProviderID == "" || phase == "" || phase == machinev1beta1.PhaseProvisioning {
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

func phaseOf(m *machinev1beta1.Machine) string {
	if m.Status.Phase == nil {
		return ""
	}
	return *m.Status.Phase
}
