package nodemaintenance

import (
	"github.com/prometheus/client_golang/prometheus"

	nmv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"

	mapimetrics "github.com/machine-api-operator/machine-api-operator/pkg/metrics"
)

var (
	// PhaseGauge is 1 for the current phase of each NodeMaintenance.
	PhaseGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "machine_api_nodemaintenance_phase",
		Help: "Current phase of each NodeMaintenance (1 for the phase it is in).",
	}, []string{"name", "phase"})

	// PhaseTransitionsTotal counts phase transitions by the phase entered.
	PhaseTransitionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "machine_api_nodemaintenance_phase_transitions_total",
		Help: "NodeMaintenance phase transitions, by the phase entered.",
	}, []string{"phase"})

	// LeaseFailuresTotal counts failed attempts to take or keep a node lease.
	LeaseFailuresTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "machine_api_nodemaintenance_lease_failures_total",
		Help: "Failed attempts to take or keep a node lease, by reason (held: another holder has a valid lease; error: API error).",
	}, []string{"reason"})
)

// Values of the reason label of LeaseFailuresTotal.
const (
	LeaseFailureHeld  = "held"
	LeaseFailureError = "error"
)

// RegisterMetrics registers the metrics (idempotent; NewReconciler calls it).
func RegisterMetrics() {
	mapimetrics.Register(PhaseGauge, PhaseTransitionsTotal, LeaseFailuresTotal)
}

func setPhaseMetric(name string, phase nmv1beta1.MaintenancePhase) {
	for _, p := range []nmv1beta1.MaintenancePhase{nmv1beta1.MaintenanceRunning, nmv1beta1.MaintenanceSucceeded, nmv1beta1.MaintenanceFailed} {
		if p == phase {
			PhaseGauge.WithLabelValues(name, string(p)).Set(1)
		} else {
			PhaseGauge.DeleteLabelValues(name, string(p))
		}
	}
}

func forgetMetrics(name string) {
	PhaseGauge.DeletePartialMatch(prometheus.Labels{"name": name})
}
