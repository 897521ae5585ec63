// Package machinedeployment is the MachineDeployment controller
// (machine.openshift.io/v1beta1, this project's addition): it rolls Machines
// from one template to the next through MachineSets named
// "<deployment>-<template hash>", as the Deployment controller does with
// ReplicaSets (docs/machinedeployment.md). Decide, a pure function, picks
// one rollout step and the status per Reconcile.
package machinedeployment

// ControllerName is the name events are recorded under; the controller
// itself is named "machinedeployment".
const ControllerName = "machinedeployment-controller"

// PreferNoScheduleTaintKey (value "True", effect PreferNoSchedule) is put on
// the Nodes of old MachineSets' Machines during a rollout; it is
// machine-controller-manager's key, which gardener's tools know.
const PreferNoScheduleTaintKey = "deployment.machine.sapcloud.io/prefer-no-schedule"

const preferNoScheduleValue = "True"

// Event reasons recorded on MachineDeployments (docs/machinedeployment.md).
const (
	EventScalingMachineSet     = "ScalingMachineSet"    // machine-controller-manager's
	EventSelectingAll          = "SelectingAll"         // empty selector: nothing is done
	EventInvalidConfiguration  = "InvalidConfiguration" // selector does not match the template
	EventMachineSetCreateError = "MachineSetCreateError"
	EventDeletedMachineSet     = "DeletedMachineSet"  // beyond revisionHistoryLimit
	EventRollback              = "DeploymentRollback" // an old MachineSet became the new one again
)

// Defaults the admission webhook normally fills in, applied by the
// controller too (Deployments' values).
const (
	DefaultReplicas                = 1
	DefaultMaxSurge                = "25%"
	DefaultMaxUnavailable          = "25%"
	DefaultRevisionHistoryLimit    = 10
	DefaultProgressDeadlineSeconds = 600
	// maxRevisionHistoryChars bounds the revision-history annotation.
	maxRevisionHistoryChars = 2000
)
