// Package vsphere is the vSphere machine provider: a provider.Actuator that clones a VM per Machine from a template
// on vCenter with OpenShift's semantics for VSphereMachineProviderSpec (see docs/vsphere.md).
package vsphere
