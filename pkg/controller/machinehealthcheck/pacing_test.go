package machinehealthcheck

import (
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestRateLimit(t *testing.T) {
	l := rateLimit{burst: 2, interval: time.Minute}
	type step struct {
		at       time.Duration // from t0
		take     bool          // take a token (it must be there); else only check
		wantWait time.Duration // check: the wait before a token is there
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "burst at once, then one per interval, requeue at the exact next token", steps: []step{
			{at: 0, take: true}, {at: 0, take: true},
			{at: 0, wantWait: time.Minute},
			{at: 30 * time.Second, wantWait: 30 * time.Second},
			{at: time.Minute, take: true},
			{at: time.Minute, wantWait: time.Minute},
			{at: 2*time.Minute + 59*time.Second, take: true}, // refilled at 2m; the next comes at 3m
			{at: 2*time.Minute + 59*time.Second, wantWait: time.Second},
		}},
		{name: "a partial refill keeps its phase", steps: []step{
			{at: 0, take: true}, {at: 0, take: true},
			{at: 90 * time.Second, take: true},
			{at: 90 * time.Second, wantWait: 30 * time.Second},
		}},
		{name: "a full bucket does not save up refill time", steps: []step{
			{at: 0, take: true},
			{at: time.Hour, take: true}, {at: time.Hour, take: true},
			{at: time.Hour, wantWait: time.Minute},
		}},
		{name: "a long pause refills to the burst only", steps: []step{
			{at: 0, take: true}, {at: 0, take: true},
			{at: 10 * time.Minute, take: true}, {at: 10 * time.Minute, take: true},
			{at: 10 * time.Minute, wantWait: time.Minute},
		}},
		{name: "the clock going back does not refill", steps: []step{
			{at: time.Minute, take: true}, {at: time.Minute, take: true},
			{at: 0, wantWait: 2 * time.Minute},
			{at: 2 * time.Minute, take: true},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bucket
			for i, s := range tc.steps {
				now := t0.Add(s.at)
				var wait time.Duration
				b, wait = l.check(b, now)
				if s.take {
					if wait != 0 {
						t.Fatalf("step %d (%s): no token, wait %s", i, s.at, wait)
					}
					b = l.take(b, now)
					continue
				}
				if wait != s.wantWait {
					t.Errorf("step %d (%s): wait %s, want %s", i, s.at, wait, s.wantWait)
				}
			}
		})
	}
	if (rateLimit{burst: 0, interval: time.Minute}).enabled() || (rateLimit{burst: 3}).enabled() || !l.enabled() {
		t.Error("enabled() wrong: burst 0 or interval 0 disables")
	}
	if !l.full(bucket{}, t0) || l.full(l.take(bucket{}, t0), t0) || !l.full(l.take(bucket{}, t0), t0.Add(time.Minute)) {
		t.Error("full() wrong")
	}
}

func TestBackoffDelay(t *testing.T) {
	want := []time.Duration{1: time.Minute, 2: 2 * time.Minute, 3: 4 * time.Minute, 4: 8 * time.Minute, 5: 16 * time.Minute, 6: 30 * time.Minute, 7: 30 * time.Minute}
	for n := 1; n < len(want); n++ {
		if got := defaultBackoff.delay(n); got != want[n] {
			t.Errorf("delay(%d) = %s, want %s", n, got, want[n])
		}
	}
	if got := defaultBackoff.delay(1000); got != RemediationBackoffMax {
		t.Errorf("delay(1000) = %s", got)
	}
	if RemediationBackoffReset != 2*RemediationBackoffMax {
		t.Error("the reset window is not twice the maximum delay")
	}
}

