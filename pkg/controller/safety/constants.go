package safety

import "time"

// Flag defaults: machine-controller-manager's.
const (
	// DefaultSafetyUp is --safety-up: how many Machines beyond the expected
	// maximum a MachineSet may have before it is frozen.
	DefaultSafetyUp = 2
	// DefaultSafetyDown is --safety-down: how far below the freeze threshold
	// the count must fall before the freeze lifts.
	DefaultSafetyDown = 1
	// DefaultOvershootingPeriod is --machine-safety-overshooting-period.
	DefaultOvershootingPeriod = time.Minute
	// DefaultAPIServerCheckPeriod is
	// --machine-safety-apiserver-statuscheck-period.
	DefaultAPIServerCheckPeriod = time.Minute
	// DefaultAPIServerCheckTimeout is
	// --machine-safety-apiserver-statuscheck-timeout.
	DefaultAPIServerCheckTimeout = 30 * time.Second
	// DefaultOrphanPeriod is --machine-safety-orphan-vms-period.
	DefaultOrphanPeriod = 15 * time.Minute
)

// FreezeLabel is the label machine-controller-manager puts on a frozen
// MachineSet or MachineDeployment, with the value FreezeLabelValue.
const (
	FreezeLabel      = "freeze"
	FreezeLabelValue = "True"
)

// UnfreezeAnnotation on a MachineSet or MachineDeployment forces its freeze
// to lift (machine-controller-manager's name); the controller removes it.
const UnfreezeAnnotation = "safety.machine.sapcloud.io/unfreeze"

// Reasons of the Frozen condition and of the unfreeze log line and event
// (machine-controller-manager's).
const (
	ReasonOverShootingReplicaCount   = "OverShootingReplicaCount"
	ReasonUnderShootingReplicaCount  = "UnderShootingReplicaCount"
	ReasonMachineDeploymentStateSync = "MachineDeploymentStateSync"
	ReasonUnfreezeAnnotation         = "UnfreezeAnnotation"
)

// Event reasons recorded on MachineSets and MachineDeployments.
const (
	EventFrozeMachineSet          = "FrozeMachineSet"
	EventUnfrozeMachineSet        = "UnfrozeMachineSet"
	EventFrozeMachineDeployment   = "FrozeMachineDeployment"
	EventUnfrozeMachineDeployment = "UnfrozeMachineDeployment"
)

// ControllerName names the overshoot controller (logs, metrics, events).
const ControllerName = "machine-safety-overshooting"

// IndexMachineSetOwnerName indexes Machines by the names of the
// MachineSets among their ownerReferences.
const IndexMachineSetOwnerName = "safety:metadata.ownerReferences.machineset.name"
