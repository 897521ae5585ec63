package machinedeployment

import (
	"cmp"
	"math"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
)

// setReplicas scales s to n (clamped to [0, MaxInt32]) and, when its size changes (or with
// force), records replicas and replicas+maxSurge on it; it reports a size change.
func (r *rollout) setReplicas(s *set, n int64, force bool) bool {
	n = min(max(n, 0), math.MaxInt32)
	changed := s.replicas() != n
	if !changed && !force {
		return false
	}
	s.ms.Spec.Replicas = ptr.To(int32(n))
	s.ms.Annotations = labels.Merge(s.ms.Annotations, labels.Set{
		mdv1beta1.DesiredReplicasAnnotation: strconv.FormatInt(r.replicas, 10),
		mdv1beta1.MaxReplicasAnnotation:     strconv.FormatInt(r.replicas+r.surge, 10),
	})
	return changed
}

// sum adds f over sets.
func sum(sets []*set, f func(*set) int64) (n int64) {
	for _, s := range sets {
		n += f(s)
	}
	return n
}

// newSetReplicas is the size the new set may grow to now: within replicas+maxSurge Machines in all
// (RollingUpdate), replicas (Recreate), or what the old sets leave of replicas (OnDelete).
func (r *rollout) newSetReplicas() int64 {
	cur := r.newSet.replicas()
	switch strategyOf(r.md) {
	case mdv1beta1.RecreateStrategy:
		return r.replicas
	case mdv1beta1.OnDeleteStrategy:
		return min(max(r.replicas-sum(r.old(), (*set).replicas), cur), r.replicas)
	}
	room := r.replicas + r.surge - sum(r.all(), (*set).footprint)
	if room <= 0 {
		return cur
	}
	return cur + min(room, r.replicas-cur)
}

// rolling is one RollingUpdate step: grow the new set within surge, else shrink old sets, else clean up.
func (r *rollout) rolling() {
	if r.create {
		return // created at its allowed size: that is this step
	}
	if ns := r.newSet; ns != nil {
		target := r.replicas
		if ns.replicas() < r.replicas {
			target = r.newSetReplicas()
		}
		if r.setReplicas(ns, target, false) {
			return
		}
	}
	if r.scaleDownOld() {
		return
	}
	r.cleanupIfComplete()
}

// scaleDownOld shrinks old sets, oldest first, keeping replicas−maxUnavailable
// Machines available: first replicas not available anyway, then available ones.
func (r *rollout) scaleDownOld() bool {
	old := r.old()
	if sum(old, (*set).replicas) == 0 {
		return false
	}
	all := sum(r.all(), func(s *set) int64 { return max(s.replicas(), s.active()) })
	minAvailable := r.replicas - r.unavail
	var newUnavailable int64
	if ns := r.newSet; ns != nil {
		newUnavailable = max(ns.replicas()-ns.available(), 0)
	}
	maxScaledDown := all - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return false
	}
	scaled := r.shrink(old, maxScaledDown, (*set).unavailableHead) > 0
	// Then as many as availability allows.
	budget := sum(r.all(), func(s *set) int64 { return s.availableAt(s.replicas()) }) - minAvailable
	return r.shrink(old, budget, (*set).replicas) > 0 || scaled
}

// shrink takes up to budget replicas off sets, in order, at most take(s) off each.
func (r *rollout) shrink(sets []*set, budget int64, take func(*set) int64) (taken int64) {
	for _, s := range sets {
		if k := min(budget-taken, take(s)); k > 0 {
			r.setReplicas(s, s.replicas()-k, false)
			taken += k
		}
	}
	return taken
}

// unavailableHead is how many replicas the set can lose without losing an
// available Machine (not created yet, or unavailable at the head of its delete order).
func (s *set) unavailableHead() int64 {
	p, a := s.replicas(), s.active()
	if p > a {
		return p - a
	}
	if i := slices.Index(s.Available[a-p:], true); i >= 0 {
		return int64(i)
	}
	return p
}

// recreate is one step of a Recreate rollout: old sets to 0, then once
// their Machines are gone the new set at replicas.
func (r *rollout) recreate() {
	if r.shrink(r.old(), math.MaxInt32, (*set).replicas) > 0 ||
		slices.ContainsFunc(r.old(), func(s *set) bool { return s.active()+int64(s.Deleting) > 0 }) {
		return
	}
	if r.newSet == nil {
		r.findNewSet(true)
		return
	}
	if r.setReplicas(r.newSet, r.replicas, false) {
		return
	}
	r.cleanupIfComplete()
}

// onDelete is one step of an OnDelete rollout: old sets keep the size their
// deleted Machines leave, the new set takes up the rest of replicas.
func (r *rollout) onDelete() {
	scaled := false
	excess := sum(r.all(), (*set).replicas) - r.replicas
	for _, s := range r.old() {
		target := min(s.replicas(), s.active())
		if excess > 0 {
			target = max(target-excess, 0)
		}
		excess -= s.replicas() - target
		scaled = r.setReplicas(s, target, false) || scaled
	}
	if ns := r.newSet; ns != nil && !r.create {
		scaled = r.setReplicas(ns, r.newSetReplicas(), false) || scaled
	}
	if !scaled {
		r.cleanupIfComplete()
	}
}

