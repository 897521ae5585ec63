// Package machinehealthcheck is the MachineHealthCheck controller: assess, then
// decideRemediation in OpenShift's order, optionally paced (pacing.go). See
// docs/architecture.md and docs/openshift.md.
package machinehealthcheck
