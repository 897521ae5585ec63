// Package controllertest runs the machine controller (pkg/controller/machine)
// with the vSphere provider against envtest and an in-process vcsim: the
// provider's contract with the controller, end to end. It has tests only.
package controllertest