// scalingEvent reports whether an active set records another desired-replicas.
func (r *rollout) scalingEvent() bool {
	return slices.ContainsFunc(r.sets, func(s *set) bool {
		v, err := strconv.ParseInt(s.ms.Annotations[mdv1beta1.DesiredReplicasAnnotation], 10, 64)
		return s.replicas() != 0 && err == nil && v >= 0 && v != r.replicas
	})
}

// scale resizes the sets to a new replicas without advancing a rollout (Deployments' rules): a lone
// active (or the newest) set takes replicas, a saturated new set leaves the old at 0, else proportionally.
func (r *rollout) scale() {
	active := slices.DeleteFunc(slices.Clone(r.all()), func(s *set) bool { return s.replicas() == 0 })
	// force: a set sized by hand to replicas would otherwise stay a scaling event.
	switch {
	case len(active) == 1:
		r.setReplicas(active[0], r.replicas, true)
		return
	case len(active) == 0 && r.newSet != nil:
		r.setReplicas(r.newSet, r.replicas, true)
		return
	case len(active) == 0 && len(r.sets) > 0:
		r.setReplicas(r.sets[len(r.sets)-1], r.replicas, true)
		return
	case len(active) == 0:
		return
	}
	if ns := r.newSet; ns != nil && ns.replicas() == r.replicas && ns.available() == r.replicas &&
		ns.ms.Annotations[mdv1beta1.DesiredReplicasAnnotation] == strconv.FormatInt(r.replicas, 10) {
		for _, s := range r.old() {
			r.setReplicas(s, 0, false)
		}
		return
	}
	if strategyOf(r.md) != mdv1beta1.RollingUpdateStrategy {
		return
	}
	current, allowed := sum(active, (*set).replicas), int64(0)
	if r.replicas > 0 {
		allowed = r.replicas + r.surge
	}
	toAdd := allowed - current
	// Largest first; among equals newer first when growing, older when shrinking.
	slices.SortStableFunc(active, func(a, b *set) int {
		if toAdd > 0 {
			return cmp.Or(cmp.Compare(b.replicas(), a.replicas()), olderFirst(b.ms, a.ms))
		}
		return cmp.Or(cmp.Compare(b.replicas(), a.replicas()), olderFirst(a.ms, b.ms))
	})
	sizes := make([]int64, len(active))
	var added int64
	for i, s := range active {
		p := r.proportion(s, toAdd, added)
		sizes[i] = s.replicas() + p
		added += p
	}
	sizes[0] += toAdd - added // the largest set takes the rest (setReplicas clamps at 0)
	for i, s := range active {
		r.setReplicas(s, sizes[i], true)
	}
}

// proportion is s's share of toAdd (negative: removal) beyond added, from
// the max-replicas it was last scaled at.
func (r *rollout) proportion(s *set, toAdd, added int64) int64 {
	if s.replicas() == 0 || toAdd == added {
		return 0
	}
	var fraction int64
	if r.replicas == 0 {
		fraction = -s.replicas()
	} else {
		before, err := strconv.ParseInt(s.ms.Annotations[mdv1beta1.MaxReplicasAnnotation], 10, 64)
		if err != nil || before <= 0 {
			before = int64(r.md.Status.Replicas)
		}
		if before > 0 { // a size of at most MaxInt32 × 2·MaxInt32: exact enough, never overflows
			size := float64(s.replicas()) * float64(r.replicas+r.surge) / float64(before)
			fraction = int64(math.Round(min(size, math.MaxInt32))) - s.replicas()
		}
	}
	allowed := toAdd - added
	if toAdd > 0 {
		return min(fraction, allowed)
	}
	return max(fraction, allowed)
}

// cleanupIfComplete cleans up once the status last reported completion.
func (r *rollout) cleanupIfComplete() {
	if complete(r.md, &r.md.Status) {
		r.cleanupHistory()
	}
}

// cleanupHistory deletes the oldest old sets beyond revisionHistoryLimit
// that are at 0 with no Machine left.
func (r *rollout) cleanupHistory() {
	limit := ptr.Deref(r.md.Spec.RevisionHistoryLimit, DefaultRevisionHistoryLimit)
	cleanable := slices.DeleteFunc(r.old(), func(s *set) bool { return s.ms.DeletionTimestamp != nil })
	diff := len(cleanable) - int(limit)
	if diff <= 0 {
		return
	}
	slices.SortStableFunc(cleanable, func(a, b *set) int {
		ra, oka := revisionOf(a.ms)
		rb, okb := revisionOf(b.ms)
		if oka && okb && ra != rb {
			return cmp.Compare(ra, rb)
		}
		return olderFirst(a.ms, b.ms)
	})
	for _, s := range cleanable[:diff] {
		if s.replicas() != 0 || s.Set.Status.Replicas != 0 || s.active()+int64(s.Deleting) != 0 ||
			s.Set.Generation > s.Set.Status.ObservedGeneration {
			continue
		}
		r.deletions = append(r.deletions, s.Set)
	}
}
