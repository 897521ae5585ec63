// Package metrics registers the operands' Prometheus collectors with
// controller-runtime's metrics registry, which every binary serves, and
// gives every binary (operator and operands) the options of its metrics
// server: HTTPS, authenticated and authorized by the API server
// (SecureServerOptions).
package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Register registers collectors with controller-runtime's metrics.Registry.
// A collector that is already registered is not an error, so a controller
// may call it every time it is constructed; any other error (a name clash
// between different collectors) is a programming error and panics.
func Register(collectors ...prometheus.Collector) {
	for _, c := range collectors {
		if err := ctrlmetrics.Registry.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				panic(err)
			}
		}
	}
}
