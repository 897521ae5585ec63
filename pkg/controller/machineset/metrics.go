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

// The per-MachineSet gauges (mapi_machine_set_*) are the operator's
// collector's, as on OpenShift: here they would make two series of each.
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
	// ExpectationTimeoutsTotal counts expectations dropped at their timeout.
	ExpectationTimeoutsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "machine_api_machineset_expectation_timeouts_total",
		Help: "Expected Machine creations and deletions dropped because the cache did not show them in time.",
	})
)

// RegisterMetrics registers the metrics with controller-runtime's registry;
// calling it again is safe.
func RegisterMetrics() {
	mapimetrics.Register(MachineCreatesTotal, MachineDeletesTotal, ExpectationTimeoutsTotal)
}
