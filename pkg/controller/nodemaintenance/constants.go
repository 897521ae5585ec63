// Package nodemaintenance is the NodeMaintenance controller: it cordons, taints, excludes from remediation
// and drains one node, and on deletion undoes exactly what it did (medik8s' differences: docs/openshift.md).
package nodemaintenance

import "time"

const (
	// ControllerName is the controller's field manager (its events come from EventSource).
	ControllerName = "nodemaintenance-controller"
	// Finalizer keeps a NodeMaintenance until its node is released (medik8s's name).
	Finalizer = "foregroundDeleteNodeMaintenance"

	// DrainTaintKey is the taint (effect NoSchedule) put on a node in maintenance.
	DrainTaintKey = "medik8s.io/drain"
	// UnschedulableTaintKey goes with a cordon; added (NoSchedule) when absent, as medik8s does.
	UnschedulableTaintKey = "node.kubernetes.io/unschedulable"
	// ExcludeFromRemediationLabel (value "true") tells remediators to leave the node alone.
	ExcludeFromRemediationLabel = "remediation.medik8s.io/exclude-from-remediation"

	// OwnerAnnotation on the Node names the NodeMaintenance that changed it.
	OwnerAnnotation = "nodemaintenance.medik8s.io/owner"
	// AddedAnnotation on the Node lists (comma-separated Added* values) what to remove on deletion.
	AddedAnnotation = "nodemaintenance.medik8s.io/added"

	// AddedCordon in AddedAnnotation: the controller cordoned the node.
	AddedCordon = "cordon"
	// AddedDrainTaint in AddedAnnotation: it added DrainTaintKey.
	AddedDrainTaint = "taint"
	// AddedUnschedulableTaint in AddedAnnotation: it added UnschedulableTaintKey.
	AddedUnschedulableTaint = "unschedulable-taint"
	// AddedLabel in AddedAnnotation: it added ExcludeFromRemediationLabel.
	AddedLabel = "label"

	// NodeNameField indexes NodeMaintenances by spec.nodeName.
	NodeNameField = "spec.nodeName"
	// DrainerTimeout is medik8s's kubectl drain timeout: once a drain has run this long, lastError is the
	// error medik8s's drain would return for the pods left (drainerError).
	DrainerTimeout = 30 * time.Second
	// DefaultPollInterval is how soon a drain in progress is looked at again.
	DefaultPollInterval = 5 * time.Second

	// DefaultLeaseNamespace holds the node leases (medik8s's default).
	DefaultLeaseNamespace = "medik8s-leases"
	// LeaseHolderIdentity is NMO's, which NodeHealthCheck and Self Node Remediation recognise.
	LeaseHolderIdentity = "node-maintenance"
	// LeaseNamePrefix + node name is the name of a node's lease.
	LeaseNamePrefix = "node-"
	// LeaseDuration is the lease's duration; it is renewed at half of it.
	LeaseDuration = time.Hour
	// MaxLeaseErrors failed attempts to keep the lease once the drain started are retried; one more fails.
	MaxLeaseErrors = 3
)

// Event reasons and notes (medik8s's, exactly). UncordonNode is recorded on the Node, the others on
// the NodeMaintenance.
const (
	EventBeginMaintenance   = "BeginMaintenance"
	EventFailedMaintenance  = "FailedMaintenance"
	EventSucceedMaintenance = "SucceedMaintenance"
	EventUncordonNode       = "UncordonNode"
	EventRemovedMaintenance = "RemovedMaintenance"

	EventMessageBeginMaintenance   = "Begin a node maintenance"
	EventMessageFailedMaintenance  = "Failed a node maintenance"
	EventMessageSucceedMaintenance = "Node maintenance was succeeded"
	EventMessageUncordonNode       = "Uncordon a node"
	EventMessageRemovedMaintenance = "Removed a node maintenance"
)

// This project's events (medik8s has none for these states; docs/openshift.md).
const (
	EventWaiting       = "WaitingMaintenance"
	EventDrainTimedOut = "DrainTimedOut"
)

// initCountError is medik8s's lastError when the pods to evict cannot be listed on the first reconcile.
const initCountError = "failed to get pods for eviction while initializing status"
