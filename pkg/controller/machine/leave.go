package machine

// Machines left alone (no finalizer, phase or provider call): another provider's get ProviderSupported=False
// and an event; those another API is authoritative for, status.authoritativeAPI or Paused (internal/authority).

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/authority"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
)

// leaveToAuthority carries out a decision other than Reconcile.
func (r *Reconciler) leaveToAuthority(ctx context.Context, s *scope, d authority.Decision) error {
	s.leftAlone = true
	work := s.base.DeepCopy()
	if !authority.Apply(log.FromContext(ctx), d, "Machine", &work.Status.AuthoritativeAPI, &work.Status.Conditions, r.Now()) {
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

// ProviderSpecServer is an Actuator that names the providerSpec types it serves (every provider should);
// without it, or with no kind, the Actuator gets every Machine.
type ProviderSpecServer interface {
	// ProviderSpecKinds returns the providerSpec.value types the provider decodes; an empty Kind is every
	// kind of the group, only for a group of its own (a shared one, machine.openshift.io, names the kind).
	ProviderSpecKinds() []schema.GroupKind
}

// servedKinds returns the kinds the actuator serves; nil means all.
func servedKinds(a Actuator) []schema.GroupKind {
	if s, ok := a.(ProviderSpecServer); ok {
		return s.ProviderSpecKinds()
	}
	return nil
}

type specType struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Group      string `json:"-"`
}

// providerSpecType reads a providerSpec.value's apiVersion and kind; false without a parsable apiVersion.
func providerSpecType(value *runtime.RawExtension) (specType, bool) {
	var t specType
	switch {
	case value == nil:
	case value.Object != nil:
		t.APIVersion, t.Kind = value.Object.GetObjectKind().GroupVersionKind().ToAPIVersionAndKind()
	case json.Unmarshal(value.Raw, &t) != nil:
		return specType{}, false
	}
	gv, err := schema.ParseGroupVersion(t.APIVersion)
	t.Group = gv.Group
	return t, t.APIVersion != "" && err == nil
}

// servedBy reports whether one of served covers the type.
func (t specType) servedBy(served []schema.GroupKind) bool {
	return slices.ContainsFunc(served, func(gk schema.GroupKind) bool {
		return gk.Group == t.Group && (gk.Kind == "" || gk.Kind == t.Kind)
	})
}

// foreignProviderSpec decides whether a providerSpec.value, with a parsable apiVersion, is another's.
func foreignProviderSpec(value *runtime.RawExtension, served []schema.GroupKind) (specType, bool) {
	if len(served) == 0 {
		return specType{}, false
	}
	t, ok := providerSpecType(value)
	return t, ok && !t.servedBy(served)
}

// describeKinds names served types for messages: "group" for every kind of a group, else "Kind (group)".
func describeKinds(served []schema.GroupKind) string {
	out := make([]string, 0, len(served))
	for _, gk := range served {
		if gk.Kind == "" {
			out = append(out, gk.Group)
		} else {
			out = append(out, fmt.Sprintf("%s (%s)", gk.Kind, gk.Group))
		}
	}
	return strings.Join(out, ", ")
}

// unsupportedProviderMessage is the ProviderSupported=False message.
func unsupportedProviderMessage(t specType, served []schema.GroupKind) string {
	return fmt.Sprintf("spec.providerSpec.value has kind %s (apiVersion %s): it needs the machine controller of the provider serving %s; "+
		"this machine controller serves only %s and leaves the Machine untouched",
		cmp.Or(t.Kind, "(none)"), t.APIVersion, cmp.Or(t.Group, "the core group"), describeKinds(served))
}

// leaveForeign sets ProviderSupported=False (conditions alone) with an UnsupportedProvider event each time it
// is written; our finalizer is never added nor removed: another controller may own it.
func (r *Reconciler) leaveForeign(ctx context.Context, s *scope, t specType) error {
	s.leftAlone = true
	m := s.m
	c := conditions.New(ProviderSupportedCondition, corev1.ConditionFalse, ReasonUnsupportedProvider,
		machinev1beta1.ConditionSeverityWarning, unsupportedProviderMessage(t, servedKinds(r.Actuator)))
	if conditions.Has(m.Status.Conditions, c) {
		return nil
	}
	log.FromContext(ctx).Info("leaving a Machine of another provider untouched", "apiVersion", t.APIVersion, "kind", t.Kind)
	r.events.Eventf(m, nil, corev1.EventTypeWarning, EventUnsupportedProvider, "Reconcile", "%s", c.Message)
	// The controller's other fields are sent as they are (an apply without them would remove those it wrote).
	work := s.base.DeepCopy()
	work.Status.Conditions = conditions.Set(work.Status.Conditions, c, r.Now())
	if err := client.IgnoreNotFound(r.apply(ctx, s, work, statusFields)); err != nil {
		return fmt.Errorf("setting %s on a Machine of another provider: %w", ProviderSupportedCondition, err)
	}
	return nil
}
