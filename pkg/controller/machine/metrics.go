package machine

import (
	"github.com/prometheus/client_golang/prometheus"

	mapimetrics "github.com/machine-api-operator/machine-api-operator/pkg/metrics"
)

// Provider operations, the values of the "operation" metric label.
const (
	OperationCreate = "create"
	OperationUpdate = "update"
	OperationExists = "exists"
	OperationDelete = "delete"
)

// maxReasonLength bounds the reason label of the mapi_instance_*_failed counters (an error message).
const maxReasonLength = 128

var (
	// PhaseTransitionSeconds observes the seconds from creation to each phase but Deleting (OpenShift's).
	PhaseTransitionSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mapi_machine_phase_transition_seconds",
		Help:    "Seconds from Machine creation until it entered the phase.",
		Buckets: []float64{5, 10, 20, 30, 60, 90, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 3600},
	}, []string{"phase"})

	// PhaseTransitionsTotal counts phase transitions ("" is a new Machine).
	PhaseTransitionsTotal = counterVec("machine_api_machine_phase_transitions_total",
		"Machine phase transitions written by the machine controller.", "from", "to")
	// ProviderCallsTotal counts Actuator calls.
	ProviderCallsTotal = counterVec("machine_api_provider_calls_total",
		"Calls of the provider (Actuator) by operation.", "operation")
	// ProviderErrorsTotal counts failed Actuator calls (a provider.RequeueAfterError is a wait, not a failure).
	ProviderErrorsTotal = counterVec("machine_api_provider_errors_total",
		"Provider (Actuator) calls that failed, by operation.", "operation")

	// InstanceCreateFailed counts failed Create calls per Machine (OpenShift's metric), by provider.Error
	// reason or error message; a Machine's series go with it.
	InstanceCreateFailed = instanceFailedCounter("mapi_instance_create_failed", "create")
	// InstanceUpdateFailed counts failed Update calls likewise.
	InstanceUpdateFailed = instanceFailedCounter("mapi_instance_update_failed", "update")
	// InstanceDeleteFailed counts failed Delete calls likewise.
	InstanceDeleteFailed = instanceFailedCounter("mapi_instance_delete_failed", "delete")

	// DrainDurationSeconds observes node drains, from DrainStartedAnnotation until drained or timed out.
	DrainDurationSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "machine_api_drain_duration_seconds",
		Help:    "Duration of node drains done by the machine controller, from the start to success or timeout.",
		Buckets: []float64{1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200},
	})

	// DrainTimeoutsTotal counts drains ended by the drain timeout (pods deleted without eviction).
	DrainTimeoutsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "machine_api_drain_timeouts_total",
		Help: "Node drains that hit the drain timeout and deleted the remaining pods without eviction.",
	})

	// instanceFailed is the counter of a failed operation; OpenShift does not count Exists.
	instanceFailed = map[string]*prometheus.CounterVec{
		OperationCreate: InstanceCreateFailed, OperationUpdate: InstanceUpdateFailed, OperationDelete: InstanceDeleteFailed,
	}
)

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

func instanceFailedCounter(name, verb string) *prometheus.CounterVec {
	return counterVec(name, "Number of times the provider failed to "+verb+" the Machine's instance.",
		"name", "namespace", "reason")
}

// RegisterMetrics registers the metrics with controller-runtime's registry; calling it again is safe.
func RegisterMetrics() {
	mapimetrics.Register(PhaseTransitionSeconds, PhaseTransitionsTotal, ProviderCallsTotal, ProviderErrorsTotal,
		InstanceCreateFailed, InstanceUpdateFailed, InstanceDeleteFailed, DrainDurationSeconds, DrainTimeoutsTotal)
}
