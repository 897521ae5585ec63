// Package machinehealthcheck is the MachineHealthCheck controller: it assesses
// the Machines a MachineHealthCheck selects (assess) and remediates the
// unhealthy ones in OpenShift's order (decideRemediation), optionally paced by
// a token bucket and a backoff over in-memory history (pacing.go).
// PausedAnnotation pauses remediation; the status is still reported. See
// docs/architecture.md and docs/openshift.md ("MachineHealthCheck and nodelink
// semantics").
package machinehealthcheck
