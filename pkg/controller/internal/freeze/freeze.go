// Package freeze reads the overshoot freeze that package safety puts on a MachineSet (docs/safety.md), for
// the machineset controller, which then creates no Machines.
package freeze

import (
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
)

// MachineSetFrozen reports whether ms is frozen: either of safety's two marks, the freeze label or
// Frozen=True, is enough, so a set whose second mark is not written yet creates nothing either.
func MachineSetFrozen(ms *machinev1beta1.MachineSet) bool {
	return ms.Labels[mdv1beta1.FreezeLabel] == mdv1beta1.FreezeLabelValue ||
		conditions.IsTrue(ms.Status.Conditions, mdv1beta1.FrozenCondition)
}
