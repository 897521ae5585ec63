// Package metrics registers the operands' Prometheus collectors with
// controller-runtime's metrics registry, which every operand binary serves.
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
