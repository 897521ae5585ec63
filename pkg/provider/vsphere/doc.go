// Package vsphere is the vSphere machine provider: a machine.Actuator that clones a VM per Machine from a
// template on vCenter, with OpenShift's semantics for machine.openshift.io/v1beta1 VSphereMachineProviderSpec,
// never waiting on a vCenter task and finding the VM by instance UUID = the Machine's UID. See docs/vsphere.md.
package vsphere
