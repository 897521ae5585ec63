// Package machineset is the MachineSet controller: it keeps exactly
// spec.replicas Machines (not being deleted, matching spec.selector) for every
// machine.openshift.io/v1beta1 MachineSet.
//
// Each Reconcile observes (MachineSet, Machines and Nodes from the informer
// cache), decides (pure functions: ValidateMachineSet, classifyMachines,
// decide, MachinesToDelete, computeStatus), acts (adopt, release, create,
// delete) and reports (status subresource, events, metrics).
//
// # Ownership
//
// A Machine belongs to a MachineSet when its controller ownerReference names
// the MachineSet's UID. Matching orphans (no controller reference, labels
// matched by the selector, not being deleted) are adopted with an
// optimistic-lock patch that adds the controller reference, after the
// MachineSet is re-read from the API server (not the cache) to make sure it
// still exists with the same UID and is not being deleted. Owned Machines
// whose labels stopped matching are released (our ownerReference removed).
// Machines controlled by anything else are never touched. An empty selector
// matches nothing (and makes the MachineSet invalid).
//
// # Expectations
//
// Creations are tracked by Machine name (taken from the Create response, as
// names come from generateName "<machineset>-") and deletions by Machine UID,
// per MachineSet, each with a deadline (Options.ExpectationsTimeout, 5m by
// default). While any is pending the controller neither creates nor deletes,
// so an informer cache that has not caught up with its own writes never
// causes over-creation or double deletion. The Machine event handlers record
// the observations: a create event observes a creation, a delete event or an
// update that sets deletionTimestamp observes a deletion. Observations are
// set operations, so a repeated event is not counted twice. An expectation
// that is not observed before its deadline is dropped (metric
// machine_api_machineset_expectation_timeouts_total) and the MachineSet is
// reconciled again at that moment.
//
// # Scaling
//
// Scale-up creates at most Options.MaxCreateBurst Machines per Reconcile, in
// batches of 1, 2, 4, ... issued concurrently; the first batch with a failed
// Create ends the scale-up (the rest waits for the next Reconcile). A new
// Machine gets generateName "<machineset>-", the MachineSet's namespace, the
// labels and annotations of spec.template.metadata, spec.template.spec and a
// controller ownerReference (blockOwnerDeletion=true). Scale-down deletes the
// Machines chosen by MachinesToDelete, at most Options.MaxConcurrentDeletes
// at a time, each with a UID precondition.
//
// # Delete order
//
// MachinesToDelete sorts the candidates by these keys, in order, and takes
// the first n:
//
//  1. class, lowest first:
//     0 being deleted (deletionTimestamp set; the controller never counts
//     these, so they only matter to callers that pass them in);
//     1 annotated machine.openshift.io/delete-machine or the legacy
//     machine.openshift.io/cluster-api-delete-machine with a non-empty value;
//     2 failed: status.errorReason or status.errorMessage set, or phase Failed;
//     3 without status.nodeRef;
//     4 everything else.
//  2. within a class, by spec.deletePolicy:
//     Oldest: creationTimestamp ascending (oldest first);
//     Newest: creationTimestamp descending (newest first);
//     Random (also "" and any unknown value): the FNV-1a 64-bit hash of the
//     Machine's UID (of its name when the UID is empty) ascending, a
//     deterministic pseudo-random order: the same Machines always yield the
//     same victims.
//  3. name ascending.
//
// # Status
//
// status.replicas counts the owned, matching Machines that are not being
// deleted; fullyLabeledReplicas those whose labels include every template
// label; readyReplicas those whose status.nodeRef Node has Ready=True;
// availableReplicas those ready for at least spec.minReadySeconds (measured
// from the Ready condition's lastTransitionTime; the MachineSet is requeued
// when the next one becomes available). status.labelSelector is
// metav1.FormatLabelSelector(spec.selector) and backs the scale subresource.
// The status is patched only when it changed.
//
// An invalid MachineSet (see ValidateMachineSet) gets status.errorReason
// InvalidConfiguration, status.errorMessage naming the field, and one
// Warning event InvalidConfiguration per distinct message; nothing is
// created or deleted and it is not requeued. Both fields are cleared once
// the MachineSet is valid again. A MachineSet being deleted is left alone:
// the garbage collector deletes its Machines through their ownerReferences.
//
// # Scale from zero
//
// For a MachineSet whose template providerSpec is a kubemark providerSpec the
// controller keeps the cluster autoscaler's capacity annotations
// (ScaleFromZeroAnnotations) on the MachineSet.
//
// # Events
//
// SuccessfulCreate, FailedCreate, SuccessfulDelete and FailedDelete on the
// MachineSet (one per Machine, aggregated by the event recorder), and
// InvalidConfiguration.
package machineset
