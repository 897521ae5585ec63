package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRegisterIsIdempotent(t *testing.T) {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "machine_api_test_register_total", Help: "test"})
	Register(c)
	Register(c) // the same collector again: no panic
	defer func() {
		if recover() == nil {
			t.Error("a different collector with the same name did not panic")
		}
	}()
	Register(prometheus.NewGauge(prometheus.GaugeOpts{Name: "machine_api_test_register_total", Help: "other"}))
}
