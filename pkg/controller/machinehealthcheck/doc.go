// Package machinehealthcheck implements the MachineHealthCheck controller:
// it watches the Machines a MachineHealthCheck (machine.openshift.io/v1beta1)
// selects, decides which are unhealthy and remediates them, by OpenShift's
// rules (decideRemediation): an external remediation request from
// spec.remediationTemplate; else, with the MachineHealthCheck annotation
// RemediationStrategyAnnotation=external-baremetal, the annotation
// ExternalRemediationAnnotation on a Machine that is not Failed (OpenShift's
// baremetal provider power-cycles its host); else deleting a Machine that
// has a controller owner (its MachineSet, or for control-plane Machines the
// ControlPlaneMachineSet, replaces it).
//
// A target is unhealthy when its Machine is Failed, its Node is gone (the
// nodeRef names a Node that does not exist, or one recreated under that
// name: nodelink keeps the nodeRef of a deleted Node), one of
// spec.unhealthyConditions has held on its Node for longer than its timeout,
// or it still has no Node spec.nodeStartupTimeout (default 10m, "0"
// disables) after the Machine was created (or, with Options.
// NodeStartupTimeoutFrom=StartupFromLastUpdated, after its status was last
// updated, as OpenShift).
//
// Differences from OpenShift's controller, on purpose (docs/openshift.md):
//   - the startup timer runs from the Machine's creationTimestamp, not from
//     status.lastUpdated (which every status change resets), unless
//     Options.NodeStartupTimeoutFrom says otherwise;
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
//   - Machines whose Node is excluded from remediation (the medik8s label
//     ExcludeFromRemediationLabel) or under maintenance (taint
//     NodeMaintenanceTaint) are left alone;
//   - optionally (off by default, as OpenShift has neither), remediation is
//     rate limited beyond maxUnhealthy, and repeated remediation of the same
//     MachineSet's Machines (or of the same Machine, with external
//     remediation) backs off exponentially (Remediation pacing, below).
//     Without them, as in OpenShift, every unhealthy Machine is remediated
//     at once as long as maxUnhealthy holds, so a broken MachineSet template
//     makes the controller delete every replacement as soon as it times out.
//
// # Remediation pacing
//
// Rate limit (off unless Options.RemediationBurst > 0). The remediations of
// each MachineHealthCheck (Machine deletions, external remediation requests
// created, Machines annotated for external-baremetal; not requests that
// already exist) draw from a token bucket: at most Options.RemediationBurst
// at once, refilled by one every Options.RemediationInterval (flags
// --remediation-burst, default 0: off, and --remediation-interval, default
// 1m). The default interval is the default nodeStartupTimeout (10m)
// divided by the suggested burst (SuggestedRemediationBurst, 10): a
// replacement takes up to that long to get its Node, so at the sustained rate of one a
// minute about as many replacements are provisioning at any time as the
// burst lets start at once: a cluster-wide incident never has much more
// than ten replacements of one MachineHealthCheck in flight, while a few
// failures are still remediated at once. Unhealthy Machines are served
// oldest first. A Machine the limit holds back is not remediated in that
// pass; the MachineHealthCheck is requeued at exactly the moment the next
// token comes (never sooner, no polling), records a Warning
// RemediationRateLimited once per episode (again only after a pass that
// held nothing back), and mapi_machinehealthcheck_remediation_rate_limited_total
// counts each held-back Machine once per wait.
//
// Backoff (off unless Options.RemediationBackoff, flag
// --remediation-backoff). Deletion remediates the slot a MachineSet keeps
// refilling, so its key is the Machine's controller owner (MachineSet UID); the key of
// external remediation is the Machine itself (one that becomes healthy and
// unhealthy again, over and over). The first remediation of a key starts a
// streak; each further one for the same cause (verdict.Cause: Failed, Node
// gone, nodeStartupTimeout, or the node condition's type) waits
// RemediationBackoffBase (1m), doubling with every remediation of the
// streak up to RemediationBackoffMax (30m). The wait runs from the later
// of the key's last remediation and the moment the Machine became due (so a
// replacement that takes nodeStartupTimeout to fail is still delayed); a
// different cause, or no remediation of the key for
// RemediationBackoffReset (2 × 30m) before the Machine became due, starts a
// new streak. The Machines a MachineSet had when its streak began are not
// replacements and do not wait (several failing at once are paced by the
// rate limit only); only Machines created since do (as the controller sees
// them: one created a moment before the streak began but not yet in the
// cache counts as a replacement, an error on the side of waiting). A
// Machine waiting for its backoff takes no token; it gets a Warning
// RemediationBackoff naming the delay and its end (once per wait), is
// counted by mapi_machinehealthcheck_remediation_backoff_total, and the
// MachineHealthCheck is requeued at the exact end of the wait.
//
// Status. The pacing does not change the status: RemediationAllowed and
// status.remediationsAllowed stay the maxUnhealthy verdict (openshift/api
// defines remediationsAllowed as the remediations left before maxUnhealthy
// short-circuits). Held-back Machines are unhealthy and count against
// maxUnhealthy like any other. A paced remediation is delayed, not
// refused, and needs no action; reporting every token in the status would
// cost a status write per token and make the status depend on one
// replica's memory. Events, metrics and logs show the pacing.
//
// State. The pacing state (the buckets, the streaks) lives in the
// Reconciler's memory, per MachineHealthCheck, and is dropped when it
// carries no information any more (a full bucket, streaks over) or the
// MachineHealthCheck is deleted. A restart or a leader change resets it:
// the bucket starts full and the streaks empty, so at most one burst and
// one undelayed remediation per key come early. That is acceptable:
// restarts are rare compared with the delays (minutes), maxUnhealthy, which
// is computed from the cluster and not from memory, still bounds how many
// Machines are unhealthy at once, and persisting the pacing would need a
// write per remediation to fields openshift/api does not have (or
// annotations on MachineSets this controller does not own).
//
// The annotation PausedAnnotation on a MachineHealthCheck pauses
// remediation; the status is still reported (RemediationAllowed=False,
// reason Paused).
package machinehealthcheck
