package machine

// Machines left alone (no finalizer, phase or provider call): another provider's get ProviderSupported=False
// and an event; those another API is authoritative for, status.authoritativeAPI or Paused (internal/authority).

import (
	"cmp"
	"context"
	"fmt"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/authority"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// leaveToAuthority carries out a decision other than Reconcile.
func (r *Reconciler) leaveToAuthority(ctx context.Context, s *scope, d authority.Decision) error {
	s.leftAlone = true
	work := s.base.DeepCopy()
	if !authority.Apply(log.FromContext(ctx), d, "Machine", &work.Status.AuthoritativeAPI, &work.Status.Conditions, r.opts.Clock.Now()) {
		return nil
	}
	f := pausedFields
	if d.Step == authority.InitStatus {
		f = initAPIFields
	}
	if err := client.IgnoreNotFound(r.apply(ctx, s, work, f)); err != nil {
		return fmt.Errorf("writing the Machine's authority (%s): %w", d.Step, err)
	}
	return nil
}

// foreignProviderSpec decides whether a providerSpec.value, with a parsable apiVersion, is another's.
func foreignProviderSpec(value *runtime.RawExtension, served []schema.GroupKind) (provider.SpecType, bool) {
	if len(served) == 0 {
		return provider.SpecType{}, false
	}
	t, ok := provider.SpecTypeOf(value)
	return t, ok && !t.ServedBy(served)
}

// unsupportedProviderMessage is the ProviderSupported=False message.
func unsupportedProviderMessage(t provider.SpecType, served []schema.GroupKind) string {
	return fmt.Sprintf("spec.providerSpec.value has kind %s (apiVersion %s): it needs the machine controller of the provider serving %s; "+
		"this machine controller serves only %s and leaves the Machine untouched",
		cmp.Or(t.Kind, "(none)"), t.APIVersion, cmp.Or(t.Group, "the core group"), provider.DescribeKinds(served))
}

// leaveForeign sets ProviderSupported=False (conditions alone) with an UnsupportedProvider event each time it
// is written; our finalizer is never added nor removed: another controller may own it.
func (r *Reconciler) leaveForeign(ctx context.Context, s *scope, t provider.SpecType) error {
	s.leftAlone = true
	m := s.m
	c := conditions.New(ProviderSupportedCondition, corev1.ConditionFalse, ReasonUnsupportedProvider,
		machinev1beta1.ConditionSeverityWarning, unsupportedProviderMessage(t, provider.ServedKinds(r.opts.Actuator)))
	if conditions.Has(m.Status.Conditions, c) {
		return nil
	}
	log.FromContext(ctx).Info("leaving a Machine of another provider untouched", "apiVersion", t.APIVersion, "kind", t.Kind)
	r.events.Eventf(m, nil, corev1.EventTypeWarning, EventUnsupportedProvider, "Reconcile", "%s", c.Message)
	// The controller's other fields are sent as they are (an apply without them would remove those it wrote).
	work := s.base.DeepCopy()
	work.Status.Conditions = conditions.Set(work.Status.Conditions, c, r.opts.Clock.Now())
	if err := client.IgnoreNotFound(r.apply(ctx, s, work, statusFields)); err != nil {
		return fmt.Errorf("setting %s on a Machine of another provider: %w", ProviderSupportedCondition, err)
	}
	return nil
}
