package machinehealthcheck

import "time"

// ControllerName names the controller (events, logs, the manager).
const ControllerName = "machinehealthcheck-controller"

// Annotations, labels and taints the controller reads.
const (
	// PausedAnnotation on a MachineHealthCheck (any value) pauses
	// remediation; the status is still written.
	PausedAnnotation = "cluster.x-k8s.io/paused"

	// RemediationStrategyAnnotation on a MachineHealthCheck set to
	// RemediationStrategyExternalBaremetal makes it annotate unhealthy
	// Machines (not Failed ones) with ExternalRemediationAnnotation instead
	// of deleting them: OpenShift's baremetal provider then power-cycles the
	// host (powers it off, deletes the Node, powers it on) and removes the
	// annotation once the Node is back. OpenShift's names.
	RemediationStrategyAnnotation        = "machine.openshift.io/remediation-strategy"
	RemediationStrategyExternalBaremetal = "external-baremetal"
	ExternalRemediationAnnotation        = "host.metal3.io/external-remediation"

	// ExcludeFromRemediationLabel set to "true" on a Node excludes its
	// Machine from remediation (medik8s convention).
	ExcludeFromRemediationLabel = "remediation.medik8s.io/exclude-from-remediation"
	// NodeMaintenanceTaint is the taint key a node maintenance puts on the
	// Node it drains; such a Node is not remediated.
	NodeMaintenanceTaint = "medik8s.io/drain"

	// ClonedFromNameAnnotation and ClonedFromGroupKindAnnotation on an
	// external remediation request name the template it was built from.
	ClonedFromNameAnnotation      = "machine.openshift.io/cloned-from-name"
	ClonedFromGroupKindAnnotation = "machine.openshift.io/cloned-from-groupkind"
)

// DefaultNodeStartupTimeout applies when spec.nodeStartupTimeout is unset.
const DefaultNodeStartupTimeout = 10 * time.Minute

// Causes of Unhealthy verdicts (verdict.Cause), the "reason" the backoff of
// repeated remediation compares. A node condition's cause names its type,
// not its status: Ready=False and Ready=Unknown are one cause.
const (
	CauseFailed              = "MachineFailed"
	CauseNodeGone            = "NodeGone"
	CauseNodeStartupTimeout  = "NodeStartupTimeout"
	CauseNodeConditionPrefix = "NodeCondition/"
)

// Event reasons.
const (
	// On the MachineHealthCheck.
	EventRemediationRestricted = "RemediationRestricted" // Warning: maxUnhealthy exceeded (once per transition)
	EventTemplateNotFound      = "ExternalRemediationTemplateNotFound"
	// Warning: the rate limit holds remediations back (once per episode:
	// recorded again only after a pass in which it held none back).
	EventRemediationRateLimited = "RemediationRateLimited"

	// On Machines.
	EventDetectedUnhealthy     = "DetectedUnhealthy"     // Normal: the Machine is unhealthy, or will be when a timeout expires
	EventMachineDeleted        = "MachineDeleted"        // Normal: remediated by deletion
	EventMachineDeletionFailed = "MachineDeletionFailed" // Warning
	EventSkippedNoController   = "SkippedNoController"   // Warning: nothing would replace the Machine
	EventSkippedExcluded       = "SkippedExcluded"       // Normal: Node excluded from remediation or under maintenance
	EventRequestCreated        = "ExternalRemediationRequestCreated"
	EventRequestCreationFailed = "ExternalRemediationRequestCreationFailed"
	EventRequestDeleted        = "ExternalRemediationRequestDeleted"
	// external-baremetal (OpenShift's reasons): the Machine was annotated
	// (Normal), or the annotation could not be written (Warning).
	EventExternalAnnotationAdded  = "ExternalAnnotationAdded"
	EventExternalAnnotationFailed = "ExternalAnnotationFailed"
	// Warning: a repeated remediation of the same MachineSet (deletion) or
	// Machine (external remediation) waits; the note names the delay and
	// its end (once per Machine and wait).
	EventRemediationBackoff = "RemediationBackoff"
)

// Condition reasons (besides openshift/api's TooManyUnhealthyReason,
// ExternalRemediationTemplateNotFound and
// ExternalRemediationRequestCreationFailed).
const (
	ReasonPaused             = "Paused"             // RemediationAllowed=False: PausedAnnotation is set
	ReasonInvalidSpec        = "InvalidSpec"        // RemediationAllowed=False: selector or maxUnhealthy unusable
	ReasonRemediationAllowed = "RemediationAllowed" // RemediationAllowed=True
	ReasonTemplateAvailable  = "TemplateAvailable"  // ExternalRemediationTemplateAvailable=True
	ReasonRequestAvailable   = "RequestAvailable"   // ExternalRemediationRequestAvailable=True
)
