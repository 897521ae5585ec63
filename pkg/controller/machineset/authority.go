package machineset

import (
	"context"
	"fmt"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/authority"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
)

// leaveToAuthority carries out a decision other than Reconcile (package
// internal/authority): only status.authoritativeAPI or Paused is written.
func (r *Reconciler) leaveToAuthority(ctx context.Context, ms *machinev1beta1.MachineSet, d authority.Decision) error {
	logger := ctrl.LoggerFrom(ctx)
	st := *ms.Status.DeepCopy()
	switch d.Step {
	case authority.InitStatus:
		logger.Info("status.authoritativeAPI is not set yet: setting it to spec.authoritativeAPI", "authoritativeAPI", d.InitTo)
		st.AuthoritativeAPI = d.InitTo
	case authority.Pause:
		if c := conditions.Get(st.Conditions, authority.PausedCondition); c != nil &&
			c.Status == d.Paused.Status && c.Reason == d.Paused.Reason && c.Message == d.Paused.Message {
			return nil
		}
		logger.Info("another API is authoritative for this MachineSet: pausing", "authoritativeAPI", st.AuthoritativeAPI)
		st.Conditions = conditions.Set(st.Conditions, *d.Paused, r.Clock.Now())
	default:
		logger.Info("status.authoritativeAPI has an unknown value: leaving the MachineSet alone", "authoritativeAPI", st.AuthoritativeAPI)
		return nil
	}
	if err := r.patchStatus(ctx, ms, st); err != nil {
		return fmt.Errorf("writing the MachineSet's authority (%s): %w", d.Step, err)
	}
	return nil
}

// withPaused returns st with the Paused condition (nil: the gate is off).
func (r *Reconciler) withPaused(st machinev1beta1.MachineSetStatus, paused *machinev1beta1.Condition) machinev1beta1.MachineSetStatus {
	if paused != nil {
		st.Conditions = conditions.Set(st.Conditions, *paused, r.Clock.Now())
	}
	return st
}
