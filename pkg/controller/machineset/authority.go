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
	st := *ms.Status.DeepCopy()
	if !authority.Apply(ctrl.LoggerFrom(ctx), d, "MachineSet", &st.AuthoritativeAPI, &st.Conditions, r.opts.Clock.Now()) {
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
		st.Conditions = conditions.Set(st.Conditions, *paused, r.opts.Clock.Now())
	}
	return st
}
