package webhooks

import (
	"github.com/prometheus/client_golang/prometheus"

	mapimetrics "github.com/machine-api-operator/machine-api-operator/pkg/metrics"
)

// Values of the "result" label of RequestsTotal.
const (
	ResultAllowed = "allowed" // admitted unchanged
	ResultDenied  = "denied"  // refused by a check
	ResultPatched = "patched" // admitted with defaults added
	ResultError   = "error"   // the request could not be handled (undecodable object)
)

var (
	// RequestsTotal counts admission requests by webhook, operation and result.
	RequestsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "machine_api_webhook_requests_total",
		Help: "Admission requests handled by the Machine API webhooks, by webhook, operation and result (allowed, denied, patched, error).",
	}, []string{"webhook", "operation", "result"})

	// DenialsTotal counts refused requests by webhook.
	DenialsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "machine_api_webhook_denials_total",
		Help: "Admission requests refused by the Machine API webhooks, by webhook.",
	}, []string{"webhook"})
)

// RegisterMetrics registers the webhook metrics (again is fine).
func RegisterMetrics() {
	mapimetrics.Register(RequestsTotal, DenialsTotal)
}
