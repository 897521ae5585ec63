package machineset

import (
	"github.com/prometheus/client_golang/prometheus"

	mapimetrics "github.com/machine-api-operator/machine-api-operator/pkg/metrics"
)

// Values of the "result" label.
const (
	ResultSuccess = "success"
	ResultFailure = "failure"
)

// The per-MachineSet gauges (mapi_machine_set_status_replicas{,_available,
// _ready}, mapi_machine_set_spec_replicas) are served by the operator's
// collector (pkg/operator/collector), where OpenShift serves them, from the
// MachineSets' status this controller writes; serving them here too would
// make two series of each.

var (
	// MachineCreatesTotal counts Machine Create requests by result.
	MachineCreatesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "machine_api_machineset_machine_creates_total",
		Help: "Machine creations issued by the MachineSet controller, by result.",
	}, []string{"result"})
	// MachineDeletesTotal counts Machine Delete requests by result.
	MachineDeletesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "machine_api_machineset_machine_deletes_total",
		Help: "Machine deletions issued by the MachineSet controller, by result.",
	}, []string{"result"})
	// ExpectationTimeoutsTotal counts expected creations and deletions that
	// were not observed in the informer cache before the expectations
	// timeout and were dropped.
	ExpectationTimeoutsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "machine_api_machineset_expectation_timeouts_total",
		Help: "Expected Machine creations and deletions dropped because the cache did not show them in time.",
	})
)

// RegisterMetrics registers the controller's metrics with controller-runtime's
// metrics.Registry. It is safe to call many times (NewReconciler calls it).
func RegisterMetrics() {
	mapimetrics.Register(MachineCreatesTotal, MachineDeletesTotal, ExpectationTimeoutsTotal)
}
