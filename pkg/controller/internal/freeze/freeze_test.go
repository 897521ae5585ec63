package freeze

import (
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
)

// TestMachineSetFrozen: the label or a True condition. Breaks if: either mark is not read (&& for ||).
func TestMachineSetFrozen(t *testing.T) {
	ms := &machinev1beta1.MachineSet{}
	if MachineSetFrozen(ms) {
		t.Error("an unmarked set is frozen")
	}
	ms.Labels = map[string]string{mdv1beta1.FreezeLabel: "True"}
	if !MachineSetFrozen(ms) {
		t.Error("the label does not freeze")
	}
	ms.Labels = nil
	ms.Status.Conditions = []machinev1beta1.Condition{{Type: mdv1beta1.FrozenCondition, Status: "False"}}
	if MachineSetFrozen(ms) {
		t.Error("Frozen=False freezes")
	}
	ms.Status.Conditions[0].Status = "True"
	if !MachineSetFrozen(ms) {
		t.Error("Frozen=True does not freeze")
	}
}
