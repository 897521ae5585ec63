package safety

import "time"

// apiServerState is what the API-server check remembers between probes.
type apiServerState struct {
	// frozen: the machine controller creates and deletes no instances.
	frozen bool
	// downSince is when the first failed probe of the current outage
	// started (zero while reachable).
	downSince time.Time
}

// probeOutcome is the next state, when to probe again and what changed.
type probeOutcome struct {
	state         apiServerState
	next          time.Duration
	froze, thawed bool
}

// decideAPIServer folds one probe into the state, as machine-controller-
// manager does: a reachable API server thaws at once and is probed again
// after period; an unreachable one freezes once it has been down longer
// than timeout, and is probed every timeout/5 meanwhile (and while frozen,
// so that the thaw comes within seconds, where machine-controller-manager
// waits a period).
func decideAPIServer(s apiServerState, reachable bool, probedAt time.Time, period, timeout time.Duration) probeOutcome {
	if reachable {
		return probeOutcome{next: period, thawed: s.frozen}
	}
	next := max(timeout/5, 10*time.Millisecond)
	if s.downSince.IsZero() {
		s.downSince = probedAt
	}
	if !s.frozen && probedAt.Sub(s.downSince) > timeout {
		s.frozen = true
		return probeOutcome{state: s, next: next, froze: true}
	}
	return probeOutcome{state: s, next: next}
}
