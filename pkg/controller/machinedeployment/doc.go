// Package machinedeployment is the MachineDeployment controller
// (machine.openshift.io/v1beta1, this project's addition): it rolls a set of
// Machines from one template to the next through MachineSets named
// "<deployment>-<template hash>", as the Kubernetes Deployment controller
// does with ReplicaSets. docs/machinedeployment.md describes the behaviour
// and its invariants.
//
// Each Reconcile observes (the MachineDeployment, the MachineSets it
// controls or adopts, their Machines and Nodes from the cache), decides
// (Decide, a pure function: one step of the rollout and the status), acts
// (create, scale and delete MachineSets; taint the Nodes of old sets) and
// reports (status with Available and Progressing, events, metrics).
package machinedeployment
