package machinehealthcheck

import "time"

// ControllerName names the controller (events, logs, the manager).
const ControllerName = "machinehealthcheck-controller"

// Annotations, labels and taints the controller reads (OpenShift's and
// medik8s' names; see docs/openshift.md).
const (
	// PausedAnnotation on a MachineHealthCheck (any value) pauses remediation.
	PausedAnnotation = "cluster.x-k8s.io/paused"
	// RemediationStrategyAnnotation = RemediationStrategyExternalBaremetal: unhealthy (not
	// Failed) Machines get ExternalRemediationAnnotation for the baremetal provider, not deletion.
	RemediationStrategyAnnotation        = "machine.openshift.io/remediation-strategy"
	RemediationStrategyExternalBaremetal = "external-baremetal"
	ExternalRemediationAnnotation        = "host.metal3.io/external-remediation"
	// ExcludeFromRemediationLabel set to "true" on a Node excludes its Machine.
	ExcludeFromRemediationLabel = "remediation.medik8s.io/exclude-from-remediation"
	// NodeMaintenanceTaint marks a Node under maintenance; it is not remediated.
	NodeMaintenanceTaint = "medik8s.io/drain"
	// ClonedFromNameAnnotation and ClonedFromGroupKindAnnotation on an external
	// remediation request name its template.
	ClonedFromNameAnnotation      = "machine.openshift.io/cloned-from-name"
	ClonedFromGroupKindAnnotation = "machine.openshift.io/cloned-from-groupkind"
)

// DefaultNodeStartupTimeout applies when spec.nodeStartupTimeout is unset.
const DefaultNodeStartupTimeout = 10 * time.Minute

// Causes of Unhealthy verdicts, compared by the backoff: a node condition's
// cause names its type, not its status.
const (
	CauseFailed              = "MachineFailed"
	CauseNodeGone            = "NodeGone"
	CauseNodeStartupTimeout  = "NodeStartupTimeout"
	CauseNodeConditionPrefix = "NodeCondition/"
)

// Event reasons.
const (
	// On the MachineHealthCheck.
	EventRemediationRestricted  = "RemediationRestricted" // Warning, once per transition
	EventTemplateNotFound       = "ExternalRemediationTemplateNotFound"
	EventRemediationRateLimited = "RemediationRateLimited" // Warning, once per episode

	// On Machines.
	EventDetectedUnhealthy        = "DetectedUnhealthy"
	EventMachineDeleted           = "MachineDeleted"
	EventMachineDeletionFailed    = "MachineDeletionFailed"
	EventSkippedNoController      = "SkippedNoController"
	EventSkippedExcluded          = "SkippedExcluded"
	EventRequestCreated           = "ExternalRemediationRequestCreated"
	EventRequestCreationFailed    = "ExternalRemediationRequestCreationFailed"
	EventRequestDeleted           = "ExternalRemediationRequestDeleted"
	EventExternalAnnotationAdded  = "ExternalAnnotationAdded" // OpenShift's
	EventExternalAnnotationFailed = "ExternalAnnotationFailed"
	EventRemediationBackoff       = "RemediationBackoff" // Warning, once per Machine and wait
)

// Condition reasons (besides openshift/api's).
const (
	ReasonPaused             = "Paused"      // RemediationAllowed=False
	ReasonInvalidSpec        = "InvalidSpec" // RemediationAllowed=False: selector or maxUnhealthy unusable
	ReasonRemediationAllowed = "RemediationAllowed"
	ReasonTemplateAvailable  = "TemplateAvailable"
	ReasonRequestAvailable   = "RequestAvailable"
)
