// Package machinedeployment is the MachineDeployment controller
// (machine.openshift.io/v1beta1, this project's addition): it rolls Machines
// from one template to the next through MachineSets named
// "<deployment>-<template hash>", as the Deployment controller does with
// ReplicaSets (docs/machinedeployment.md). Decide, a pure function, picks
// one rollout step and the status per Reconcile.
package machinedeployment
