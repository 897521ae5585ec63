package kubemark

import (
	"math"
	"time"

	kubemarkv1alpha1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/kubemark/v1alpha1"
)

// HealthWindow is the node's simulated health at some moment: the spell it is in, from Since (registration
// or failure) until Until (the next change; zero: never).
type HealthWindow struct {
	Healthy      bool // the node is to be kept Ready
	Since, Until time.Time
}

// HealthAt is the health schedule (docs/kubemark.md): given the defaulted policy, when the node registered and
// now, whether the node is healthy and when that changes. Times before registration are the first healthy spell.
func HealthAt(policy kubemarkv1alpha1.HealthPolicy, registeredAt, now time.Time) HealthWindow {
	var after time.Duration
	if policy.UnhealthyAfter != nil {
		after = policy.UnhealthyAfter.Duration
	}
	if after <= 0 {
		return HealthWindow{Healthy: true, Since: registeredAt}
	}
	if policy.Mode != kubemarkv1alpha1.HealthModePeriodic {
		failAt := registeredAt.Add(after)
		if now.Before(failAt) {
			return HealthWindow{Healthy: true, Since: registeredAt, Until: failAt}
		}
		return HealthWindow{Healthy: false, Since: failAt}
	}

	spell := after
	if policy.UnhealthyFor != nil && policy.UnhealthyFor.Duration > 0 {
		spell = policy.UnhealthyFor.Duration
	}
	elapsed := now.Sub(registeredAt)
	if elapsed < 0 {
		return HealthWindow{Healthy: true, Since: registeredAt, Until: registeredAt.Add(after)}
	}
	cycle := after + spell
	if cycle <= 0 { // overflow: durations of centuries
		cycle = math.MaxInt64
	}
	start := registeredAt.Add(elapsed / cycle * cycle)
	failAt := start.Add(after)
	if now.Before(failAt) {
		return HealthWindow{Healthy: true, Since: start, Until: failAt}
	}
	return HealthWindow{Healthy: false, Since: failAt, Until: start.Add(cycle)}
}
