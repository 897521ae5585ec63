package machinehealthcheck

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Remediation pacing (see the package documentation): a token bucket per
// MachineHealthCheck limits the rate of remediations, and an exponential
// backoff per remediation key (a MachineSet's Machines for deletion, a
// Machine for external remediation) delays repeated remediations. The
// decisions are the pure functions of rateLimit and backoffPolicy; pacing
// only holds their state.

// Pacing is off by default, as in OpenShift (docs/openshift.md). These are
// the values docs suggest when turning the rate limit on
// (--remediation-burst=10), and the default --remediation-interval.
const (
	SuggestedRemediationBurst  = 10
	DefaultRemediationInterval = time.Minute
)

// The backoff of repeated remediation of one key.
const (
	// RemediationBackoffBase is the delay of the second remediation of a
	// key in a streak; each further one doubles it.
	RemediationBackoffBase = time.Minute
	// RemediationBackoffMax caps the delay.
	RemediationBackoffMax = 30 * time.Minute
	// RemediationBackoffReset ends a streak: a key with no remediation for
	// this long starts afresh.
	RemediationBackoffReset = 2 * RemediationBackoffMax
)

// rateLimit is a token bucket's parameters: burst tokens at most, one more
// every interval. It is disabled when either is not positive.
type rateLimit struct {
	burst    int
	interval time.Duration
}

func (l rateLimit) enabled() bool { return l.burst > 0 && l.interval > 0 }

// bucket is a token bucket's state: tokens were available at stamp (and the
// next one comes at stamp+interval unless the bucket is full). The zero
// bucket is full.
type bucket struct {
	tokens int
	stamp  time.Time
}

// at returns b as of now: refilled by one token per whole interval since
// its stamp, at most to burst. A full bucket is stamped now (a full bucket
// does not save up refill time).
func (l rateLimit) at(b bucket, now time.Time) bucket {
	if b.stamp.IsZero() || b.tokens >= l.burst {
		return bucket{tokens: l.burst, stamp: now}
	}
	if now.Before(b.stamp) {
		return b // the clock went back: wait for it
	}
	k := int64(now.Sub(b.stamp) / l.interval)
	if k >= int64(l.burst-b.tokens) {
		return bucket{tokens: l.burst, stamp: now}
	}
	return bucket{tokens: b.tokens + int(k), stamp: b.stamp.Add(time.Duration(k) * l.interval)}
}

// check returns b as of now and how long until it holds a token (0: it
// holds one now).
func (l rateLimit) check(b bucket, now time.Time) (bucket, time.Duration) {
	b = l.at(b, now)
	if b.tokens > 0 {
		return b, 0
	}
	return b, b.stamp.Add(l.interval).Sub(now)
}

// take returns b as of now with one token taken (the caller checked that
// there was one).
func (l rateLimit) take(b bucket, now time.Time) bucket {
	b = l.at(b, now)
	if b.tokens > 0 {
		b.tokens--
	}
	return b
}

// full reports whether b is full as of now (its state can be forgotten).
func (l rateLimit) full(b bucket, now time.Time) bool {
	return l.at(b, now).tokens >= l.burst
}

// backoffPolicy is the backoff of repeated remediation of one key.
type backoffPolicy struct {
	base, max, reset time.Duration
}

var defaultBackoff = backoffPolicy{base: RemediationBackoffBase, max: RemediationBackoffMax, reset: RemediationBackoffReset}

// delay is the wait of a remediation that follows n remediations of its
// key in a streak: base, doubling with every one, at most max.
func (p backoffPolicy) delay(n int) time.Duration {
	d := p.base
	for i := 1; i < n && d < p.max; i++ {
		d *= 2
	}
	return min(d, p.max)
}

// backoffState is the remediation history of one key in its current
// streak.
type backoffState struct {
	// cause is the cause (verdict.Cause) of the streak's remediations.
	cause string
	// streak counts the remediations of the key in the streak (≥ 1).
	streak int
	// last is the latest remediation of the key.
	last time.Time
	// members, for a MachineSet key, are its Machines when the streak
	// began: they are not replacements, and their remediation does not
	// wait (a MachineSet losing several Machines at once is paced by the
	// rate limit only). Nil for a Machine key.
	members map[types.UID]bool
	// due records since when each waiting Machine of the key has been due
	// for remediation (its wait runs from then at the earliest).
	due map[types.UID]time.Time
}

// backoffClass classifies a remediation against its key's history.
type backoffClass int

const (
	// backoffFirst: no history, a history older than the reset window, or
	// a different cause: the remediation starts a new streak, no wait.
	backoffFirst backoffClass = iota
	// backoffMember: a Machine the MachineSet had when the streak began:
	// no wait, the streak goes on.
	backoffMember
	// backoffRepeat: a further remediation of the key for the same cause:
	// it waits.
	backoffRepeat
)

