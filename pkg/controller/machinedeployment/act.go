package machinedeployment

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
)

// act carries plan out, then writes the status. Errors of one part do not
// stop the others, but a failed create stops the step (the status says why).
func (r *Reconciler) act(ctx context.Context, md *mdv1beta1.MachineDeployment, states []SetState, plan *Plan) error {
	if plan.Create != nil {
		if err := r.createSet(ctx, md, plan); err != nil {
			return errors.Join(err, r.patchStatus(ctx, md, plan.Status))
		}
	}
	errs := []error{r.updateSets(ctx, md, states, plan)}
	for _, ms := range plan.Delete {
		errs = append(errs, r.deleteSet(ctx, md, ms))
	}
	errs = append(errs, r.syncTaints(ctx, plan.Taints))
	if plan.Revision != "" && md.Annotations[mdv1beta1.RevisionAnnotation] != plan.Revision {
		upd := md.DeepCopy()
		upd.Annotations = withEntry(upd.Annotations, mdv1beta1.RevisionAnnotation, plan.Revision)
		if err := r.opts.Client.Patch(ctx, upd, client.MergeFrom(md)); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("writing the revision annotation: %w", err))
		}
	}
	return errors.Join(append(errs, r.patchStatus(ctx, md, plan.Status))...)
}

// createSet creates the new MachineSet; a set of that name not md's with this hash grows status.collisionCount.
func (r *Reconciler) createSet(ctx context.Context, md *mdv1beta1.MachineDeployment, plan *Plan) error {
	ms := plan.Create
	err := r.opts.Client.Create(ctx, ms)
	switch {
	case err == nil:
		RolloutsTotal.WithLabelValues(RolloutNew).Inc()
		if n := ptr.Deref(ms.Spec.Replicas, 0); n > 0 {
			ScaleActionsTotal.WithLabelValues(DirectionUp).Inc()
			r.events.Eventf(md, ms, corev1.EventTypeNormal, EventScalingMachineSet, "Scale", "Scaled up MachineSet %s from 0 to %d", ms.Name, n)
		}
		return nil
	case apierrors.IsAlreadyExists(err):
		existing := &machinev1beta1.MachineSet{}
		if getErr := r.opts.APIReader.Get(ctx, client.ObjectKeyFromObject(ms), existing); getErr != nil {
			return fmt.Errorf("reading MachineSet %s after a name clash: %w", ms.Name, getErr)
		}
		hash := ms.Spec.Template.Labels[mdv1beta1.MachineTemplateHashLabel]
		if ref := metav1.GetControllerOfNoCopy(existing); ref != nil && ref.UID == md.UID &&
			existing.Spec.Template.Labels[mdv1beta1.MachineTemplateHashLabel] == hash {
			return fmt.Errorf("MachineSet %s exists and is not in the cache yet; retrying", ms.Name)
		}
		plan.Status.CollisionCount = ptr.To(ptr.Deref(md.Status.CollisionCount, 0) + 1)
		ctrl.LoggerFrom(ctx).Info("template hash collision: another MachineSet has the name; bumping collisionCount",
			"machineset", ms.Name, "collisionCount", *plan.Status.CollisionCount)
		return fmt.Errorf("MachineSet %s exists and is not this MachineDeployment's (hash collision); retrying with collisionCount %d",
			ms.Name, *plan.Status.CollisionCount)
	}
	msg := fmt.Sprintf("Failed to create new MachineSet %q: %v", ms.Name, err)
	if progressDeadline(md) > 0 {
		c := conditions.New(mdv1beta1.ProgressingCondition, corev1.ConditionFalse, mdv1beta1.ReasonMachineSetCreateError,
			machinev1beta1.ConditionSeverityWarning, msg)
		plan.Status.Conditions = conditions.Set(slices.Clone(plan.Status.Conditions), c, r.opts.Clock.Now())
	}
	r.events.Eventf(md, nil, corev1.EventTypeWarning, EventMachineSetCreateError, "Create", "%s", msg)
	return fmt.Errorf("creating MachineSet %s: %w", ms.Name, err)
}

