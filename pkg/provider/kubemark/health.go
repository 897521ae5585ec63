package kubemark

import (
	"math"
	"time"

	kubemarkv1alpha1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/kubemark/v1alpha1"
)

// HealthWindow is the node's simulated health at some moment: the spell it is
// in and when that spell started and ends.
type HealthWindow struct {
	// Healthy is true when the node is to be kept Ready.
	Healthy bool
	// Since is when the current spell began: the registration time for the
	// first healthy spell, the failure time for an unhealthy one.
	Since time.Time
	// Until is when the current spell ends and the health changes next; zero
	// when it never changes again.
	Until time.Time
}

// HealthAt is the health schedule: given the policy (defaulted), when the
// node registered and the time now, it says whether the node is healthy and
// when that changes next. It is a pure function; times before registration
// count as the first healthy spell.
//
//   - unhealthyAfter 0: healthy for ever.
//   - Once: healthy during [registeredAt, registeredAt+unhealthyAfter),
//     unhealthy for ever after.
//   - Periodic: cycles of unhealthyAfter healthy then unhealthyFor unhealthy,
//     starting at registeredAt.
func HealthAt(policy kubemarkv1alpha1.HealthPolicy, registeredAt, now time.Time) HealthWindow {
	var after, spell time.Duration
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

	spell = after
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
