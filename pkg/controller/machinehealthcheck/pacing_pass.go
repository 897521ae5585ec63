package machinehealthcheck

import (
	"context"
	"fmt"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// backoffKey names what the backoff of repeated remediation counts
// remediations of: a controller owner (MachineSet) for deletion, a Machine
// for external remediation.
type backoffKey struct {
	id   string // in mhcPacing.backoff
	what string // in event notes: "MachineSet ms", "Machine m"
	// members lists the owner's Machines (nil for a Machine key); called
	// when a streak begins.
	members func() map[types.UID]bool
}

// machineBackoffKey is the key of external remediation: the Machine itself
// (one that becomes healthy and unhealthy again, over and over).
func machineBackoffKey(m *machinev1beta1.Machine) backoffKey {
	return backoffKey{id: "Machine/" + string(m.UID), what: "Machine " + m.Name}
}

// pacingPass applies the pacing to one remediation pass of a
// MachineHealthCheck: it admits remediations, records them, and collects
// when the ones held back may go ahead.
type pacingPass struct {
	r       *Reconciler
	ctx     context.Context
	mhc     *machinev1beta1.MachineHealthCheck
	key     types.NamespacedName
	now     time.Time
	targets []target
	state   *mhcPacing
	// seen are the Machines checked against each backoff key in the pass
	// (their due times are kept).
	seen map[string]map[types.UID]bool
	// wait is the earliest moment (from now) a held-back remediation may go
	// ahead; 0: none was held back.
	wait        time.Duration
	rateLimited []string
}

func (r *Reconciler) newPacingPass(ctx context.Context, mhc *machinev1beta1.MachineHealthCheck, targets []target, now time.Time) *pacingPass {
	key := client.ObjectKeyFromObject(mhc)
	return &pacingPass{r: r, ctx: ctx, mhc: mhc, key: key, now: now, targets: targets,
		state: r.pacing.get(key), seen: map[string]map[types.UID]bool{}}
}

// ownerBackoffKey is the key of deletion: the Machine's controller owner,
// the MachineSet that keeps replacing the Machines deleted.
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

// admit decides whether t, remediated under key k, may be remediated now.
// The backoff is checked first (a Machine waiting for it takes no token),
// then the rate limit. A Machine held back is reported (an event, a metric,
// each once per wait) and its wait is collected for the requeue.
func (p *pacingPass) admit(t target, k backoffKey) bool {
	m := t.machine
	log := ctrl.LoggerFrom(p.ctx)
	if st := p.state.backoff[k.id]; st != nil && p.r.backoffOn {
		st.noteDue(m.UID, p.now)
		if p.seen[k.id] == nil {
			p.seen[k.id] = map[types.UID]bool{}
		}
		p.seen[k.id][m.UID] = true
		cls, until, delay := p.r.backoff.decide(st, m.UID, t.verdict.Cause, p.now)
		if cls == backoffRepeat && until.After(p.now) {
			p.waitFor(until.Sub(p.now))
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
			p.waitFor(wait)
			p.rateLimited = append(p.rateLimited, m.Name)
			if p.r.events.First(p.key, m.Name, EventRemediationRateLimited, "") {
				RemediationRateLimitedTotal.WithLabelValues(p.mhc.Name, p.mhc.Namespace).Inc()
			}
			return false
		}
	}
	return true
}

// remediated records that t was remediated under key k: it took a token
// and continues (or begins) k's streak.
func (p *pacingPass) remediated(t target, k backoffKey) {
	if p.r.limit.enabled() {
		p.state.bucket = p.r.limit.take(p.state.bucket, p.now)
	}
	if p.r.backoffOn {
		p.state.backoff[k.id] = p.r.backoff.record(p.state.backoff[k.id], t.machine.UID, t.verdict.Cause, p.now, k.members)
	}
	p.r.events.Clear(p.key, t.machine.Name, EventRemediationRateLimited)
	p.r.events.Clear(p.key, t.machine.Name, EventRemediationBackoff)
}

func (p *pacingPass) waitFor(d time.Duration) {
	p.wait = earliest(p.wait, d)
}

// done ends the pass: it records RemediationRateLimited on the
// MachineHealthCheck once per episode (an episode ends with a pass that held
// nothing back for the rate limit), prunes the pacing state and returns the
// wait.
func (p *pacingPass) done() time.Duration {
	if len(p.rateLimited) > 0 {
		note := fmt.Sprintf("Remediation rate limit reached: at most %d remediations at once, then one every %s; the other unhealthy Machines are remediated as it allows",
			p.r.limit.burst, p.r.limit.interval)
		first := p.r.events.First(p.key, "", EventRemediationRateLimited, note)
		if first {
			p.r.events.Eventf(p.mhc, nil, corev1.EventTypeWarning, EventRemediationRateLimited, "Remediate", "%s", note)
		}
		ctrl.LoggerFrom(p.ctx).V(logLevel(first)).Info("remediation rate limited", "waiting", p.rateLimited,
			"nextIn", p.r.limit.interval-p.now.Sub(p.state.bucket.stamp))
	} else {
		p.r.events.Clear(p.key, "", EventRemediationRateLimited)
	}
	p.r.pacing.done(p.key, p.state, p.r.limit, p.r.backoff, p.seen, p.now)
	return p.wait
}

// logLevel is 0 for news, 2 for repetitions.
func logLevel(news bool) int {
	if news {
		return 0
	}
	return 2
}
