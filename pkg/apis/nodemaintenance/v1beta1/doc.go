// Package v1beta1 holds the NodeMaintenance API (nodemaintenance.medik8s.io/v1beta1),
// wire-compatible with the medik8s node-maintenance-operator: a cluster-scoped
// NodeMaintenance asks for one node to be cordoned and drained until the
// object is deleted. spec.drainTimeout is an extension of this project.
//
// +kubebuilder:object:generate=true
// +groupName=nodemaintenance.medik8s.io
package v1beta1
