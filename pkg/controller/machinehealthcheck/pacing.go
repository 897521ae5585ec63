package machinehealthcheck

import (
	"context"
	"fmt"
	"maps"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
)

// Remediation pacing, off by default as in OpenShift (docs/openshift.md): a token bucket
// per MachineHealthCheck and a backoff per key, applied by a pacingPass.

// The suggested --remediation-burst and the default --remediation-interval.
const (
	SuggestedRemediationBurst  = 10
	DefaultRemediationInterval = time.Minute
)

// The backoff of one key: Base delays a streak's second remediation, each further one
// doubles it up to Max; a key with no remediation for Reset starts afresh.
const (
	RemediationBackoffBase  = time.Minute
	RemediationBackoffMax   = 30 * time.Minute
	RemediationBackoffReset = 2 * RemediationBackoffMax
)

// rateLimit is a token bucket: burst tokens at most, one more every interval;
// disabled when either is not positive.
type rateLimit struct {
	burst    int
	interval time.Duration
}

func (l rateLimit) enabled() bool { return l.burst > 0 && l.interval > 0 }

// bucket is a token bucket's state: tokens at stamp (the next comes at
// stamp+interval unless full). The zero bucket is full.
type bucket struct {
	tokens int
	stamp  time.Time
}

// at returns b as of now: one token more per whole interval since its stamp,
// at most burst; a full bucket is stamped now (it saves up no refill time).
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

// check returns b as of now and how long until it holds a token (0: now).
func (l rateLimit) check(b bucket, now time.Time) (bucket, time.Duration) {
	b = l.at(b, now)
	if b.tokens > 0 {
		return b, 0
	}
	return b, b.stamp.Add(l.interval).Sub(now)
}

// take returns b as of now with one token taken.
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

// delay is the wait after n remediations in a streak: base, doubling, at most max.
func (p backoffPolicy) delay(n int) time.Duration {
	d := p.base
	for i := 1; i < n && d < p.max; i++ {
		d *= 2
	}
	return min(d, p.max)
}

// backoffState is one key's history in its current streak: streak (≥ 1)
// remediations for cause, the last at last.
type backoffState struct {
	cause  string
	streak int
	last   time.Time
	// members (MachineSet key only) are its Machines when the streak began:
	// not replacements, so they do not wait (the rate limit paces them).
	members map[types.UID]bool
	// due is since when each waiting Machine has been due (its wait runs from then).
	due map[types.UID]time.Time
}

// backoffClass classifies a remediation against its key's history.
type backoffClass int

const (
	backoffFirst  backoffClass = iota // no (recent) history or another cause: a new streak, no wait
	backoffMember                     // a Machine the MachineSet had when the streak began: no wait
	backoffRepeat                     // a further remediation for the same cause: it waits
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

// decide says when Machine uid may be remediated for cause (until ≤ now: at once): a
// repeat waits delay(streak) after both the last remediation and its becoming due.
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
	if s.due == nil {
		s.due = map[types.UID]time.Time{}
	}
	if _, ok := s.due[uid]; !ok {
		s.due[uid] = now
	}
}

// record returns the key's history after Machine uid was remediated for
// cause at now; members (nil for a Machine key) is called when a streak begins.
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

// prune forgets the due times of Machines not in seen and reports whether s
// can be forgotten (nothing waits, the streak is over).
func (p backoffPolicy) prune(s *backoffState, seen map[types.UID]bool, now time.Time) bool {
	maps.DeleteFunc(s.due, func(uid types.UID, _ time.Time) bool { return !seen[uid] })
	return len(s.due) == 0 && now.Sub(s.last) >= p.reset
}

// mhcPacing is one MachineHealthCheck's pacing state, used by its reconciles
// only (never concurrent).
type mhcPacing struct {
	bucket  bucket
	backoff map[string]*backoffState // by backoff key
}

// backoffKey names what the backoff counts remediations of: a controller
// owner (MachineSet) for deletion, a Machine for external remediation.
type backoffKey struct {
	id      string                    // in mhcPacing.backoff
	what    string                    // in event notes: "MachineSet ms", "Machine m"
	members func() map[types.UID]bool // the owner's Machines (nil for a Machine key)
}

// machineBackoffKey is the key of external remediation: the Machine itself.
func machineBackoffKey(m *machinev1beta1.Machine) backoffKey {
	return backoffKey{id: "Machine/" + string(m.UID), what: "Machine " + m.Name}
}

// pacingPass applies the pacing to one remediation pass: it admits and
// records remediations and collects when the held-back ones may go ahead.
type pacingPass struct {
	r       *Reconciler
	ctx     context.Context
	mhc     *machinev1beta1.MachineHealthCheck
	key     types.NamespacedName
	now     time.Time
	targets []target
	state   *mhcPacing
	seen    map[string]map[types.UID]bool // per backoff key, the Machines checked (due times kept)
	wait    time.Duration                 // until the first held-back one may go; 0: none

	rateLimited []string
}

