// Package machinehealthcheck is the MachineHealthCheck controller: it
// assesses the Machines a MachineHealthCheck selects (assess: Failed, Node
// gone, an unhealthy condition past its timeout, no Node after
// nodeStartupTimeout) and remediates the unhealthy ones in OpenShift's order
// (decideRemediation: external request from spec.remediationTemplate, the
// external-baremetal annotation, deletion of a Machine with a controller
// owner). Where it differs from OpenShift on purpose, and why, is in
// docs/openshift.md ("MachineHealthCheck and nodelink semantics").
//
// Remediation pacing (opt-in, flags --remediation-burst/-interval and
// --remediation-backoff; docs/architecture.md) is a token bucket per
// MachineHealthCheck and an exponential backoff per MachineSet slot (or
// externally remediated Machine) for a repeated cause, both decided by pure
// functions (pacing.go) over in-memory history: a restart forgets it, which
// can let one burst through early but never blocks a remediation. Pacing
// delays, it does not refuse, so the status keeps the maxUnhealthy verdict;
// events and metrics show it.
//
// PausedAnnotation pauses remediation; the status is still reported.
package machinehealthcheck
