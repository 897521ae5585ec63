// Package v1alpha1 holds the kubemark provider's own API: the providerSpec and
// providerStatus of a Machine that the built-in kubemark provider runs.
//
// These types are not CRDs. They travel inside a Machine
// (machine.openshift.io/v1beta1) as spec.providerSpec.value and
// status.providerStatus, each with apiVersion
// kubemark.machine-api-operator.io/v1alpha1 and its kind.
//
// +kubebuilder:object:generate=true
// +groupName=kubemark.machine-api-operator.io
package v1alpha1

//go:generate ../../../../bin/controller-gen object paths=./...