// updateSets patches the sets the plan changed under an optimistic lock (no decision on a stale set).
func (r *Reconciler) updateSets(ctx context.Context, md *mdv1beta1.MachineDeployment, states []SetState, plan *Plan) error {
	orig := map[types.UID]*machinev1beta1.MachineSet{}
	for _, st := range states {
		orig[st.Set.UID] = st.Set
	}
	var errs []error
	for _, want := range plan.Sets {
		have := orig[want.UID]
		if have == nil {
			continue
		}
		from, to := ptr.Deref(have.Spec.Replicas, 0), ptr.Deref(want.Spec.Replicas, 0)
		if from == to && maps.Equal(have.Annotations, want.Annotations) && have.Spec.MinReadySeconds == want.Spec.MinReadySeconds {
			continue
		}
		if err := r.opts.Client.Patch(ctx, want, client.MergeFromWithOptions(have, client.MergeFromWithOptimisticLock{})); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("updating MachineSet %s: %w", want.Name, err))
			}
			continue
		}
		if want.Name == plan.NewSet && plan.Rollback {
			RolloutsTotal.WithLabelValues(RolloutRollback).Inc()
			r.events.Eventf(md, want, corev1.EventTypeNormal, EventRollback, "Rollback",
				"Rolled back to MachineSet %s (revision %s)", want.Name, want.Annotations[mdv1beta1.RevisionAnnotation])
		}
		if from != to {
			dir := DirectionUp
			if to < from {
				dir = DirectionDown
			}
			ScaleActionsTotal.WithLabelValues(dir).Inc()
			r.events.Eventf(md, want, corev1.EventTypeNormal, EventScalingMachineSet, "Scale", "Scaled %s MachineSet %s from %d to %d", dir, want.Name, from, to)
		}
	}
	return errors.Join(errs...)
}

// deleteSet deletes an old MachineSet beyond the revision history (UID precondition).
func (r *Reconciler) deleteSet(ctx context.Context, md *mdv1beta1.MachineDeployment, ms *machinev1beta1.MachineSet) error {
	err := r.opts.Client.Delete(ctx, &machinev1beta1.MachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: ms.Namespace, Name: ms.Name}},
		client.Preconditions{UID: ptr.To(ms.UID)})
	if err != nil {
		return client.IgnoreNotFound(fmt.Errorf("deleting old MachineSet %s: %w", ms.Name, err))
	}
	r.events.Eventf(md, ms, corev1.EventTypeNormal, EventDeletedMachineSet, "Delete",
		"Deleted old MachineSet %s (revision %s) beyond the revision history limit", ms.Name, ms.Annotations[mdv1beta1.RevisionAnnotation])
	return nil
}

// syncTaints adds or removes the prefer-no-schedule taint where the plan says.
func (r *Reconciler) syncTaints(ctx context.Context, want map[string]bool) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(want)) {
		n := &corev1.Node{}
		if err := r.opts.Client.Get(ctx, types.NamespacedName{Name: name}, n); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("reading Node %s: %w", name, err))
			}
			continue
		}
		taints := withTaint(n.Spec.Taints, want[name])
		if taints == nil {
			continue
		}
		upd := n.DeepCopy()
		upd.Spec.Taints = taints
		if err := r.opts.Client.Patch(ctx, upd, client.MergeFromWithOptions(n, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("setting the %s taint on Node %s to %t: %w", PreferNoScheduleTaintKey, name, want[name], err))
		}
	}
	return errors.Join(errs...)
}

// withTaint returns taints with (on) or without the prefer-no-schedule taint, nil when already so.
func withTaint(taints []corev1.Taint, on bool) []corev1.Taint {
	i := slices.IndexFunc(taints, func(t corev1.Taint) bool {
		return t.Key == PreferNoScheduleTaintKey && t.Effect == corev1.TaintEffectPreferNoSchedule
	})
	switch {
	case on && i < 0:
		return append(slices.Clone(taints), corev1.Taint{Key: PreferNoScheduleTaintKey, Value: preferNoScheduleValue, Effect: corev1.TaintEffectPreferNoSchedule})
	case !on && i >= 0: // the clone of a non-empty slice: never nil, so an empty list is written
		return slices.Delete(slices.Clone(taints), i, i+1)
	}
	return nil
}

// statusFields are the MachineDeployment status fields the controller owns; the safety controller owns Frozen
// (docs/architecture.md, "Status writes and events").
var statusFields = patch.Fields{Manager: ControllerName, Keys: []string{"observedGeneration", "labelSelector", "replicas", "updatedReplicas",
	"readyReplicas", "availableReplicas", "unavailableReplicas", "collisionCount"},
	Conditions: []string{string(mdv1beta1.AvailableCondition), string(mdv1beta1.ProgressingCondition)}}

// patchStatus writes what changed in st's fields of the controller.
func (r *Reconciler) patchStatus(ctx context.Context, md *mdv1beta1.MachineDeployment, st mdv1beta1.MachineDeploymentStatus) error {
	return client.IgnoreNotFound(patch.SetStatus(ctx, r.opts.Client, md, func(md *mdv1beta1.MachineDeployment) { md.Status = st }, statusFields))
}
