// Package metrics registers collectors with controller-runtime's registry and
// gives every binary its metrics server's options (SecureServerOptions).
package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Register registers collectors with controller-runtime's metrics.Registry;
// registering one again is fine, a name clash panics (a programming error).
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
