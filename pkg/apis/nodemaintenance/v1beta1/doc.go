// Package v1beta1 holds the NodeMaintenance API, wire-compatible with medik8s' node-maintenance-operator
// (spec.drainTimeout is this project's extension): one node cordoned and drained until the object goes.
//
// +kubebuilder:object:generate=true
// +groupName=nodemaintenance.medik8s.io
package v1beta1
