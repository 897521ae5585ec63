package machinedeployment

import (
	"github.com/prometheus/client_golang/prometheus"

	mapimetrics "github.com/machine-api-operator/machine-api-operator/pkg/metrics"
)

// Values of the "direction" label.
const (
	DirectionUp   = "up"
	DirectionDown = "down"
)

// Values of the "kind" label of RolloutsTotal.
const (
	RolloutNew      = "new"
	RolloutRollback = "rollback"
)

var (
	// RolloutsTotal counts rollouts started (a new MachineSet, or a rollback).
	RolloutsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "machine_api_machinedeployment_rollouts_total",
		Help: "Rollouts started by the MachineDeployment controller: a new MachineSet created (kind=new) or an old one reused (kind=rollback).",
	}, []string{"kind"})
	// ScaleActionsTotal counts MachineSet replica changes by direction.
	ScaleActionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "machine_api_machinedeployment_machineset_scales_total",
		Help: "MachineSet replica changes written by the MachineDeployment controller, by direction.",
	}, []string{"direction"})
)

// RegisterMetrics registers the metrics (idempotent; NewReconciler calls it).
func RegisterMetrics() {
	mapimetrics.Register(RolloutsTotal, ScaleActionsTotal)
}
