package machinedeployment

import (
	"fmt"
	"math"
	"slices"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
)

// plan assembles the decision; progress is false for a scaling or paused pass (as Deployments).
func (r *rollout) plan(progress bool, states []SetState) Plan {
	p := Plan{Rollback: r.rollback, Delete: r.deletions}
	for _, s := range r.sets {
		p.Sets = append(p.Sets, s.ms)
	}
	if ns := r.newSet; ns != nil {
		p.NewSet = ns.ms.Name
		p.Revision = ns.ms.Annotations[mdv1beta1.RevisionAnnotation]
		if r.create {
			p.Create = ns.ms
		}
	}
	p.Status, p.RequeueAfter = r.status(progress)
	p.Taints = r.taints(states)
	return p
}

// progressDeadline is spec.progressDeadlineSeconds (0: none, for MaxInt32).
func progressDeadline(md *mdv1beta1.MachineDeployment) time.Duration {
	s := ptr.Deref(md.Spec.ProgressDeadlineSeconds, DefaultProgressDeadlineSeconds)
	if s == math.MaxInt32 {
		return 0
	}
	return time.Duration(s) * time.Second
}

func progressing(conds []machinev1beta1.Condition) *machinev1beta1.Condition {
	return conditions.Get(conds, mdv1beta1.ProgressingCondition)
}

// setProgressing sets Progressing when its status or reason changes. Its
// lastTransitionTime plays Deployments' lastUpdateTime (the deadline runs from it).
func (r *rollout) setProgressing(status corev1.ConditionStatus, reason, format string, args ...any) {
	if c := progressing(r.conds); c != nil && c.Status == status && c.Reason == reason {
		return
	}
	r.touchProgressing(status, reason, format, args...)
}

// touchProgressing sets Progressing with the time now: the rollout progressed.
func (r *rollout) touchProgressing(status corev1.ConditionStatus, reason, format string, args ...any) {
	c := conditions.New(mdv1beta1.ProgressingCondition, status, reason, machinev1beta1.ConditionSeverityWarning, fmt.Sprintf(format, args...))
	c.LastTransitionTime = metav1.NewTime(r.now.Truncate(time.Second))
	if existing := progressing(r.conds); existing != nil {
		*existing = c
		return
	}
	r.conds = append(r.conds, c)
}

// pausedCondition marks a pause and a resume on Progressing (Unknown), so a
// pause does not count against the deadline; an exceeded one stays.
func (r *rollout) pausedCondition() {
	if progressDeadline(r.md) == 0 {
		return
	}
	c := progressing(r.conds)
	if c != nil && c.Reason == mdv1beta1.ReasonProgressDeadlineExceeded {
		return
	}
	paused := c != nil && c.Reason == mdv1beta1.ReasonDeploymentPaused
	switch {
	case r.md.Spec.Paused && !paused:
		r.touchProgressing(corev1.ConditionUnknown, mdv1beta1.ReasonDeploymentPaused, "MachineDeployment is paused")
	case !r.md.Spec.Paused && paused:
		r.touchProgressing(corev1.ConditionUnknown, mdv1beta1.ReasonDeploymentResumed, "MachineDeployment is resumed")
	}
}

// complete: every wanted Machine is of the new template and available.
func complete(md *mdv1beta1.MachineDeployment, st *mdv1beta1.MachineDeploymentStatus) bool {
	n := replicasOf(md)
	return int64(st.UpdatedReplicas) == n && int64(st.Replicas) == n && int64(st.AvailableReplicas) == n && st.ObservedGeneration >= md.Generation
}

// progressed: more new, ready or available Machines, or fewer old ones.
func progressed(before, after *mdv1beta1.MachineDeploymentStatus) bool {
	return after.UpdatedReplicas > before.UpdatedReplicas ||
		after.Replicas-after.UpdatedReplicas < before.Replicas-before.UpdatedReplicas ||
		after.ReadyReplicas > before.ReadyReplicas ||
		after.AvailableReplicas > before.AvailableReplicas
}

