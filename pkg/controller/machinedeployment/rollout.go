package machinedeployment

import (
	"cmp"
	"math"
	"slices"
	"strconv"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	"k8s.io/utils/ptr"
)

// setReplicas scales s to n and, when its size changes (or force is set),
// records the deployment's replicas and replicas+maxSurge on it. It
// reports whether the size changed.
func (r *rollout) setReplicas(s *set, n int32, force bool) bool {
	n = max(n, 0)
	changed := s.replicas() != n
	if !changed && !force {
		return false
	}
	s.ms.Spec.Replicas = ptr.To(n)
	want := map[string]string{
		mdv1beta1.DesiredReplicasAnnotation: strconv.Itoa(int(r.replicas)),
		mdv1beta1.MaxReplicasAnnotation:     strconv.Itoa(int(r.replicas + r.surge)),
	}
	for k, v := range want {
		if s.ms.Annotations[k] != v {
			if s.ms.Annotations == nil {
				s.ms.Annotations = map[string]string{}
			}
			s.ms.Annotations[k] = v
		}
	}
	return changed
}

// footprint is the most Machines all sets may have at once.
func (r *rollout) footprint() int32 {
	var n int32
	for _, s := range r.all() {
		n += s.footprint()
	}
	return n
}

// newSetReplicas is the size the new set may grow to now: under
// RollingUpdate, within replicas+maxSurge Machines in all; under
// Recreate, replicas; under OnDelete, what the old sets leave of replicas.
func (r *rollout) newSetReplicas() int32 {
	cur := r.newSet.replicas()
	switch strategyOf(r.md) {
	case mdv1beta1.RecreateStrategy:
		return r.replicas
	case mdv1beta1.OnDeleteStrategy:
		var old int32
		for _, s := range r.old() {
			old += s.replicas()
		}
		return min(max(r.replicas-old, cur), r.replicas)
	}
	room := r.replicas + r.surge - r.footprint()
	if room <= 0 {
		return cur
	}
	return cur + min(room, r.replicas-cur)
}

// rolling is one step of a RollingUpdate: grow the new set if the surge
// allows, else shrink old sets if availability allows, else (complete)
// clean up the history.
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

// scaleDownOld shrinks old sets, oldest first, keeping at least
// replicas−maxUnavailable Machines available once the MachineSets have
// deleted what they are asked to: first replicas that are not available
// anyway (not yet created, or first in the set's delete order and not
// available), then available ones.
func (r *rollout) scaleDownOld() bool {
	old := r.old()
	var oldReplicas, all int32
	for _, s := range old {
		oldReplicas += s.replicas()
	}
	if oldReplicas == 0 {
		return false
	}
	for _, s := range r.all() {
		all += max(s.replicas(), s.active())
	}
	minAvailable := r.replicas - r.unavail
	var newUnavailable int32
	if ns := r.newSet; ns != nil {
		newUnavailable = max(ns.replicas()-ns.available(), 0)
	}
	maxScaledDown := all - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return false
	}
	scaled := false
	// Unavailable replicas first: removing them costs no availability.
	var done int32
	for _, s := range old {
		if done >= maxScaledDown {
			break
		}
		if k := min(maxScaledDown-done, s.unavailableHead()); k > 0 {
			r.setReplicas(s, s.replicas()-k, false)
			done += k
			scaled = true
		}
	}
	// Then as many as availability allows, each counted as available.
	var available int32
	for _, s := range r.all() {
		available += s.availableAt(s.replicas())
	}
	budget := available - minAvailable
	for _, s := range old {
		if budget <= 0 {
			break
		}
		if k := min(s.replicas(), budget); k > 0 {
			r.setReplicas(s, s.replicas()-k, false)
			budget -= k
			scaled = true
		}
	}
	return scaled
}

// unavailableHead is how many replicas the set can lose without losing an
// available Machine: those not created yet, then the unavailable Machines
// at the head of its delete order (past those already due to go).
func (s *set) unavailableHead() int32 {
	p, a := s.replicas(), s.active()
	if p > a {
		return p - a
	}
	var n int32
	for i := a - p; i < a && !s.Available[i]; i++ {
		n++
	}
	return n
}

