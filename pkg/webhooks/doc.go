// Package webhooks is the admission webhook server for Machines, MachineSets
// and MachineDeployments that the machineset-controller runs on the paths the
// operator renders ("machine-api" configurations, failurePolicy Ignore).
// Defaulting fills the cluster-ID label and the providerSpec defaults, field
// by field so other keys stay; validation refuses with messages naming the
// field. The platforms (one file each) follow OpenShift's defaults, rules,
// messages and paths (docs/contract.md, "Admission: providerSpec by
// platform"); a providerSpec of another provider is left alone.
//
// Updates that leave an invalid part unchanged are admitted with a warning
// (ratcheting), and a deleting object whose update only removes finalizers is
// always admitted, so controllers can still act on an object created while
// the webhook was down. A MachineDeployment's template is defaulted only when
// an update changes it (a new default would start a rollout). Lifecycle-hook
// immutability during deletion is the rendered ValidatingAdmissionPolicy's.
package webhooks
