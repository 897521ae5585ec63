// Package webhooks is the admission webhook server for Machines and
// MachineSets (machine.openshift.io/v1beta1) that the machineset-controller
// binary runs on the paths the operator renders into its
// MutatingWebhookConfiguration and ValidatingWebhookConfiguration (both named
// "machine-api", failurePolicy Ignore).
//
// Defaulting fills what a provider leaves out: the cluster-ID label
// machine.openshift.io/cluster-api-cluster (Infrastructure
// status.infrastructureName; never overwritten) and, for the kubemark
// provider, the providerSpec's apiVersion, kind, cpu, memory and pods. Only
// those keys are added, so the stored object stays small and every other
// default keeps being applied by the provider at run time.
//
// Validation refuses, with messages naming the field: an invalid kubemark
// providerSpec, a change of spec.providerID once set, duplicate lifecycle
// hook names, and MachineSets whose selector is empty, invalid, does not
// match the template labels, or changed. A deleting object whose update only
// removes finalizers is always admitted, so a broken object can go away.
// Updates that leave an invalid part unchanged are admitted with a warning
// (ratcheting), so controllers can still add finalizers or labels to an
// object created while the webhook was unavailable; the provider reports
// such an object through its conditions instead.
//
// The provider of a providerSpec is chosen by the group of its apiVersion
// (then by its kind); only when both are missing by the cluster's platform
// (External with platformName kubemark → kubemark). A providerSpec of a group
// this package does not know is neither defaulted nor validated: another
// provider's webhook may own it. Lifecycle hook immutability during deletion
// is not checked here: the ValidatingAdmissionPolicy the operator renders
// (pkg/operator/render) enforces it.
package webhooks
