// Package v1alpha1 holds the kubemark provider's providerSpec and
// providerStatus, which travel inside a Machine (they are not CRDs).
//
// +kubebuilder:object:generate=true
// +groupName=kubemark.machine-api-operator.io
package v1alpha1

//go:generate ../../../../bin/controller-gen object paths=./...