// dueSince is since when uid has been due (now if it was not seen before).
func (s *backoffState) dueSince(uid types.UID, now time.Time) time.Time {
	if s != nil {
		if d, ok := s.due[uid]; ok && d.Before(now) {
			return d
		}
	}
	return now
}

// classify classifies the remediation of Machine uid, due since due, for
// cause, against the key's history s (nil: none).
func (p backoffPolicy) classify(s *backoffState, uid types.UID, cause string, due time.Time) backoffClass {
	switch {
	case s == nil || s.streak == 0 || due.Sub(s.last) >= p.reset:
		return backoffFirst
	case s.members[uid]:
		return backoffMember
	case cause != s.cause:
		return backoffFirst
	}
	return backoffRepeat
}

// decide says when Machine uid of the key with history s may be remediated
// for cause at now: until (≤ now: at once) and the delay it waits (0: none).
// A repeated remediation waits delay(streak) after both the key's last
// remediation and the moment it became due.
func (p backoffPolicy) decide(s *backoffState, uid types.UID, cause string, now time.Time) (cls backoffClass, until time.Time, delay time.Duration) {
	due := s.dueSince(uid, now)
	cls = p.classify(s, uid, cause, due)
	if cls != backoffRepeat {
		return cls, now, 0
	}
	delay = p.delay(s.streak)
	start := due
	if s.last.After(start) {
		start = s.last
	}
	return cls, start.Add(delay), delay
}

// noteDue remembers that uid is due since now unless it already was.
func (s *backoffState) noteDue(uid types.UID, now time.Time) {
	if _, ok := s.due[uid]; ok {
		return
	}
	if s.due == nil {
		s.due = map[types.UID]time.Time{}
	}
	s.due[uid] = now
}

// record returns the key's history after Machine uid was remediated for
// cause at now. members (called only when a streak begins) lists the
// MachineSet's Machines for a MachineSet key, nil for a Machine key.
func (p backoffPolicy) record(s *backoffState, uid types.UID, cause string, now time.Time, members func() map[types.UID]bool) *backoffState {
	switch p.classify(s, uid, cause, s.dueSince(uid, now)) {
	case backoffFirst:
		var due map[types.UID]time.Time
		if s != nil {
			due = s.due
			delete(due, uid)
		}
		n := &backoffState{cause: cause, streak: 1, last: now, due: due}
		if members != nil {
			n.members = members()
		}
		return n
	case backoffMember:
		s.last = now
	case backoffRepeat:
		s.streak++
		s.last = now
	}
	delete(s.due, uid)
	return s
}

// prune forgets the due times of Machines not in seen (no longer waiting),
// and reports whether s can be forgotten: nothing waits and the streak is
// over.
func (p backoffPolicy) prune(s *backoffState, seen map[types.UID]bool, now time.Time) bool {
	for uid := range s.due {
		if !seen[uid] {
			delete(s.due, uid)
		}
	}
	return len(s.due) == 0 && now.Sub(s.last) >= p.reset
}

// mhcPacing is the pacing state of one MachineHealthCheck. It is used by
// that MachineHealthCheck's reconciles only, which the workqueue never runs
// concurrently.
type mhcPacing struct {
	bucket  bucket
	backoff map[string]*backoffState // by backoff key
}

// pacing holds the pacing state of every MachineHealthCheck, in memory.
type pacing struct {
	mu   sync.Mutex
	mhcs map[types.NamespacedName]*mhcPacing
}

func newPacing() *pacing {
	return &pacing{mhcs: map[types.NamespacedName]*mhcPacing{}}
}

// get returns mhc's state, creating it.
func (p *pacing) get(mhc types.NamespacedName) *mhcPacing {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.mhcs[mhc]
	if s == nil {
		s = &mhcPacing{backoff: map[string]*backoffState{}}
		p.mhcs[mhc] = s
	}
	return s
}

// done ends a remediation pass of mhc: it forgets the due times of the
// Machines not seen waiting in the pass, the histories that are over and,
// when nothing is left (a full bucket, no history), mhc's state.
func (p *pacing) done(mhc types.NamespacedName, s *mhcPacing, l rateLimit, b backoffPolicy, seen map[string]map[types.UID]bool, now time.Time) {
	for key, st := range s.backoff {
		if b.prune(st, seen[key], now) {
			delete(s.backoff, key)
		}
	}
	if len(s.backoff) == 0 && (!l.enabled() || l.full(s.bucket, now)) {
		p.forget(mhc)
	}
}

// forget drops mhc's state.
func (p *pacing) forget(mhc types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.mhcs, mhc)
}
