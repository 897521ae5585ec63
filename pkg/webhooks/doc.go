// Package webhooks is the machineset-controller's admission webhook server
// for Machines, MachineSets and MachineDeployments: defaulting fills the
// cluster-ID label and the providerSpec defaults field by field, validation
// refuses naming the field, with OpenShift's defaults, rules and messages per
// platform (one file each). See docs/contract.md ("Admission: providerSpec by
// platform") and docs/machinedeployment.md.
//
// An update that leaves an invalid part unchanged is admitted with a warning,
// and one that only removes finalizers from a deleting object always is, so
// controllers can act on objects created while the webhook was down.
package webhooks
