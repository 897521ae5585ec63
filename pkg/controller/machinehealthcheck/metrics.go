package machinehealthcheck

import (
	"github.com/prometheus/client_golang/prometheus"

	mapimetrics "github.com/machine-api-operator/machine-api-operator/pkg/metrics"
)

var mhcLabels = []string{"name", "namespace"}

var (
	// NodesCovered is status.expectedMachines (OpenShift's name).
	NodesCovered = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mapi_machinehealthcheck_nodes_covered",
		Help: "Number of nodes (machines) covered by a MachineHealthCheck.",
	}, mhcLabels)
	// RemediationSuccessTotal counts Machines deleted and requests created.
	RemediationSuccessTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mapi_machinehealthcheck_remediation_success_total",
		Help: "Number of successful remediations performed by a MachineHealthCheck.",
	}, mhcLabels)
	// RemediationRateLimitedTotal counts each Machine once per rate-limit wait.
	RemediationRateLimitedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mapi_machinehealthcheck_remediation_rate_limited_total",
		Help: "Number of remediations held back by the remediation rate limit (--remediation-burst, --remediation-interval), each Machine counted once per wait.",
	}, mhcLabels)
	// RemediationBackoffTotal counts each Machine once per backoff wait.
	RemediationBackoffTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mapi_machinehealthcheck_remediation_backoff_total",
		Help: "Number of repeated remediations (of the same MachineSet's Machines, or of the same Machine) delayed by the backoff, each Machine counted once per wait.",
	}, mhcLabels)
	// ShortCircuit is 1 while maxUnhealthy is exceeded, else 0.
	ShortCircuit = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mapi_machinehealthcheck_short_circuit",
		Help: "1 while remediation is short-circuited because maxUnhealthy is exceeded, else 0.",
	}, mhcLabels)
)

// RegisterMetrics registers the metrics (idempotent; NewReconciler calls it).
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
	for _, v := range []interface{ DeleteLabelValues(...string) bool }{
		NodesCovered, ShortCircuit, RemediationSuccessTotal, RemediationRateLimitedTotal, RemediationBackoffTotal} {
		v.DeleteLabelValues(name, namespace)
	}
}