// status computes the status from the observed Machines and the planned
// sizes with Deployments' rules, and when to look again for the deadline.
func (r *rollout) status(progress bool) (mdv1beta1.MachineDeploymentStatus, time.Duration) {
	md := r.md
	st := mdv1beta1.MachineDeploymentStatus{
		ObservedGeneration: md.Generation,
		LabelSelector:      metav1.FormatLabelSelector(&md.Spec.Selector),
		CollisionCount:     md.Status.CollisionCount,
		Conditions:         r.conds,
	}
	var wanted, replicas, ready, availableN, updated int64
	for _, s := range r.all() {
		wanted += s.replicas()
		replicas += s.active()
		ready += int64(s.Ready)
		availableN += s.available()
	}
	if r.newSet != nil && !r.create {
		updated = r.newSet.active()
	}
	st.Replicas, st.ReadyReplicas, st.AvailableReplicas = toInt32(replicas), toInt32(ready), toInt32(availableN)
	st.UpdatedReplicas, st.UnavailableReplicas = toInt32(updated), toInt32(max(wanted-availableN, 0))
	available := conditions.New(mdv1beta1.AvailableCondition, corev1.ConditionTrue,
		mdv1beta1.ReasonMinimumReplicasAvailable, "", "MachineDeployment has minimum availability.")
	if availableN < r.replicas-r.unavail {
		available = conditions.New(mdv1beta1.AvailableCondition, corev1.ConditionFalse, mdv1beta1.ReasonMinimumReplicasUnavailable,
			machinev1beta1.ConditionSeverityWarning, "MachineDeployment does not have minimum availability.")
	}
	st.Conditions = conditions.Set(st.Conditions, available, r.now)
	r.conds = st.Conditions
	deadline := progressDeadline(md)
	if !progress || deadline == 0 {
		return st, 0
	}
	subject := fmt.Sprintf("MachineDeployment %q", md.Name)
	if r.newSet != nil {
		subject = fmt.Sprintf("MachineSet %q", r.newSet.ms.Name)
	}
	cur := progressing(md.Status.Conditions)
	done := st.Replicas == st.UpdatedReplicas && cur != nil && cur.Reason == mdv1beta1.ReasonNewMachineSetAvailable
	if !done {
		switch {
		case complete(md, &st):
			r.setProgressing(corev1.ConditionTrue, mdv1beta1.ReasonNewMachineSetAvailable, "%s has successfully progressed.", subject)
		case progressed(&md.Status, &st):
			r.touchProgressing(corev1.ConditionTrue, mdv1beta1.ReasonMachineSetUpdated, "%s is progressing.", subject)
		case r.timedOut(deadline):
			r.setProgressing(corev1.ConditionFalse, mdv1beta1.ReasonProgressDeadlineExceeded, "%s has timed out progressing.", subject)
		}
	}
	st.Conditions = r.conds
	return st, r.deadlineCheck(&st, deadline)
}

// toInt32 is n within int32's range (a status count).
func toInt32(n int64) int32 { return int32(min(max(n, math.MinInt32), math.MaxInt32)) }

// timedOut: no progress for the deadline since Progressing last moved.
func (r *rollout) timedOut(deadline time.Duration) bool {
	c := progressing(r.conds)
	switch {
	case c == nil || c.Reason == mdv1beta1.ReasonNewMachineSetAvailable:
		return false
	case c.Reason == mdv1beta1.ReasonProgressDeadlineExceeded:
		return true
	}
	return c.LastTransitionTime.Add(deadline).Before(r.now)
}

// deadlineCheck is when to look again to tell a stuck rollout (0: no need).
func (r *rollout) deadlineCheck(st *mdv1beta1.MachineDeploymentStatus, deadline time.Duration) time.Duration {
	c := progressing(st.Conditions)
	if c == nil || complete(r.md, st) || c.Reason == mdv1beta1.ReasonProgressDeadlineExceeded ||
		c.Reason == mdv1beta1.ReasonNewMachineSetAvailable {
		return 0
	}
	if after := c.LastTransitionTime.Add(deadline).Sub(r.now); after >= time.Second {
		return after + time.Second
	}
	return time.Second
}

// taints decides which Nodes carry the prefer-no-schedule taint: during a
// rollout those of old sets' Machines, never the new set's.
func (r *rollout) taints(states []SetState) map[string]bool {
	nodes := map[string]bool{}
	inProgress := r.newSet != nil && slices.ContainsFunc(r.old(), func(s *set) bool { return s.active() > 0 })
	for _, st := range states {
		want := inProgress && (r.create || st.Set.Name != r.newSet.ms.Name)
		for _, n := range st.Nodes {
			nodes[n] = want
		}
	}
	return nodes
}
