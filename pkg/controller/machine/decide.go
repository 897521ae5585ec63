package machine

// Pure decisions, table-tested (decide_test.go); the drain's are in drain_decide.go.

import (
	"cmp"
	"fmt"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
)

// IsProvisioned reports whether the provider has ever reported an instance for the Machine: it has a
// providerID or addresses.
func IsProvisioned(m *machinev1beta1.Machine) bool {
	return (m.Spec.ProviderID != nil && *m.Spec.ProviderID != "") || len(m.Status.Addresses) > 0
}

// provisioningStep is what to do with a Machine that is not being deleted, once Exists answered.
type provisioningStep struct {
	Phase           string
	Create          bool // call Actuator.Create
	Update          bool // call Actuator.Update
	InstanceMissing bool // a provisioned instance disappeared: the Machine fails
}

// decideProvisioning maps (phase, Exists, provisioned, nodeRef) to the next step; a phase never goes
// back from Running. Failed is terminal and handled before this is called.
func decideProvisioning(phase string, exists, provisioned, hasNodeRef bool) provisioningStep {
	switch {
	case exists && provisioned && (hasNodeRef || phase == machinev1beta1.PhaseRunning):
		return provisioningStep{Phase: machinev1beta1.PhaseRunning, Update: true}
	case exists && provisioned:
		return provisioningStep{Phase: machinev1beta1.PhaseProvisioned, Update: true}
	case exists:
		return provisioningStep{Phase: cmp.Or(phase, machinev1beta1.PhaseProvisioning), Update: true}
	case provisioned:
		return provisioningStep{Phase: machinev1beta1.PhaseFailed, InstanceMissing: true}
	default:
		return provisioningStep{Phase: machinev1beta1.PhaseProvisioning, Create: true}
	}
}

// phaseAfterCreate is the phase once Create succeeded, and whether the instance counts as existing:
// one that reported providerID or addresses goes straight to Provisioned (or Running) in the one status write.
func phaseAfterCreate(provisioned, hasNodeRef bool) (phase string, exists bool) {
	if !provisioned {
		return machinev1beta1.PhaseProvisioning, false
	}
	return decideProvisioning(machinev1beta1.PhaseProvisioning, true, true, hasNodeRef).Phase, true
}

// deletionStage is the next stage of the deletion pipeline.
type deletionStage int

const (
	stageDrain            deletionStage = iota // Drained is not True yet
	stageWaitPreTerminate                      // drained; preTerminate hooks hold the instance
	stageDeleteInstance                        // Delete, wait for Exists=false, delete the Node, remove the finalizer
)

func (s deletionStage) String() string {
	return [...]string{"Drain", "WaitPreTerminate", "DeleteInstance"}[s]
}

// decideDeletionStage returns where a deleting Machine is in the pipeline.
func decideDeletionStage(m *machinev1beta1.Machine) deletionStage {
	if !conditions.IsTrue(m.Status.Conditions, DrainedCondition) {
		return stageDrain
	}
	if len(m.Spec.LifecycleHooks.PreTerminate) > 0 {
		return stageWaitPreTerminate
	}
	return stageDeleteInstance
}

// hookNames lists hook names as "a (owner x), b (owner y)".
func hookNames(hooks []machinev1beta1.LifecycleHook) string {
	parts := make([]string, len(hooks))
	for i, h := range hooks {
		parts[i] = fmt.Sprintf("%s (owner %s)", h.Name, h.Owner)
	}
	return strings.Join(parts, ", ")
}

// hookConditions computes Drainable and Terminable from the lifecycle hooks.
func hookConditions(hooks machinev1beta1.LifecycleHooks) (drainable, terminable machinev1beta1.Condition) {
	drainable = conditions.New(DrainableCondition, corev1.ConditionTrue, ReasonNoHooks, "", "")
	if len(hooks.PreDrain) > 0 {
		drainable = conditions.New(DrainableCondition, corev1.ConditionFalse, ReasonHookPresent, machinev1beta1.ConditionSeverityWarning,
			"drain is blocked by pre-drain hook(s): "+hookNames(hooks.PreDrain))
	}
	terminable = conditions.New(TerminableCondition, corev1.ConditionTrue, ReasonNoHooks, "", "")
	if len(hooks.PreTerminate) > 0 {
		terminable = conditions.New(TerminableCondition, corev1.ConditionFalse, ReasonHookPresent, machinev1beta1.ConditionSeverityWarning,
			"termination is blocked by pre-terminate hook(s): "+hookNames(hooks.PreTerminate))
	}
	return drainable, terminable
}
