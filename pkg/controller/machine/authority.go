package machine

// Machines another API is authoritative for get only status.authoritativeAPI or Paused (package internal/authority).

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/authority"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
)

// leaveToAuthority carries out a decision other than Reconcile.
func (r *Reconciler) leaveToAuthority(ctx context.Context, s *scope, d authority.Decision) error {
	s.gone = true // hands off: no status patch from Reconcile
	logger := log.FromContext(ctx)
	desired := s.base.DeepCopy()
	switch d.Step {
	case authority.InitStatus:
		logger.Info("status.authoritativeAPI is not set yet: setting it to spec.authoritativeAPI", "authoritativeAPI", d.InitTo)
		desired.Status.AuthoritativeAPI = d.InitTo
	case authority.Pause:
		if sameCondition(desired.Status.Conditions, *d.Paused) {
			return nil
		}
		logger.Info("another API is authoritative for this Machine: pausing", "authoritativeAPI", desired.Status.AuthoritativeAPI)
		desired.Status.Conditions = conditions.Set(desired.Status.Conditions, *d.Paused, r.Now())
	default:
		logger.Info("status.authoritativeAPI has an unknown value: leaving the Machine alone", "authoritativeAPI", desired.Status.AuthoritativeAPI)
		return nil
	}
	if err := r.patchStatusAlone(ctx, s, desired); err != nil {
		return fmt.Errorf("writing the Machine's authority (%s): %w", d.Step, err)
	}
	return nil
}
