package machinehealthcheck

import (
	"github.com/prometheus/client_golang/prometheus"

	mapimetrics "github.com/machine-api-operator/machine-api-operator/pkg/metrics"
)

var mhcLabels = []string{"name", "namespace"}

var (
	// NodesCovered is the number of Machines a MachineHealthCheck covers
	// (status.expectedMachines; OpenShift's name).
	NodesCovered = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mapi_machinehealthcheck_nodes_covered",
		Help: "Number of nodes (machines) covered by a MachineHealthCheck.",
	}, mhcLabels)
	// RemediationSuccessTotal counts successful remediations (a Machine
	// deleted or an external remediation request created).
	RemediationSuccessTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mapi_machinehealthcheck_remediation_success_total",
		Help: "Number of successful remediations performed by a MachineHealthCheck.",
	}, mhcLabels)
	// RemediationRateLimitedTotal counts the remediations the rate limit
	// held back: each Machine once per wait (not once per reconcile).
	RemediationRateLimitedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mapi_machinehealthcheck_remediation_rate_limited_total",
		Help: "Number of remediations held back by the remediation rate limit (--remediation-burst, --remediation-interval), each Machine counted once per wait.",
	}, mhcLabels)
	// RemediationBackoffTotal counts the repeated remediations the backoff
	// delayed: each Machine once per wait.
	RemediationBackoffTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mapi_machinehealthcheck_remediation_backoff_total",
		Help: "Number of repeated remediations (of the same MachineSet's Machines, or of the same Machine) delayed by the backoff, each Machine counted once per wait.",
	}, mhcLabels)
	// ShortCircuit is 1 while a MachineHealthCheck has more unhealthy
	// Machines than maxUnhealthy allows, else 0.
	ShortCircuit = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mapi_machinehealthcheck_short_circuit",
		Help: "1 while remediation is short-circuited because maxUnhealthy is exceeded, else 0.",
	}, mhcLabels)
)

// RegisterMetrics registers the controller's metrics with controller-runtime's
// metrics.Registry. It is safe to call many times (NewReconciler calls it).
func RegisterMetrics() {
	mapimetrics.Register(NodesCovered, RemediationSuccessTotal, RemediationRateLimitedTotal, RemediationBackoffTotal, ShortCircuit)
}

func setMetrics(name, namespace string, covered int, shortCircuit bool) {
	NodesCovered.WithLabelValues(name, namespace).Set(float64(covered))
	v := 0.0
	if shortCircuit {
		v = 1
	}
	ShortCircuit.WithLabelValues(name, namespace).Set(v)
}

func deleteMetrics(name, namespace string) {
	NodesCovered.DeleteLabelValues(name, namespace)
	ShortCircuit.DeleteLabelValues(name, namespace)
	RemediationSuccessTotal.DeleteLabelValues(name, namespace)
	RemediationRateLimitedTotal.DeleteLabelValues(name, namespace)
	RemediationBackoffTotal.DeleteLabelValues(name, namespace)
}
