package machine

// Machines of other providers. One binary serves the providerSpec API groups
// of the providers compiled into it; a Machine whose providerSpec belongs to
// another group (an AWS Machine seen by the kubemark controller, a vSphere
// Machine on a platform this project has no provider for) is left untouched:
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
// providerSpec API groups it serves (every provider should). The controller
// leaves a Machine whose providerSpec.value apiVersion has another group
// untouched (see ProviderSupportedCondition) and never calls the Actuator for
// it. An Actuator without this method, or returning no group, is given every
// Machine.
type ProviderSpecServer interface {
	// ProviderSpecGroups returns the API groups of the providerSpec.value
	// kinds the provider decodes, e.g. "kubemark.machine-api-operator.io".
	ProviderSpecGroups() []string
}

// servedGroups returns the groups the actuator serves; nil means all.
func servedGroups(a Actuator) []string {
	if s, ok := a.(ProviderSpecServer); ok {
		return s.ProviderSpecGroups()
	}
	return nil
}

// specType is the apiVersion and kind of a providerSpec.value.
type specType struct {
	APIVersion string
	Kind       string
	Group      string
}

// foreignProviderSpec decides whether a providerSpec.value belongs to another
// provider: its apiVersion names an API group that is not in served. A value
// that is absent, not a JSON object or without a parsable apiVersion is not
// foreign: the provider reports what is wrong with it. An empty served list
// serves everything.
func foreignProviderSpec(value *runtime.RawExtension, served []string) (specType, bool) {
	if len(served) == 0 || value == nil {
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
	return t, !slices.Contains(served, gv.Group)
}

// unsupportedProviderMessage is the ProviderSupported=False message.
func unsupportedProviderMessage(t specType, served []string) string {
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
		kind, t.APIVersion, group, strings.Join(served, ", "))
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
		machinev1beta1.ConditionSeverityWarning, unsupportedProviderMessage(t, servedGroups(r.actuator)))
	if existing := conditions.Get(m.Status.Conditions, c.Type); existing != nil &&
		existing.Status == c.Status && existing.Reason == c.Reason && existing.Message == c.Message {
		return nil
	}
	log.FromContext(ctx).Info("leaving a Machine of another provider untouched", "apiVersion", t.APIVersion, "kind", t.Kind)
	r.eventf(m, corev1.EventTypeWarning, EventUnsupportedProvider, "Reconcile", "%s", c.Message)
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