// TestBackoff runs remediation histories of one key through decide and
// record.
func TestBackoff(t *testing.T) {
	const (
		startup = CauseNodeStartupTimeout
		failed  = CauseFailed
		gone    = CauseNodeGone
	)
	type step struct {
		at      time.Duration // from t0
		machine string
		cause   string
		// remediate: the remediation must be allowed now, and is recorded.
		// Otherwise the Machine is checked: wantClass and wantWait.
		remediate bool
		wantClass backoffClass
		wantWait  time.Duration
	}
	tests := []struct {
		name string
		// members are the MachineSet's Machines when a streak begins; nil
		// for a Machine key (external remediation).
		members []string
		steps   []step
	}{
		{name: "broken template: every replacement waits longer, from when it is due", members: []string{"m1", "m2"}, steps: []step{
			{at: 0, machine: "m1", cause: startup, remediate: true},
			{at: 10 * time.Minute, machine: "r1", cause: startup, wantClass: backoffRepeat, wantWait: time.Minute},
			{at: 10*time.Minute + 20*time.Second, machine: "r1", cause: startup, wantClass: backoffRepeat, wantWait: 40 * time.Second},
			{at: 11 * time.Minute, machine: "r1", cause: startup, remediate: true},
			{at: 21 * time.Minute, machine: "r2", cause: startup, wantClass: backoffRepeat, wantWait: 2 * time.Minute},
			{at: 23 * time.Minute, machine: "r2", cause: startup, remediate: true},
			{at: 33 * time.Minute, machine: "r3", cause: startup, wantClass: backoffRepeat, wantWait: 4 * time.Minute},
		}},
		{name: "Machines the MachineSet had when the streak began do not wait", members: []string{"m1", "m2", "m3"}, steps: []step{
			{at: 0, machine: "m1", cause: failed, remediate: true},
			{at: 0, machine: "m2", cause: failed, wantClass: backoffMember},
			{at: 0, machine: "m2", cause: failed, remediate: true},
			{at: time.Minute, machine: "m3", cause: gone, wantClass: backoffMember},
			{at: time.Minute, machine: "m3", cause: gone, remediate: true},
			// A replacement waits.
			{at: 90 * time.Second, machine: "r1", cause: failed, wantClass: backoffRepeat, wantWait: time.Minute},
		}},
		{name: "replacements due at once are spaced by growing delays", members: []string{"m1"}, steps: []step{
			{at: 0, machine: "m1", cause: failed, remediate: true},
			{at: 5 * time.Minute, machine: "r1", cause: failed, wantClass: backoffRepeat, wantWait: time.Minute},
			{at: 5 * time.Minute, machine: "r2", cause: failed, wantClass: backoffRepeat, wantWait: time.Minute},
			{at: 5 * time.Minute, machine: "r3", cause: failed, wantClass: backoffRepeat, wantWait: time.Minute},
			{at: 6 * time.Minute, machine: "r1", cause: failed, remediate: true},
			{at: 6 * time.Minute, machine: "r2", cause: failed, wantClass: backoffRepeat, wantWait: 2 * time.Minute},
			{at: 8 * time.Minute, machine: "r2", cause: failed, remediate: true},
			{at: 8 * time.Minute, machine: "r3", cause: failed, wantClass: backoffRepeat, wantWait: 4 * time.Minute},
		}},
		{name: "a different cause starts a new streak", members: []string{"m1"}, steps: []step{
			{at: 0, machine: "m1", cause: failed, remediate: true},
			{at: 5 * time.Minute, machine: "r1", cause: gone, wantClass: backoffFirst},
			{at: 5 * time.Minute, machine: "r1", cause: gone, remediate: true},
			{at: 6 * time.Minute, machine: "r2", cause: gone, wantClass: backoffRepeat, wantWait: time.Minute},
		}},
		{name: "no remediation for the reset window ends the streak", members: []string{"m1"}, steps: []step{
			{at: 0, machine: "m1", cause: failed, remediate: true},
			{at: 10 * time.Minute, machine: "r1", cause: failed, remediate: false, wantClass: backoffRepeat, wantWait: time.Minute},
			{at: 11 * time.Minute, machine: "r1", cause: failed, remediate: true},
			{at: 11*time.Minute + RemediationBackoffReset - time.Second, machine: "r2", cause: failed, wantClass: backoffRepeat, wantWait: 2 * time.Minute},
			// r3 became due only after the window: a new streak.
			{at: 11*time.Minute + RemediationBackoffReset, machine: "r3", cause: failed, wantClass: backoffFirst},
			{at: 11*time.Minute + RemediationBackoffReset, machine: "r3", cause: failed, remediate: true},
			{at: 12*time.Minute + RemediationBackoffReset, machine: "r4", cause: failed, wantClass: backoffRepeat, wantWait: time.Minute},
		}},
		{name: "the delay is capped", members: []string{}, steps: []step{
			{at: 0, machine: "a", cause: failed, remediate: true},
			{at: 0, machine: "b", cause: failed, wantClass: backoffRepeat, wantWait: time.Minute},
			{at: 1 * time.Minute, machine: "b", cause: failed, remediate: true},
			{at: 1 * time.Minute, machine: "c", cause: failed, wantClass: backoffRepeat, wantWait: 2 * time.Minute},
			{at: 3 * time.Minute, machine: "c", cause: failed, remediate: true},
			{at: 3 * time.Minute, machine: "d", cause: failed, wantClass: backoffRepeat, wantWait: 4 * time.Minute},
			{at: 7 * time.Minute, machine: "d", cause: failed, remediate: true},
			{at: 7 * time.Minute, machine: "e", cause: failed, wantClass: backoffRepeat, wantWait: 8 * time.Minute},
			{at: 15 * time.Minute, machine: "e", cause: failed, remediate: true},
			{at: 15 * time.Minute, machine: "f", cause: failed, wantClass: backoffRepeat, wantWait: 16 * time.Minute},
			{at: 31 * time.Minute, machine: "f", cause: failed, remediate: true},
			{at: 31 * time.Minute, machine: "g", cause: failed, wantClass: backoffRepeat, wantWait: 30 * time.Minute},
			{at: 61 * time.Minute, machine: "g", cause: failed, remediate: true},
			{at: 61 * time.Minute, machine: "h", cause: failed, wantClass: backoffRepeat, wantWait: 30 * time.Minute},
		}},
		{name: "external remediation: the same Machine unhealthy again", steps: []step{
			{at: 0, machine: "m", cause: failed, remediate: true},
			{at: 5 * time.Minute, machine: "m", cause: failed, wantClass: backoffRepeat, wantWait: time.Minute},
			{at: 6 * time.Minute, machine: "m", cause: failed, remediate: true},
			{at: 20 * time.Minute, machine: "m", cause: failed, wantClass: backoffRepeat, wantWait: 2 * time.Minute},
			{at: 22 * time.Minute, machine: "m", cause: failed, remediate: true},
			{at: 23 * time.Minute, machine: "m", cause: CauseNodeConditionPrefix + "Ready", wantClass: backoffFirst},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var members func() map[types.UID]bool
			if tc.members != nil {
				members = func() map[types.UID]bool {
					set := map[types.UID]bool{}
					for _, m := range tc.members {
						set[types.UID(m)] = true
					}
					return set
				}
			}
			var s *backoffState
			for i, st := range tc.steps {
				now := t0.Add(st.at)
				uid := types.UID(st.machine)
				if s != nil {
					s.noteDue(uid, now)
				}
				cls, until, _ := defaultBackoff.decide(s, uid, st.cause, now)
				wait := max(until.Sub(now), 0)
				if st.remediate {
					if wait != 0 {
						t.Fatalf("step %d (%s at %s): must wait %s", i, st.machine, st.at, wait)
					}
					s = defaultBackoff.record(s, uid, st.cause, now, members)
					if _, ok := s.due[uid]; ok {
						t.Errorf("step %d: %s still due after its remediation", i, st.machine)
					}
					continue
				}
				if cls != st.wantClass || wait != st.wantWait {
					t.Errorf("step %d (%s at %s): class %d wait %s, want class %d wait %s", i, st.machine, st.at, cls, wait, st.wantClass, st.wantWait)
				}
			}
		})
	}
}

