package safety

import (
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// orphanInstances returns the instances that are provably ours and provably no Machine's (docs/safety.md,
// "Orphan instances"): each carries an ownership mark, its Machines' namespace was listed (listed), no Machine
// there has the mark's name and UID, no Machine reports its providerID, and it is at least grace old.
func orphanInstances(instances []provider.Instance, machines []*machinev1beta1.Machine, listed map[string]bool, now time.Time, grace time.Duration) []provider.Instance {
	owned := make(map[string]bool, len(machines))
	owners := make(map[provider.Owner]bool, len(machines))
	for _, m := range machines {
		if id := ptr.Deref(m.Spec.ProviderID, ""); id != "" {
			owned[id] = true
		}
		owners[provider.OwnerOf(m)] = true
	}
	var out []provider.Instance
	for _, inst := range instances {
		switch {
		case inst.Owner.IsZero(): // the installer's, a user's, another tool's: never ours to judge
		case !listed[inst.Owner.Namespace]: // its Machines could not be read: nothing on doubt
		case inst.ProviderID == "" || inst.CreatedAt.IsZero():
		case owned[inst.ProviderID], owners[inst.Owner]:
		case now.Sub(inst.CreatedAt) < grace:
		default:
			out = append(out, inst)
		}
	}
	return out
}

// ownerNamespaces are the namespaces the instances' marks name.
func ownerNamespaces(instances []provider.Instance) []string {
	seen := map[string]bool{}
	var out []string
	for _, inst := range instances {
		if ns := inst.Owner.Namespace; ns != "" && !seen[ns] {
			seen[ns] = true
			out = append(out, ns)
		}
	}
	return out
}
