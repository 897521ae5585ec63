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

var msLabels = []string{"name", "namespace"}

var (
	// StatusReplicas is status.replicas per MachineSet (OpenShift's name).
	StatusReplicas = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mapi_machine_set_status_replicas",
		Help: "Information about the current number of replicas of a MachineSet.",
	}, msLabels)
	// StatusReplicasAvailable is status.availableReplicas per MachineSet.
	StatusReplicasAvailable = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mapi_machine_set_status_replicas_available",
		Help: "Information about the number of available replicas of a MachineSet.",
	}, msLabels)
	// StatusReplicasReady is status.readyReplicas per MachineSet.
	StatusReplicasReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mapi_machine_set_status_replicas_ready",
		Help: "Information about the number of ready replicas of a MachineSet.",
	}, msLabels)
	// SpecReplicas is spec.replicas per MachineSet.
	SpecReplicas = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mapi_machine_set_spec_replicas",
		Help: "The desired number of replicas of a MachineSet.",
	}, msLabels)

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
	mapimetrics.Register(StatusReplicas, StatusReplicasAvailable, StatusReplicasReady, SpecReplicas, MachineCreatesTotal, MachineDeletesTotal, ExpectationTimeoutsTotal)
}

// setMachineSetMetrics sets the per-MachineSet gauges.
func setMachineSetMetrics(name, namespace string, spec *int32, replicas, ready, available int32) {
	if spec != nil {
		SpecReplicas.WithLabelValues(name, namespace).Set(float64(*spec))
	} else {
		SpecReplicas.DeleteLabelValues(name, namespace)
	}
	StatusReplicas.WithLabelValues(name, namespace).Set(float64(replicas))
	StatusReplicasReady.WithLabelValues(name, namespace).Set(float64(ready))
	StatusReplicasAvailable.WithLabelValues(name, namespace).Set(float64(available))
}

// deleteMachineSetMetrics drops the per-MachineSet gauges.
func deleteMachineSetMetrics(name, namespace string) {
	for _, g := range []*prometheus.GaugeVec{StatusReplicas, StatusReplicasAvailable, StatusReplicasReady, SpecReplicas} {
		g.DeleteLabelValues(name, namespace)
	}
}
