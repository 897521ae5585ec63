package machineset

import "time"

// ControllerName names the events' source; the controller is "machineset".
const ControllerName = "machineset-controller"

// Scale-from-zero annotations kept on kubemark MachineSets: OpenShift's integers (vCPU
// rounded up, MiB rounded down) and the cluster autoscaler's quantities ("500m", "4Gi").
// vSphere MachineSets get the first two only, as OpenShift's vSphere MachineSet controller sets.
const (
	CPUAnnotation             = "machine.openshift.io/vCPU"
	MemoryAnnotation          = "machine.openshift.io/memoryMb"
	MaxPodsAnnotation         = "machine.openshift.io/maxPods"
	CapacityCPUAnnotation     = "capacity.cluster-autoscaler.kubernetes.io/cpu"
	CapacityMemoryAnnotation  = "capacity.cluster-autoscaler.kubernetes.io/memory"
	CapacityMaxPodsAnnotation = "capacity.cluster-autoscaler.kubernetes.io/maxPods"
)

// Event reasons recorded on MachineSets.
const (
	EventSuccessfulCreate     = "SuccessfulCreate"
	EventFailedCreate         = "FailedCreate"
	EventSuccessfulDelete     = "SuccessfulDelete"
	EventFailedDelete         = "FailedDelete"
	EventInvalidConfiguration = "InvalidConfiguration"
	// EventReconcileError is OpenShift's vSphere MachineSet controller's, for a providerSpec it cannot read.
	EventReconcileError = "ReconcileError"
)

// Defaults of the Options of the same names.
const (
	DefaultMaxCreateBurst       = 500
	DefaultMaxConcurrentDeletes = 50
	DefaultExpectationsTimeout  = 5 * time.Minute
)

// IndexMachineController indexes Machines by their controller's UID, or
// OrphanIndexValue when they have none.
const (
	IndexMachineController = "machineset:metadata.ownerReferences.controller.uid"
	OrphanIndexValue       = "<none>"
)
