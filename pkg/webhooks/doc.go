// Package webhooks is the admission webhook server for Machines, MachineSets
// and MachineDeployments (machine.openshift.io/v1beta1) that the machineset-controller
// binary runs on the paths the operator renders into its
// MutatingWebhookConfiguration and ValidatingWebhookConfiguration (both named
// "machine-api", failurePolicy Ignore).
//
// Defaulting (on create) fills what a user leaves out: the cluster-ID label
// machine.openshift.io/cluster-api-cluster (Infrastructure
// status.infrastructureName; never overwritten) and the providerSpec defaults
// of its provider. The platforms OpenShift admits (AWS, Azure, GCP, vSphere,
// PowerVS, Nutanix; one file each, registered in platforms) get OpenShift's
// defaults, written into the value field by field so that other keys stay
// as given; kubemark gets apiVersion, kind, cpu, memory and pods only, so its
// other defaults keep being applied by the provider at run time.
//
// Validation refuses, with messages naming the field: an invalid providerSpec
// (the platforms with OpenShift's messages, paths such as providerSpec.ami,
// and warnings, among them a missing credentials Secret), a change of
// spec.providerID once set, duplicate lifecycle hook names, and MachineSets
// whose selector is empty, invalid, does not match the template labels, or
// changed. A deleting object whose update only removes finalizers is always
// admitted, so a broken object can go away. Updates that leave an invalid
// part unchanged are admitted with a warning (ratcheting), so controllers can
// still add finalizers or labels to an object created while the webhook was
// unavailable; the provider reports such an object through its conditions.
//
// MachineDeployments (this project's addition) get a Deployment's defaults
// and checks (strategy, maxSurge/maxUnavailable, progressDeadlineSeconds),
// and their template is defaulted and validated as a MachineSet's; on update
// the template is defaulted only when the update changes it, since a new
// default would start a rollout.
//
// The provider of a providerSpec is the cluster's platform when the value
// names neither apiVersion nor kind (External with platformName kubemark →
// kubemark), kubemark for its group or kind on any cluster, and the cluster's
// platform for that platform's kind (see providerFor). Any other value is
// neither defaulted nor validated: another provider's webhook may own it.
// Lifecycle hook immutability during deletion is not checked here: the
// ValidatingAdmissionPolicy the operator renders (pkg/operator/render)
// enforces it.
package webhooks
