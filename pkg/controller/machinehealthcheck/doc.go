// Package machinehealthcheck implements the MachineHealthCheck controller:
// it watches the Machines a MachineHealthCheck (machine.openshift.io/v1beta1)
// selects, decides which are unhealthy and remediates them, either by
// deleting the Machine (its MachineSet replaces it) or by creating an
// external remediation request from spec.remediationTemplate.
//
// A target is unhealthy when its Machine is Failed, its Node is gone, one of
// spec.unhealthyConditions has held on its Node for longer than its timeout,
// or it still has no Node spec.nodeStartupTimeout (default 10m, "0"
// disables) after the Machine was created.
//
// Differences from OpenShift's controller, on purpose:
//   - the startup timer runs from the Machine's creationTimestamp, not from
//     status.lastUpdated (which every status change resets);
//   - only Machines that are unhealthy now count against maxUnhealthy:
//     Machines still starting, Machines whose condition timeout has not
//     expired yet and Machines being deleted do not;
//   - while maxUnhealthy is exceeded the controller requeues only at the
//     next moment a verdict can change (the earliest timer), never in a
//     tight loop, and records RemediationRestricted once per transition;
//   - events on Machines are recorded once per reason and message, not on
//     every reconcile;
//   - the external remediation conditions are persisted, and requests are
//     looked up where they are created (the Machine's namespace);
//   - control-plane Machines are not deleted unless the MachineHealthCheck
//     opts in with RemediateControlPlaneAnnotation;
//   - Machines whose Node is excluded from remediation (the medik8s label
//     ExcludeFromRemediationLabel) or under maintenance (taint
//     NodeMaintenanceTaint) are left alone.
//
// The annotation PausedAnnotation on a MachineHealthCheck pauses
// remediation; the status is still reported (RemediationAllowed=False,
// reason Paused).
package machinehealthcheck
