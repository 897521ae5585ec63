package machine

// Pure decision logic of the machine controller: no API calls here, so each
// rule is covered by table tests (decide_test.go). The drain's decisions are
// in drain_decide.go.

import (
	"fmt"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
)

// IsProvisioned reports whether the provider has ever reported an instance
// for the Machine: it has a providerID or addresses.
func IsProvisioned(m *machinev1beta1.Machine) bool {
	return (m.Spec.ProviderID != nil && *m.Spec.ProviderID != "") || len(m.Status.Addresses) > 0
}

// provisioningStep is what to do with a Machine that is not being deleted,
// once the provider has answered Exists.
type provisioningStep struct {
	// Phase is the phase the Machine should have.
	Phase string
	// Create: call Actuator.Create (the instance does not exist yet).
	Create bool
	// Update: call Actuator.Update (the instance exists).
	Update bool
	// InstanceMissing: a provisioned instance disappeared; the Machine fails.
	InstanceMissing bool
}

// decideProvisioning maps (current phase, Exists answer, provisioned, nodeRef)
// to the next step. Failed is terminal and handled before this is called.
//
//	exists  provisioned  nodeRef → phase
//	yes     yes          yes       Running
//	yes     yes          no        Provisioned; Running stays Running (a phase never goes back)
//	yes     no           -         current phase (Provisioning when empty); Update fills providerID/addresses
//	no      yes          -         Failed (InstanceMissing)
//	no      no           -         Provisioning, then Create
func decideProvisioning(phase string, exists, provisioned, hasNodeRef bool) provisioningStep {
	switch {
	case exists && provisioned && hasNodeRef:
		return provisioningStep{Phase: machinev1beta1.PhaseRunning, Update: true}
	case exists && provisioned && phase == machinev1beta1.PhaseRunning:
		// A Running Machine without a nodeRef (cleared by hand or by
		// another controller) is still running: its instance exists.
		return provisioningStep{Phase: machinev1beta1.PhaseRunning, Update: true}
	case exists && provisioned:
		return provisioningStep{Phase: machinev1beta1.PhaseProvisioned, Update: true}
	case exists:
		if phase == "" {
			phase = machinev1beta1.PhaseProvisioning
		}
		return provisioningStep{Phase: phase, Update: true}
	case provisioned:
		return provisioningStep{Phase: machinev1beta1.PhaseFailed, InstanceMissing: true}
	default:
		return provisioningStep{Phase: machinev1beta1.PhaseProvisioning, Create: true}
	}
}

// phaseAfterUpdate is the phase once Update ran: Update may have set the
// providerID/addresses that make the instance provisioned.
func phaseAfterUpdate(current string, provisioned, hasNodeRef bool) string {
	return decideProvisioning(current, true, provisioned, hasNodeRef).Phase
}

// phaseAfterCreate is the phase once Create succeeded, and whether the
// instance counts as existing: a Create that reported providerID or
// addresses made an instance that exists, so the Machine goes straight to
// Provisioned (Running with a nodeRef) in the reconcile's one status write;
// otherwise it stays Provisioning until Update sees the instance.
func phaseAfterCreate(provisioned, hasNodeRef bool) (phase string, exists bool) {
	if !provisioned {
		return machinev1beta1.PhaseProvisioning, false
	}
	return decideProvisioning(machinev1beta1.PhaseProvisioning, true, true, hasNodeRef).Phase, true
}

// deletionStage is the next stage of the deletion pipeline.
type deletionStage int

const (
	// stageDrain: the Drained condition is not True yet.
	stageDrain deletionStage = iota
	// stageWaitPreTerminate: drained, but preTerminate hooks hold the instance.
	stageWaitPreTerminate
	// stageDeleteInstance: call Delete, wait for Exists=false, delete the
	// Node, remove the finalizer.
	stageDeleteInstance
)

func (s deletionStage) String() string {
	switch s {
	case stageDrain:
		return "Drain"
	case stageWaitPreTerminate:
		return "WaitPreTerminate"
	default:
		return "DeleteInstance"
	}
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