func (r *Reconciler) newPacingPass(ctx context.Context, mhc *machinev1beta1.MachineHealthCheck, targets []target, now time.Time) *pacingPass {
	key := client.ObjectKeyFromObject(mhc)
	state, _ := r.pacing.LoadOrStore(key, &mhcPacing{backoff: map[string]*backoffState{}})
	return &pacingPass{r: r, ctx: ctx, mhc: mhc, key: key, now: now, targets: targets,
		state: state.(*mhcPacing), seen: map[string]map[types.UID]bool{}}
}

// ownerBackoffKey is the key of deletion: the Machine's controller owner.
func (p *pacingPass) ownerBackoffKey(owner *metav1.OwnerReference) backoffKey {
	uid := owner.UID
	return backoffKey{id: "owner/" + string(uid), what: owner.Kind + " " + owner.Name, members: func() map[types.UID]bool {
		set := map[types.UID]bool{}
		for _, t := range p.targets {
			if o := metav1.GetControllerOf(t.machine); o != nil && o.UID == uid {
				set[t.machine.UID] = true
			}
		}
		return set
	}}
}

// admit decides whether t may be remediated under k now: the backoff first (a waiting
// Machine takes no token), then the rate limit; a held-back one is reported once per wait.
func (p *pacingPass) admit(t target, k backoffKey) bool {
	m := t.machine
	log := ctrl.LoggerFrom(p.ctx)
	if st := p.state.backoff[k.id]; st != nil && p.r.opts.RemediationBackoff {
		st.noteDue(m.UID, p.now)
		if p.seen[k.id] == nil {
			p.seen[k.id] = map[types.UID]bool{}
		}
		p.seen[k.id][m.UID] = true
		cls, until, delay := p.r.backoff.decide(st, m.UID, t.verdict.Cause, p.now)
		if cls == backoffRepeat && until.After(p.now) {
			p.wait = earliest(p.wait, until.Sub(p.now))
			note := fmt.Sprintf("Remediation of Machine %s (%s) waits %s, until %s: %s has been remediated %d time(s) in a row for the same cause (%s), last at %s",
				m.Name, t.verdict.Reason, delay, until.UTC().Format(time.RFC3339), k.what, st.streak, st.cause, st.last.UTC().Format(time.RFC3339))
			if p.r.machineEventOnce(p.key, m, corev1.EventTypeWarning, EventRemediationBackoff, note) {
				RemediationBackoffTotal.WithLabelValues(p.mhc.Name, p.mhc.Namespace).Inc()
				log.Info("repeated remediation backs off", "machine", m.Name, "of", k.what, "delay", delay, "until", until)
			}
			return false
		}
	}
	if p.r.limit.enabled() {
		b, wait := p.r.limit.check(p.state.bucket, p.now)
		p.state.bucket = b
		if wait > 0 {
			p.wait = earliest(p.wait, wait)
			p.rateLimited = append(p.rateLimited, m.Name)
			if p.r.events.First(p.key, m.Name, EventRemediationRateLimited, "") {
				RemediationRateLimitedTotal.WithLabelValues(p.mhc.Name, p.mhc.Namespace).Inc()
			}
			return false
		}
	}
	return true
}

// remediated records that t was remediated under k: a token, k's streak.
func (p *pacingPass) remediated(t target, k backoffKey) {
	if p.r.limit.enabled() {
		p.state.bucket = p.r.limit.take(p.state.bucket, p.now)
	}
	if p.r.opts.RemediationBackoff {
		p.state.backoff[k.id] = p.r.backoff.record(p.state.backoff[k.id], t.machine.UID, t.verdict.Cause, p.now, k.members)
	}
	p.r.events.Clear(p.key, t.machine.Name, EventRemediationRateLimited)
	p.r.events.Clear(p.key, t.machine.Name, EventRemediationBackoff)
}

// done ends the pass: RemediationRateLimited once per episode (it ends with a
// pass that held nothing back), the state pruned; it returns the wait.
func (p *pacingPass) done() time.Duration {
	if len(p.rateLimited) > 0 {
		note := fmt.Sprintf("Remediation rate limit reached: at most %d remediations at once, then one every %s; the other unhealthy Machines are remediated as it allows",
			p.r.limit.burst, p.r.limit.interval)
		level := 2 // a repetition
		if p.r.events.Once(p.key, "", patch.Event{Regarding: p.mhc, Type: corev1.EventTypeWarning, Reason: EventRemediationRateLimited, Action: "Remediate", Note: note}) {
			level = 0
		}
		ctrl.LoggerFrom(p.ctx).V(level).Info("remediation rate limited", "waiting", p.rateLimited,
			"nextIn", p.r.limit.interval-p.now.Sub(p.state.bucket.stamp))
	} else {
		p.r.events.Clear(p.key, "", EventRemediationRateLimited)
	}
	maps.DeleteFunc(p.state.backoff, func(key string, st *backoffState) bool { return p.r.backoff.prune(st, p.seen[key], p.now) })
	if len(p.state.backoff) == 0 && (!p.r.limit.enabled() || p.r.limit.full(p.state.bucket, p.now)) {
		p.r.pacing.Delete(p.key) // nothing left: a full bucket, no history
	}
	return p.wait
}
