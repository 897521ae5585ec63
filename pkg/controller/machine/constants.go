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

	// DrainStartedAnnotation on a deleting Machine records when the machine
	// controller started draining its node (RFC 3339, UTC, second
	// precision). The drain timeout (NodeDrainTimeoutAnnotation,
	// Options.NodeDrainTimeout) is measured from it, so the start survives
	// restarts, waits for another control-plane drain and condition changes.
	// The controller writes it before the first eviction; a value that does
	// not parse, or that predates the Machine's deletionTimestamp (copied from
	// another Machine), is replaced by the current time (or the
	// deletionTimestamp when the controller's clock is behind it).
	DrainStartedAnnotation = "machine.openshift.io/drain-started-at"

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

	// Drained (the drain start is DrainStartedAnnotation, not a
	// lastTransitionTime)
	ReasonDrainBlocked                = "DrainBlocked"                // False: not started; preDrain hooks block it
	ReasonWaitingForControlPlaneDrain = "WaitingForControlPlaneDrain" // False: another control-plane node is being drained; only one at a time
	ReasonDrainInProgress             = "DrainInProgress"             // False: evicting; the message gives the last eviction pass's results (pods blocked by which PDB, pods terminating)
	ReasonDrained                     = "Drained"                     // True: every pod evicted
	ReasonDrainTimedOut               = "DrainTimedOut"               // True: the drain timeout expired, remaining pods were deleted without eviction
	ReasonDrainSkipped                = "DrainSkipped"                // True: exclude annotation, no nodeRef, or the Node is gone

	// ProviderSupported (only set on a Machine whose providerSpec no
	// provider of this binary serves)
	ReasonUnsupportedProvider = "UnsupportedProvider" // False: the providerSpec's API group is not served here; the Machine is left untouched
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
	// EventUnsupportedProvider: the Machine's providerSpec belongs to a
	// provider this binary does not have; it is left untouched.
	EventUnsupportedProvider = "UnsupportedProvider"
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

	// ProviderSupportedCondition is the machine controller's own condition:
	// False/UnsupportedProvider on a Machine whose providerSpec.value belongs
	// to an API group no provider of this binary serves; the message names
	// the providerSpec's apiVersion and kind. Such a Machine is otherwise left
	// untouched. The condition is absent on every other Machine.
	ProviderSupportedCondition machinev1beta1.ConditionType = "ProviderSupported"
)
