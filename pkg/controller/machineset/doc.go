// Package machineset is the MachineSet controller: it keeps exactly
// spec.replicas Machines per machine.openshift.io/v1beta1 MachineSet, with
// create/delete expectations, slow-start creates, bounded deletes, adoption
// and release (docs/architecture.md, "MachineSet controller"). A Reconcile
// observes the cache, decides in pure functions (ValidateMachineSet,
// classifyMachines, decide, MachinesToDelete, computeStatus), acts and
// reports (status, events, metrics).
package machineset
