package machinedeployment

// ControllerName is the name events are recorded under; the controller
// itself is named "machinedeployment" (logs and metrics).
const ControllerName = "machinedeployment-controller"

// PreferNoScheduleTaintKey is the taint put on the Nodes of old MachineSets'
// Machines during a rollout, with value "True" and effect PreferNoSchedule,
// so new pods land on new Machines. machine-controller-manager's key, so
// tools that know it (gardener's alerts) treat our Nodes alike.
const PreferNoScheduleTaintKey = "deployment.machine.sapcloud.io/prefer-no-schedule"

// preferNoScheduleValue is the value of PreferNoScheduleTaintKey.
const preferNoScheduleValue = "True"

// Event reasons recorded on MachineDeployments.
const (
	// EventScalingMachineSet: a MachineSet's replicas changed (machine-
	// controller-manager's reason; Deployments say ScalingReplicaSet).
	EventScalingMachineSet = "ScalingMachineSet"
	// EventSelectingAll: the selector is empty; nothing is done.
	EventSelectingAll = "SelectingAll"
	// EventInvalidConfiguration: the selector does not match the template's
	// labels; nothing is done.
	EventInvalidConfiguration = "InvalidConfiguration"
	// EventMachineSetCreateError: the new MachineSet could not be created.
	EventMachineSetCreateError = "MachineSetCreateError"
	// EventDeletedMachineSet: an old MachineSet beyond revisionHistoryLimit
	// was deleted.
	EventDeletedMachineSet = "DeletedMachineSet"
	// EventRollback: the template equals an old MachineSet's, which became
	// the new one again (Deployments' DeploymentRollback).
	EventRollback = "DeploymentRollback"
)

// Defaults for fields an admission webhook normally fills in; the
// controller applies them too, so a MachineDeployment created while the
// webhook is absent behaves the same.
const (
	// DefaultReplicas is spec.replicas when unset.
	DefaultReplicas = 1
	// DefaultMaxSurge and DefaultMaxUnavailable are the RollingUpdate bounds
	// when unset (Deployments' 25%).
	DefaultMaxSurge       = "25%"
	DefaultMaxUnavailable = "25%"
	// DefaultRevisionHistoryLimit is spec.revisionHistoryLimit when unset.
	DefaultRevisionHistoryLimit = 10
	// DefaultProgressDeadlineSeconds is spec.progressDeadlineSeconds when
	// unset.
	DefaultProgressDeadlineSeconds = 600
	// maxRevisionHistoryChars bounds the revision-history annotation
	// (Deployments' limit).
	maxRevisionHistoryChars = 2000
)
