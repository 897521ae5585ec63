package machine

import machinev1beta1 "github.com/openshift/api/machine/v1beta1"

// Annotations and labels the machine controller reads or writes (docs/contract.md).
const (
	ExcludeNodeDrainingAnnotation = "machine.openshift.io/exclude-node-draining" // on a Machine: no drain
	NodeDrainTimeoutAnnotation    = "machine.openshift.io/node-drain-timeout"    // overrides Options.NodeDrainTimeout
	DrainStartedAnnotation        = "machine.openshift.io/drain-started-at"      // see docs/openshift.md

	// DrainingAnnotation ("<namespace>/<machine>") marks a Node we cordoned for a drain: only such a Node,
	// while that Machine is being deleted, counts for the one-control-plane-drain-at-a-time rule.
	DrainingAnnotation = "machine.openshift.io/draining-for-machine"

	// Node role labels that identify a control-plane node.
	ControlPlaneNodeRoleLabel = "node-role.kubernetes.io/control-plane"
	MasterNodeRoleLabel       = "node-role.kubernetes.io/master"
)

// Condition reasons set by the machine controller.
const (
	// InstanceExists
	ReasonInstanceExists        = "InstanceExists"        // True: the provider reports the instance
	ReasonErrorCheckingProvider = "ErrorCheckingProvider" // Unknown: Exists returned an error
	ReasonInstanceNotCreated    = "InstanceNotCreated"    // False: not created yet (or Create failed; see message)
	ReasonInstanceMissing       = "InstanceMissing"       // False: a provisioned instance disappeared; the Machine is Failed

	// ProviderUpdated
	ReasonInvalidConfiguration = "InvalidConfiguration" // False: Update rejected the configuration; not retried
	ReasonProviderUpdated      = "Updated"              // True: a later Update succeeded

	// Drainable / Terminable
	ReasonHookPresent = "HookPresent" // False: preDrain / preTerminate hooks exist
	ReasonNoHooks     = "NoHooks"     // True: no hooks of that kind

	// Drained
	ReasonDrainBlocked                = "DrainBlocked"                // False: not started; preDrain hooks block it
	ReasonWaitingForControlPlaneDrain = "WaitingForControlPlaneDrain" // False: another control-plane node is draining
	ReasonDrainInProgress             = "DrainInProgress"             // False: evicting; the message has the last pass's results
	ReasonDrained                     = "Drained"                     // True: every pod evicted
	ReasonDrainTimedOut               = "DrainTimedOut"               // True: timed out, remaining pods deleted without eviction
	ReasonDrainSkipped                = "DrainSkipped"                // True: exclude annotation, no nodeRef, or the Node is gone

	// ProviderSupported
	ReasonUnsupportedProvider = "UnsupportedProvider" // False: no provider here serves the providerSpec's type
)

// Event reasons (events are emitted on transitions only).
const (
	EventCreated             = "Created"
	EventFailedCreate        = "FailedCreate"
	EventFailedUpdate        = "FailedUpdate"
	EventFailed              = "Failed"
	EventDeleted             = "Deleted"
	EventFailedDelete        = "FailedDelete"
	EventDrainBlocked        = "DrainBlocked"
	EventDrainProceeds       = "DrainProceeds"
	EventDrainSucceeded      = "DrainSucceeded"
	EventDrainTimedOut       = "DrainTimedOut"
	EventDrainSkipped        = "DrainSkipped"
	EventUnsupportedProvider = "UnsupportedProvider"
)

// Condition types, re-exported for readability.
const (
	InstanceExistsCondition = machinev1beta1.InstanceExistsCondition
	DrainedCondition        = machinev1beta1.MachineDrained
	DrainableCondition      = machinev1beta1.MachineDrainable
	TerminableCondition     = machinev1beta1.MachineTerminable

	// ProviderUpdatedCondition (ours) is absent until Update rejects the providerSpec of an instance.
	ProviderUpdatedCondition machinev1beta1.ConditionType = "ProviderUpdated"

	// ProviderSupportedCondition (ours) is False on a Machine of another provider, absent on the others.
	ProviderSupportedCondition machinev1beta1.ConditionType = "ProviderSupported"
)
