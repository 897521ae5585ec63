// Package vsphere is the vSphere machine provider: a machine.Actuator that
// clones a VM per Machine from a template on vCenter, with OpenShift's
// semantics for machine.openshift.io/v1beta1 VSphereMachineProviderSpec and
// VSphereMachineProviderStatus (see docs/vsphere.md).
//
// The provider never waits on a vCenter task: it keeps the task's reference
// in providerStatus.taskRef and asks the machine controller to call again
// (RequeueAfterError) until the task is done. A VM is found by its instance
// UUID, which is the Machine's UID, so a Create retried after a crash finds
// the VM instead of cloning twice.
package vsphere
