// Package v1beta1 holds the MachineDeployment API (docs/machinedeployment.md), this project's addition to
// OpenShift's group so that cluster-autoscaler (CAPI_GROUP=machine.openshift.io) finds it.
//
// +kubebuilder:object:generate=true
// +groupName=machine.openshift.io
package v1beta1
