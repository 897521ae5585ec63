package machine

// Machines of other providers. One binary serves the providerSpec types of
// the providers compiled into it; a Machine whose providerSpec is of another
// type (an AWS Machine seen by this project's controller, which serves
// kubemark and vSphere) is left untouched:
// no finalizer, no phase, no provider call, never Failed. It only gets
// ProviderSupported=False/UnsupportedProvider and an UnsupportedProvider
// event, so that the user sees which provider it needs.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
)

// ProviderSpecServer is implemented by an Actuator that knows which
// providerSpec types it serves (every provider should). The controller leaves
// a Machine whose providerSpec.value is of another type untouched (see
// ProviderSupportedCondition) and never calls the Actuator for it. An
// Actuator without this method, or returning no kind, is given every Machine.
type ProviderSpecServer interface {
	// ProviderSpecKinds returns the API group and kind of each
	// providerSpec.value type the provider decodes. An empty Kind stands for
	// every kind of the group (a group of the provider's own, such as
	// kubemark.machine-api-operator.io); a group shared with other providers
	// (machine.openshift.io) must name the kind (VSphereMachineProviderSpec),
	// or another provider's Machines would reach this one.
	ProviderSpecKinds() []schema.GroupKind
}

// servedKinds returns the kinds the actuator serves; nil means all.
func servedKinds(a Actuator) []schema.GroupKind {
	if s, ok := a.(ProviderSpecServer); ok {
		return s.ProviderSpecKinds()
	}
	return nil
}

// specType is the apiVersion and kind of a providerSpec.value.
type specType struct {
	APIVersion string
	Kind       string
	Group      string
}

// providerSpecType reads the apiVersion and kind of a providerSpec.value;
// false when it has no parsable apiVersion (absent, not a JSON object).
func providerSpecType(value *runtime.RawExtension) (specType, bool) {
	if value == nil {
		return specType{}, false
	}
	var t specType
	switch {
	case value.Object != nil:
		t.APIVersion, t.Kind = value.Object.GetObjectKind().GroupVersionKind().ToAPIVersionAndKind()
	case len(value.Raw) > 0:
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := json.Unmarshal(value.Raw, &head); err != nil {
			return specType{}, false
		}
		t.APIVersion, t.Kind = head.APIVersion, head.Kind
	}
	if t.APIVersion == "" {
		return specType{}, false
	}
	gv, err := schema.ParseGroupVersion(t.APIVersion)
	if err != nil {
		return specType{}, false
	}
	t.Group = gv.Group
	return t, true
}

// servedBy reports whether one of served covers the type.
func (t specType) servedBy(served []schema.GroupKind) bool {
	return slices.ContainsFunc(served, func(gk schema.GroupKind) bool {
		return gk.Group == t.Group && (gk.Kind == "" || gk.Kind == t.Kind)
	})
}

// foreignProviderSpec decides whether a providerSpec.value belongs to another
// provider: its apiVersion's group and its kind are not among served. A value
// that is absent, not a JSON object or without a parsable apiVersion is not
// foreign: the provider reports what is wrong with it. An empty served list
// serves everything.
func foreignProviderSpec(value *runtime.RawExtension, served []schema.GroupKind) (specType, bool) {
	if len(served) == 0 {
		return specType{}, false
	}
	t, ok := providerSpecType(value)
	if !ok {
		return specType{}, false
	}
	return t, !t.servedBy(served)
}

// describeKinds names served types for messages: "group" for every kind of
// a group, "Kind (group)" otherwise.
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
	kind := t.Kind
	if kind == "" {
		kind = "(none)"
	}
	group := t.Group
	if group == "" {
		group = "the core group"
	}
	return fmt.Sprintf("spec.providerSpec.value has kind %s (apiVersion %s): it needs the machine controller of the provider serving %s; "+
		"this machine controller serves only %s and leaves the Machine untouched",
		kind, t.APIVersion, group, describeKinds(served))
}

// leaveForeign reports, and does nothing else, on a Machine of another
// provider: ProviderSupported=False (written with a patch of the conditions
// alone, so phase, lastUpdated and errors stay as they are) and, each time
// that condition is written (it is new or names another providerSpec), an
// UnsupportedProvider event. The finalizer is never
// added nor removed: another controller may own it.
func (r *Reconciler) leaveForeign(ctx context.Context, s *scope, t specType) error {
	s.gone = true // hands off: no status patch from Reconcile
	m := s.m
	c := conditions.New(ProviderSupportedCondition, corev1.ConditionFalse, ReasonUnsupportedProvider,
		machinev1beta1.ConditionSeverityWarning, unsupportedProviderMessage(t, servedKinds(r.actuator)))
	if existing := conditions.Get(m.Status.Conditions, c.Type); existing != nil &&
		existing.Status == c.Status && existing.Reason == c.Reason && existing.Message == c.Message {
		return nil
	}
	log.FromContext(ctx).Info("leaving a Machine of another provider untouched", "apiVersion", t.APIVersion, "kind", t.Kind)
	r.events.Eventf(m, nil, corev1.EventTypeWarning, EventUnsupportedProvider, "Reconcile", "%s", c.Message)
	patched := m.DeepCopy()
	patched.Status.Conditions = conditions.Set(patched.Status.Conditions, c, r.now())
	if err := patch.Status(ctx, r.client, r.freshReader(), m, patched); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // deleted meanwhile
		}
		return fmt.Errorf("setting %s on a Machine of another provider: %w", ProviderSupportedCondition, err)
	}
	*s.m = *patched
	s.base = patched.DeepCopy()
	return nil
}
