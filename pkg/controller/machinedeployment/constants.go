package machinedeployment

// ControllerName is the name events are recorded under; the controller
// itself is named "machinedeployment".
const ControllerName = "machinedeployment-controller"

// PreferNoScheduleTaintKey (value "True", effect PreferNoSchedule) is put on
// the Nodes of old MachineSets' Machines during a rollout; it is
// machine-controller-manager's key, which gardener's tools know.
const PreferNoScheduleTaintKey = "deployment.machine.sapcloud.io/prefer-no-schedule"

const preferNoScheduleValue = "True"

// Event reasons recorded on MachineDeployments (docs/machinedeployment.md).
const (
	EventScalingMachineSet     = "ScalingMachineSet"    // machine-controller-manager's
	EventSelectingAll          = "SelectingAll"         // empty selector: nothing is done
	EventInvalidConfiguration  = "InvalidConfiguration" // selector does not match the template
	EventMachineSetCreateError = "MachineSetCreateError"
	EventDeletedMachineSet     = "DeletedMachineSet"  // beyond revisionHistoryLimit
	EventRollback              = "DeploymentRollback" // an old MachineSet became the new one again
)

// Defaults the admission webhook normally fills in, applied by the
// controller too (Deployments' values).
const (
	DefaultReplicas                = 1
	DefaultMaxSurge                = "25%"
	DefaultMaxUnavailable          = "25%"
	DefaultRevisionHistoryLimit    = 10
	DefaultProgressDeadlineSeconds = 600
	// maxRevisionHistoryChars bounds the revision-history annotation.
	maxRevisionHistoryChars = 2000
)
