package machine

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
	mapimetrics "github.com/machine-api-operator/machine-api-operator/pkg/metrics"
)

// Provider operations, the values of the "operation" metric label.
const (
	OperationCreate = "create"
	OperationUpdate = "update"
	OperationExists = "exists"
	OperationDelete = "delete"
)

var instanceFailedLabels = []string{"name", "namespace", "reason"}

// maxReasonLength bounds the reason label of the mapi_instance_*_failed
// counters when it is an error message.
const maxReasonLength = 128

var (
	// PhaseTransitionSeconds observes, when a Machine enters a phase, the
	// seconds since the Machine was created (as upstream MAO's metric of the
	// same name, label phase; Deleting is not observed). Its buckets are
	// OpenShift's (5s to 600s) plus 900s to 3600s.
	PhaseTransitionSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mapi_machine_phase_transition_seconds",
		Help:    "Seconds from Machine creation until it entered the phase.",
		Buckets: []float64{5, 10, 20, 30, 60, 90, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 3600},
	}, []string{"phase"})

	// PhaseTransitionsTotal counts phase transitions ("" is a new Machine).
	PhaseTransitionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "machine_api_machine_phase_transitions_total",
		Help: "Machine phase transitions written by the machine controller.",
	}, []string{"from", "to"})

	// ProviderCallsTotal counts Actuator calls.
	ProviderCallsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "machine_api_provider_calls_total",
		Help: "Calls of the provider (Actuator) by operation.",
	}, []string{"operation"})

	// ProviderErrorsTotal counts Actuator calls that returned an error other
	// than a RequeueAfterError (which is a provider-side wait, not a failure).
	ProviderErrorsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "machine_api_provider_errors_total",
		Help: "Provider (Actuator) calls that failed, by operation.",
	}, []string{"operation"})

	// InstanceCreateFailed, InstanceUpdateFailed and InstanceDeleteFailed
	// count the provider's failed Create, Update and Delete calls per
	// Machine (OpenShift's names and labels; a RequeueAfterError is a wait,
	// not a failure). reason is the Machine API error reason when the
	// provider returns a MachineError (InvalidConfiguration, CreateError,
	// ...), else the error message (as OpenShift's providers report it),
	// cut to maxReasonLength bytes. A Machine's series are dropped when it
	// is gone, so deleted Machines do not accumulate.
	InstanceCreateFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mapi_instance_create_failed",
		Help: "Number of times the provider failed to create the Machine's instance.",
	}, instanceFailedLabels)
	InstanceUpdateFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mapi_instance_update_failed",
		Help: "Number of times the provider failed to update the Machine's instance.",
	}, instanceFailedLabels)
	InstanceDeleteFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mapi_instance_delete_failed",
		Help: "Number of times the provider failed to delete the Machine's instance.",
	}, instanceFailedLabels)

	// DrainDurationSeconds observes how long node drains took, from the drain
	// start (DrainStartedAnnotation) until the node was drained or the drain
	// timed out.
	DrainDurationSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "machine_api_drain_duration_seconds",
		Help:    "Duration of node drains done by the machine controller, from the start to success or timeout.",
		Buckets: []float64{1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200},
	})

	// DrainTimeoutsTotal counts drains ended by the drain timeout (pods
	// deleted without eviction).
	DrainTimeoutsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "machine_api_drain_timeouts_total",
		Help: "Node drains that hit the drain timeout and deleted the remaining pods without eviction.",
	})
)

// RegisterMetrics registers the controller's metrics with controller-runtime's
// metrics.Registry. It is safe to call many times (NewReconciler calls it).
func RegisterMetrics() {
	mapimetrics.Register(PhaseTransitionSeconds, PhaseTransitionsTotal, ProviderCallsTotal, ProviderErrorsTotal,
		InstanceCreateFailed, InstanceUpdateFailed, InstanceDeleteFailed, DrainDurationSeconds, DrainTimeoutsTotal)
}

// instanceFailed is the counter of a failed provider operation, nil for
// operations OpenShift does not count (Exists).
func instanceFailed(op string) *prometheus.CounterVec {
	switch op {
	case OperationCreate:
		return InstanceCreateFailed
	case OperationUpdate:
		return InstanceUpdateFailed
	case OperationDelete:
		return InstanceDeleteFailed
	}
	return nil
}

// failureReason is the reason label of an instance failure.
func failureReason(err error) string {
	var me *MachineError
	if errors.As(err, &me) && me.Reason != "" {
		return string(me.Reason)
	}
	return patch.Truncate(err.Error(), maxReasonLength)
}

// deleteInstanceFailedMetrics drops a gone Machine's failure counters.
func deleteInstanceFailedMetrics(name, namespace string) {
	for _, c := range []*prometheus.CounterVec{InstanceCreateFailed, InstanceUpdateFailed, InstanceDeleteFailed} {
		c.DeletePartialMatch(prometheus.Labels{"name": name, "namespace": namespace})
	}
}
