package safety

import (
	"github.com/prometheus/client_golang/prometheus"

	mapimetrics "github.com/machine-api-operator/machine-api-operator/pkg/metrics"
)

var (
	// MachineControllerFrozen is 1 while the API-server freeze holds
	// (machine-controller-manager's mcm_machine_controller_frozen).
	MachineControllerFrozen = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "machine_api_machine_controller_frozen",
		Help: "1 while the machine controller creates and deletes no instances because the API server has been unreachable longer than the timeout.",
	})

	// OrphanInstancesDeletedTotal counts instances deleted because no Machine owned them.
	OrphanInstancesDeletedTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "machine_api_orphan_instances_deleted_total",
		Help: "Provider instances deleted because no Machine owned them.",
	})
)

// RegisterMetrics registers the package's metrics (idempotent).
func RegisterMetrics() {
	mapimetrics.Register(MachineControllerFrozen, OrphanInstancesDeletedTotal)
}
