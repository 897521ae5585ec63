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
	return &pacingPass{r: r, ctx: ctx, mhc: mhc, key: key, now: now, targets: targets,
		state: r.pacing.get(key), seen: map[string]map[types.UID]bool{}}
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

// admit decides whether t may be remediated under k now: the backoff first (a
// waiting Machine takes no token), then the rate limit. A Machine held back is
// reported once per wait and its wait collected.
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
	if p.r.backoffOn {
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
		if p.r.events.Once(p.key, "", p.mhc, corev1.EventTypeWarning, EventRemediationRateLimited, "Remediate", note) {
			level = 0
		}
		ctrl.LoggerFrom(p.ctx).V(level).Info("remediation rate limited", "waiting", p.rateLimited,
			"nextIn", p.r.limit.interval-p.now.Sub(p.state.bucket.stamp))
	} else {
		p.r.events.Clear(p.key, "", EventRemediationRateLimited)
	}
	for key, st := range p.state.backoff {
		if p.r.backoff.prune(st, p.seen[key], p.now) {
			delete(p.state.backoff, key)
		}
	}
	if len(p.state.backoff) == 0 && (!p.r.limit.enabled() || p.r.limit.full(p.state.bucket, p.now)) {
		p.r.pacing.forget(p.key) // nothing left: a full bucket, no history
	}
	return p.wait
}
