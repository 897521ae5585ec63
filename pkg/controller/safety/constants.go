// Package safety is the safety net of gardener's machine-controller-manager (its flags and
// defaults): overshoot freeze, API-server freeze, orphan collection. See docs/safety.md.
package safety

import "time"

// Flag defaults (machine-controller-manager's).
const (
	// DefaultSafetyUp is --safety-up: Machines beyond the expected maximum before a freeze.
	DefaultSafetyUp = 2
	// DefaultSafetyDown is --safety-down: how far below the threshold the freeze lifts.
	DefaultSafetyDown = 1
	// DefaultOvershootingPeriod is --machine-safety-overshooting-period.
	DefaultOvershootingPeriod = time.Minute
	// DefaultAPIServerCheckPeriod is --machine-safety-apiserver-statuscheck-period.
	DefaultAPIServerCheckPeriod = time.Minute
	// DefaultAPIServerCheckTimeout is --machine-safety-apiserver-statuscheck-timeout.
	DefaultAPIServerCheckTimeout = 30 * time.Second
	// DefaultOrphanPeriod is --machine-safety-orphan-vms-period.
	DefaultOrphanPeriod = 15 * time.Minute
	// DefaultOrphanMaxDeletions is --machine-safety-orphan-vms-max-deletions (this project's): orphans deleted
	// per pass at most, so a wrong judgement costs a few instances a period, not the fleet.
	DefaultOrphanMaxDeletions = 5
)

// UnfreezeAnnotation on a MachineSet or MachineDeployment lifts its freeze;
// the controller removes it.
const UnfreezeAnnotation = "safety.machine.sapcloud.io/unfreeze"

// Reasons of the Frozen condition, the unfreeze log line and event
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

// IndexMachineSetOwnerName indexes Machines by their MachineSet owners' names.
const IndexMachineSetOwnerName = "safety:metadata.ownerReferences.machineset.name"
