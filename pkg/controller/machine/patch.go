package machine

// The controller's only writes to the Machine: a metadata/spec merge patch (finalizer, providerID,
// annotations) and one status patch per reconcile, only when the status changed, carrying only what
// this controller changed (package internal/patch, docs/architecture.md).

import (
	"context"
	"fmt"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
)

// patchObject changes metadata/spec with a merge patch, with an optimistic lock for lists others edit
// too (finalizers), and keeps the in-memory status as it is.
func (r *Reconciler) patchObject(ctx context.Context, s *scope, optimisticLock bool, mutate func(*machinev1beta1.Machine)) error {
	before := s.m.DeepCopy()
	after := s.m.DeepCopy()
	mutate(after)
	if equality.Semantic.DeepEqual(before.ObjectMeta, after.ObjectMeta) && equality.Semantic.DeepEqual(before.Spec, after.Spec) {
		return nil
	}
	after.Status = before.Status // diff only metadata and spec
	var patch client.Patch = client.MergeFrom(before)
	if optimisticLock {
		patch = client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	}
	prev := s.base.ResourceVersion
	if err := r.Client.Patch(ctx, after, patch); err != nil {
		return err
	}
	s.behind = append(s.behind, prev)
	s.fresh = s.fresh || optimisticLock
	s.base.ObjectMeta, s.base.Spec = *after.ObjectMeta.DeepCopy(), *after.Spec.DeepCopy()
	s.m.ObjectMeta, s.m.Spec = after.ObjectMeta, after.Spec // after is not used again
	return nil
}

// annotate sets a Machine annotation (no request when it has that value already).
func (r *Reconciler) annotate(ctx context.Context, s *scope, key, value string) error {
	return r.patchObject(ctx, s, false, func(m *machinev1beta1.Machine) {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[key] = value
	})
}

// patchStatus writes the status when it differs from what was last read or written; lastUpdated changes
// only then. errorReason/errorMessage exist only in phase Failed.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope) error {
	if s.gone {
		return nil
	}
	m := s.m
	if phaseOf(m) != machinev1beta1.PhaseFailed {
		m.Status.ErrorReason = nil
		m.Status.ErrorMessage = nil
	}
	m.Status.LastUpdated = s.base.Status.LastUpdated
	if equality.Semantic.DeepEqual(s.base.Status, m.Status) {
		return nil
	}
	now := metav1.NewTime(r.Now().Truncate(time.Second))
	m.Status.LastUpdated = &now
	from, to := phaseOf(s.base), phaseOf(m)
	// Patch a copy so a failed patch leaves the working copy intact.
	patched := m.DeepCopy()
	patched.ObjectMeta = *s.base.ObjectMeta.DeepCopy()
	patched.Spec = *s.base.Spec.DeepCopy()
	prev := s.base.ResourceVersion
	if err := patch.Status(ctx, r.Client, r.freshReader(), s.base, patched); err != nil {
		return fmt.Errorf("patching Machine status: %w", err)
	}
	s.behind = append(s.behind, prev)
	*s.m = *patched
	s.base = patched.DeepCopy()
	if from != to {
		PhaseTransitionsTotal.WithLabelValues(from, to).Inc()
		if to != machinev1beta1.PhaseDeleting {
			PhaseTransitionSeconds.WithLabelValues(to).Observe(r.Now().Sub(m.CreationTimestamp.Time).Seconds())
		}
		log.FromContext(ctx).Info("phase changed", "from", from, "to", to)
	}
	return nil
}

// patchStatusAlone writes desired's status for a Machine the controller otherwise leaves alone; a
// Machine deleted meanwhile is no error.
func (r *Reconciler) patchStatusAlone(ctx context.Context, s *scope, desired *machinev1beta1.Machine) error {
	if err := patch.Status(ctx, r.Client, r.freshReader(), s.base, desired); err != nil {
		return client.IgnoreNotFound(err)
	}
	*s.m = *desired
	s.base = desired.DeepCopy()
	return nil
}

// freshReader reads uncached, for a status retry after a conflict.
func (r *Reconciler) freshReader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}
