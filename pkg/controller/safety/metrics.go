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
		Help: "Provider instances deleted because they carry this project's ownership mark and no Machine owns them.",
	})

	// OrphanInstancesDryRunTotal counts orphans reported, not deleted, under --machine-safety-orphan-vms-dry-run.
	OrphanInstancesDryRunTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "machine_api_orphan_instances_dry_run_total",
		Help: "Orphan provider instances that would have been deleted, reported only because --machine-safety-orphan-vms-dry-run is set.",
	})

	// OrphanInstancesDeferredTotal counts orphans left for a later pass by --machine-safety-orphan-vms-max-deletions.
	OrphanInstancesDeferredTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "machine_api_orphan_instances_deferred_total",
		Help: "Orphan provider instances left for a later pass because the pass reached --machine-safety-orphan-vms-max-deletions.",
	})
)

// RegisterMetrics registers the package's metrics (idempotent).
func RegisterMetrics() {
	mapimetrics.Register(MachineControllerFrozen, OrphanInstancesDeletedTotal, OrphanInstancesDryRunTotal, OrphanInstancesDeferredTotal)
}