func TestBackoffPrune(t *testing.T) {
	s := defaultBackoff.record(nil, "m1", CauseFailed, t0, nil)
	s.noteDue("a", t0.Add(time.Minute))
	s.noteDue("b", t0.Add(time.Minute))
	if defaultBackoff.prune(s, map[types.UID]bool{"a": true}, t0.Add(2*time.Minute)) {
		t.Error("a waiting Machine's history was dropped")
	}
	if _, ok := s.due["b"]; ok {
		t.Error("b (no longer waiting) is still due")
	}
	if defaultBackoff.prune(s, map[types.UID]bool{"a": true}, t0.Add(RemediationBackoffReset)) {
		t.Error("dropped while a Machine waits")
	}
	if !defaultBackoff.prune(s, nil, t0.Add(RemediationBackoffReset)) {
		t.Error("an over streak with nothing waiting is kept")
	}
	if defaultBackoff.prune(defaultBackoff.record(nil, "m1", CauseFailed, t0, nil), nil, t0.Add(RemediationBackoffReset-time.Second)) {
		t.Error("a streak inside its window was dropped")
	}
}

func TestAssessCause(t *testing.T) {
	p := healthParams{conditions: unhealthyConditions, startupTimeout: time.Minute}
	tests := []struct {
		machine *machinev1beta1.Machine
		node    *corev1.Node
		want    string
	}{
		{testMachine(func(m *machinev1beta1.Machine) { m.Status.Phase = ptr.To(machinev1beta1.PhaseFailed) }), testNode(), CauseFailed},
		{testMachine(), nil, CauseNodeGone},
		{testMachine(func(m *machinev1beta1.Machine) { m.Status.NodeRef = nil }), nil, CauseNodeStartupTimeout},
		{testMachine(), testNode(cond(corev1.NodeReady, corev1.ConditionFalse, t0.Add(-time.Hour))), CauseNodeConditionPrefix + "Ready"},
		{testMachine(), testNode(cond(corev1.NodeReady, corev1.ConditionUnknown, t0.Add(-time.Hour))), CauseNodeConditionPrefix + "Ready"},
	}
	for _, tc := range tests {
		if got := assess(tc.machine, tc.node, p, t0); got.Health != Unhealthy || got.Cause != tc.want {
			t.Errorf("assess = %v %q (%s), want Unhealthy %q", got.Health, got.Cause, got.Reason, tc.want)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o  Options
		ok bool
	}{
		{Options{}, true},
		{Options{RemediationBurst: SuggestedRemediationBurst, RemediationInterval: DefaultRemediationInterval}, true},
		{Options{RemediationBurst: 0, RemediationInterval: 0}, true},
		{Options{RemediationBurst: -1, RemediationInterval: time.Minute}, false},
		{Options{RemediationBurst: 1}, false},
		{Options{NodeStartupTimeoutFrom: StartupFromLastUpdated}, true},
		{Options{NodeStartupTimeoutFrom: StartupFromCreation}, true},
		{Options{NodeStartupTimeoutFrom: "lastupdated"}, false},
	} {
		if err := tc.o.Validate(); (err == nil) != tc.ok {
			t.Errorf("Validate(%+v) = %v", tc.o, err)
		}
	}
}

func TestUnhealthyOldestFirst(t *testing.T) {
	mk := func(name string, age time.Duration, h Health) target {
		return target{machine: &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(-age))}},
			verdict: verdict{Health: h}}
	}
	got := unhealthyOldestFirst([]target{mk("c", time.Hour, Unhealthy), mk("b", 2*time.Hour, Unhealthy), mk("ok", 3*time.Hour, Healthy), mk("a", time.Hour, Unhealthy)})
	var names []string
	for _, t := range got {
		names = append(names, t.machine.Name)
	}
	if want := []string{"b", "a", "c"}; len(names) != 3 || names[0] != want[0] || names[1] != want[1] || names[2] != want[2] {
		t.Errorf("order %v, want %v", names, want)
	}
}
