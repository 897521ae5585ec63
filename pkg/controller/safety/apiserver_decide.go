package safety

import "time"

// apiServerState is what the API-server check remembers between probes:
// downSince is the first failed probe of the current outage (zero while reachable).
type apiServerState struct {
	frozen    bool
	downSince time.Time
}

// probeOutcome is the next state, when to probe again and what changed.
type probeOutcome struct {
	state         apiServerState
	next          time.Duration
	froze, thawed bool
}

// decideAPIServer folds one probe into the state: reachable thaws at once; unreachable
// freezes once down longer than timeout, probing every timeout/5 (docs/safety.md).
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
