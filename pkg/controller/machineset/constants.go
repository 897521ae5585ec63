package machineset

import "time"

// ControllerName is the name events are recorded under; the controller
// itself is named "machineset" (logs and metrics).
const ControllerName = "machineset-controller"

// Annotations read on Machines.
const (
	// DeleteMachineAnnotation with a non-empty value marks a Machine to be
	// deleted first when its MachineSet scales down.
	DeleteMachineAnnotation = "machine.openshift.io/delete-machine"
	// LegacyDeleteMachineAnnotation is the older spelling of
	// DeleteMachineAnnotation, still honoured.
	LegacyDeleteMachineAnnotation = "machine.openshift.io/cluster-api-delete-machine"
)

// Scale-from-zero annotations kept on kubemark MachineSets (see
// ScaleFromZeroAnnotations).
const (
	// CPUAnnotation is OpenShift's vCPU count (an integer).
	CPUAnnotation = "machine.openshift.io/vCPU"
	// MemoryAnnotation is OpenShift's memory size in MiB (an integer).
	MemoryAnnotation = "machine.openshift.io/memoryMb"
	// MaxPodsAnnotation is OpenShift's pod capacity (an integer).
	MaxPodsAnnotation = "machine.openshift.io/maxPods"
	// CapacityCPUAnnotation is the cluster autoscaler's CPU capacity (a
	// resource.Quantity string such as "2" or "500m").
	CapacityCPUAnnotation = "capacity.cluster-autoscaler.kubernetes.io/cpu"
	// CapacityMemoryAnnotation is the cluster autoscaler's memory capacity (a
	// resource.Quantity string such as "8Gi").
	CapacityMemoryAnnotation = "capacity.cluster-autoscaler.kubernetes.io/memory"
	// CapacityMaxPodsAnnotation is the cluster autoscaler's pod capacity (an
	// integer).
	CapacityMaxPodsAnnotation = "capacity.cluster-autoscaler.kubernetes.io/maxPods"
)

// Event reasons recorded on MachineSets.
const (
	EventSuccessfulCreate     = "SuccessfulCreate"
	EventFailedCreate         = "FailedCreate"
	EventSuccessfulDelete     = "SuccessfulDelete"
	EventFailedDelete         = "FailedDelete"
	EventInvalidConfiguration = "InvalidConfiguration"
)

// Defaults of the Options bounds.
const (
	// DefaultMaxCreateBurst is the default of Options.MaxCreateBurst.
	DefaultMaxCreateBurst = 500
	// DefaultMaxConcurrentDeletes is the default of
	// Options.MaxConcurrentDeletes.
	DefaultMaxConcurrentDeletes = 50
	// DefaultExpectationsTimeout is the default of
	// Options.ExpectationsTimeout.
	DefaultExpectationsTimeout = 5 * time.Minute
)

// Cache field indexes registered by SetupWithManager.
const (
	// IndexMachineController indexes Machines by the UID of their
	// controller ownerReference, or OrphanIndexValue when they have none.
	IndexMachineController = "machineset:metadata.ownerReferences.controller.uid"
	// OrphanIndexValue is the IndexMachineController value of Machines
	// without a controller ownerReference.
	OrphanIndexValue = "<none>"
)
