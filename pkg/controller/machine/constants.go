package machine

import machinev1beta1 "github.com/openshift/api/machine/v1beta1"

// Annotations and labels the machine controller reads or writes.
const (
	// ExcludeNodeDrainingAnnotation on a Machine skips the drain (its
	// presence alone, whatever the value).
	ExcludeNodeDrainingAnnotation = "machine.openshift.io/exclude-node-draining"

	// NodeDrainTimeoutAnnotation on a Machine overrides Options.NodeDrainTimeout
	// for that Machine. The value is a Go duration ("90s", "20m", "1h30m");
	// "0" (or "0s") means wait forever. After the timeout the remaining pods are
	// deleted without eviction (PodDisruptionBudgets are no longer honoured)
	// and the deletion proceeds.
	NodeDrainTimeoutAnnotation = "machine.openshift.io/node-drain-timeout"

	// DrainingAnnotation is put on a Node the machine controller cordons for
	// draining; its value is "<namespace>/<machine>". Only nodes carrying it
	// count as "being drained by us" for the one-control-plane-node-at-a-time
	// rule, so nodes cordoned for unrelated reasons do not block drains; and
	// only while the named Machine exists and is being deleted, so a stale
	// annotation does not block them either.
	DrainingAnnotation = "machine.openshift.io/draining-for-machine"

	// InstanceStateAnnotation shows the provider's instance state; the
	// controller sets it to "Unknown" when a Machine goes Failed.
	InstanceStateAnnotation = "machine.openshift.io/instance-state"

	// Node role labels that identify a control-plane node.
	ControlPlaneNodeRoleLabel = "node-role.kubernetes.io/control-plane"
	MasterNodeRoleLabel       = "node-role.kubernetes.io/master"
)

// NodeRefNameField is the cache field index on Machines holding
// status.nodeRef.name; the controller maps Node events to Machines with it.
const NodeRefNameField = "status.nodeRef.name"

// Condition reasons set by the machine controller.
const (
	// InstanceExists
	ReasonInstanceExists        = "InstanceExists"        // True: the provider reports the instance
	ReasonErrorCheckingProvider = "ErrorCheckingProvider" // Unknown: Exists returned an error
	ReasonInstanceNotCreated    = "InstanceNotCreated"    // False: not created yet (or Create failed; see message)
	ReasonInstanceMissing       = "InstanceMissing"       // False: a provisioned instance disappeared; the Machine is Failed

	// ProviderUpdated (only set once Update rejected the configuration)
	ReasonInvalidConfiguration = "InvalidConfiguration" // False: Update returned InvalidConfiguration; not retried until the Machine changes
	ReasonProviderUpdated      = "Updated"              // True: a later Update succeeded

	// Drainable / Terminable
	ReasonHookPresent = "HookPresent" // False: preDrain / preTerminate hooks exist
	ReasonNoHooks     = "NoHooks"     // True: no hooks of that kind

	// Drained
	ReasonDrainBlocked    = "DrainBlocked"    // False: not started; a preDrain hook or another control-plane drain blocks it
	ReasonDrainInProgress = "DrainInProgress" // False: started (lastTransitionTime = drain start); message names blocking pods/PDBs
	ReasonDrained         = "Drained"         // True: every pod evicted
	ReasonDrainTimedOut   = "DrainTimedOut"   // True: the drain timeout expired, remaining pods were deleted without eviction
	ReasonDrainSkipped    = "DrainSkipped"    // True: exclude annotation, no nodeRef, or the Node is gone
)

// Event reasons (events are emitted on transitions only).
const (
	EventCreated        = "Created"
	EventFailedCreate   = "FailedCreate"
	EventFailedUpdate   = "FailedUpdate"
	EventFailed         = "Failed"
	EventInstanceGone   = "InstanceMissing"
	EventDeleted        = "Deleted"
	EventFailedDelete   = "FailedDelete"
	EventDrainBlocked   = "DrainBlocked"
	EventDrainProceeds  = "DrainProceeds"
	EventDrainSucceeded = "DrainSucceeded"
	EventDrainTimedOut  = "DrainTimedOut"
	EventDrainSkipped   = "DrainSkipped"
	EventDrainRequeued  = "DrainRequeued"
)

// Condition types, re-exported for readability.
const (
	InstanceExistsCondition = machinev1beta1.InstanceExistsCondition
	DrainedCondition        = machinev1beta1.MachineDrained
	DrainableCondition      = machinev1beta1.MachineDrainable
	TerminableCondition     = machinev1beta1.MachineTerminable

	// ProviderUpdatedCondition is the machine controller's own condition:
	// False/InvalidConfiguration when Actuator.Update rejected the
	// providerSpec of an existing instance. It is absent until that happens.
	ProviderUpdatedCondition machinev1beta1.ConditionType = "ProviderUpdated"
)
