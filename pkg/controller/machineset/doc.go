// Package machineset is the MachineSet controller: it keeps exactly spec.replicas
// Machines per MachineSet. See docs/architecture.md, "MachineSet controller".
package machineset
