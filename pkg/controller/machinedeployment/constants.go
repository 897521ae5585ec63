// Package machinedeployment is the MachineDeployment controller: it rolls Machines through MachineSets
// named "<deployment>-<template hash>" as Deployments do with ReplicaSets (docs/machinedeployment.md).
package machinedeployment

import "github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/rollingupdate"

// ControllerName is the name events are recorded under (the controller's is "machinedeployment").
const ControllerName = "machinedeployment-controller"

// PreferNoScheduleTaintKey (value "True", effect PreferNoSchedule) is on the Nodes of old MachineSets'
// Machines during a rollout; machine-controller-manager's key, which gardener's tools know.
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

// Defaults the admission webhook fills in, applied by the controller too (Deployments' values).
const (
	DefaultReplicas                = 1
	DefaultMaxSurge                = rollingupdate.DefaultMaxSurge
	DefaultMaxUnavailable          = rollingupdate.DefaultMaxUnavailable
	DefaultRevisionHistoryLimit    = 10
	DefaultProgressDeadlineSeconds = 600
	// maxRevisionHistoryChars bounds the revision-history annotation.
	maxRevisionHistoryChars = 2000
)
