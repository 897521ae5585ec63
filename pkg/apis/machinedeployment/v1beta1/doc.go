// Package v1beta1 holds the MachineDeployment API (machine.openshift.io/v1beta1),
// this project's addition to OpenShift's Machine API group: a
// MachineDeployment owns MachineSets as a Deployment owns ReplicaSets and
// rolls its Machines from one template to the next (docs/machinedeployment.md).
// OpenShift has no MachineDeployment; it lives in the machine.openshift.io
// group so that cluster-autoscaler (CAPI_GROUP=machine.openshift.io) finds it.
//
// +kubebuilder:object:generate=true
// +groupName=machine.openshift.io
package v1beta1