// recreate is one step of a Recreate rollout: old sets to 0; once their
// Machines are all gone, the new set is created at (or grown to) replicas.
func (r *rollout) recreate() {
	scaled := false
	for _, s := range r.old() {
		if s.replicas() > 0 {
			r.setReplicas(s, 0, false)
			scaled = true
		}
	}
	if scaled {
		return
	}
	for _, s := range r.old() {
		if s.active()+s.Deleting > 0 {
			return
		}
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

// onDelete is one step of an OnDelete rollout: an old set whose Machines
// were deleted by someone else keeps the smaller size, and the new set
// takes up what is left of replicas.
func (r *rollout) onDelete() {
	scaled := false
	var total int32
	for _, s := range r.all() {
		total += s.replicas()
	}
	excess := total - r.replicas
	for _, s := range r.old() {
		target := min(s.replicas(), s.active())
		if excess > 0 {
			target = max(target-excess, 0)
		}
		excess -= s.replicas() - target
		if r.setReplicas(s, target, false) {
			scaled = true
		}
	}
	if ns := r.newSet; ns != nil && !r.create {
		if r.setReplicas(ns, r.newSetReplicas(), false) {
			scaled = true
		}
	}
	if !scaled {
		r.cleanupIfComplete()
	}
}

// scalingEvent reports whether replicas changed since the sets were last
// scaled: an active set records another desired-replicas.
func (r *rollout) scalingEvent() bool {
	for _, s := range r.sets {
		if s.replicas() == 0 {
			continue
		}
		v, err := strconv.Atoi(s.ms.Annotations[mdv1beta1.DesiredReplicasAnnotation])
		if err == nil && v >= 0 && int32(v) != r.replicas {
			return true
		}
	}
	return false
}

// scale resizes the sets to a new replicas without advancing a rollout:
// a lone active set (or the newest set) takes replicas; a saturated new set
// leaves old sets at 0; otherwise, under RollingUpdate, every active set
// changes in proportion to its size, the rounding left-over going to the
// largest, as Deployments do.
func (r *rollout) scale() {
	var active []*set
	for _, s := range r.all() {
		if s.replicas() > 0 {
			active = append(active, s)
		}
	}
	// Sizes are written with the annotations even when unchanged: a set
	// sized by hand to replicas would otherwise stay a scaling event.
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
		ns.ms.Annotations[mdv1beta1.DesiredReplicasAnnotation] == strconv.Itoa(int(r.replicas)) {
		for _, s := range r.old() {
			r.setReplicas(s, 0, false)
		}
		return
	}
	if strategyOf(r.md) != mdv1beta1.RollingUpdateStrategy {
		return
	}
	var current, allowed int32
	for _, s := range active {
		current += s.replicas()
	}
	if r.replicas > 0 {
		allowed = r.replicas + r.surge
	}
	toAdd := allowed - current
	// Largest first; among equals newer first when growing, older first
	// when shrinking.
	slices.SortStableFunc(active, func(a, b *set) int {
		if c := cmp.Compare(b.replicas(), a.replicas()); c != 0 {
			return c
		}
		if toAdd > 0 {
			return olderFirst(b.ms, a.ms)
		}
		return olderFirst(a.ms, b.ms)
	})
	sizes := make([]int32, len(active))
	var added int32
	for i, s := range active {
		sizes[i] = s.replicas()
		if toAdd != 0 {
			p := r.proportion(s, toAdd, added)
			sizes[i] += p
			added += p
		}
	}
	if toAdd != 0 {
		sizes[0] = max(sizes[0]+toAdd-added, 0)
	}
	for i, s := range active {
		r.setReplicas(s, sizes[i], true)
	}
}

// proportion is the share of toAdd (negative: to remove) of set s, given
// what was added so far, from the max-replicas it was last scaled at.
func (r *rollout) proportion(s *set, toAdd, added int32) int32 {
	if s.replicas() == 0 || toAdd == added {
		return 0
	}
	var fraction int32
	if r.replicas == 0 {
		fraction = -s.replicas()
	} else {
		before, err := strconv.Atoi(s.ms.Annotations[mdv1beta1.MaxReplicasAnnotation])
		if err != nil || before <= 0 {
			before = int(r.md.Status.Replicas)
		}
		if before > 0 {
			size := float64(s.replicas()) * float64(r.replicas+r.surge) / float64(before)
			fraction = int32(math.Round(size)) - s.replicas()
		}
	}
	allowed := toAdd - added
	if toAdd > 0 {
		return min(fraction, allowed)
	}
	return max(fraction, allowed)
}

// cleanupIfComplete cleans up the history once the rollout completed (as
// the status last reported).
func (r *rollout) cleanupIfComplete() {
	st := r.md.Status
	if st.UpdatedReplicas == r.replicas && st.Replicas == r.replicas && st.AvailableReplicas == r.replicas &&
		st.ObservedGeneration >= r.md.Generation {
		r.cleanupHistory()
	}
}

// cleanupHistory deletes the oldest old sets beyond revisionHistoryLimit
// that are scaled to 0 and have no Machine left.
func (r *rollout) cleanupHistory() {
	limit := ptr.Deref(r.md.Spec.RevisionHistoryLimit, DefaultRevisionHistoryLimit)
	var cleanable []*set
	for _, s := range r.old() {
		if s.ms.DeletionTimestamp == nil {
			cleanable = append(cleanable, s)
		}
	}
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
		if s.replicas() != 0 || s.Set.Status.Replicas != 0 || s.active()+s.Deleting != 0 ||
			s.Set.Generation > s.Set.Status.ObservedGeneration {
			continue
		}
		r.deletions = append(r.deletions, s.Set)
	}
}
