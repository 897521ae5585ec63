package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Providers is an Actuator serving several providers, each Machine dispatched by its providerSpec type.
type Providers struct {
	providers []ServingActuator
}

var _ ServingActuator = &Providers{}

// NewProviders returns an Actuator dispatching to providers; the first gets untyped providerSpecs.
func NewProviders(providers ...ServingActuator) *Providers {
	return &Providers{providers: providers}
}

// ProviderSpecKinds implements SpecServer: every provider's kinds.
func (p *Providers) ProviderSpecKinds() []schema.GroupKind {
	var kinds []schema.GroupKind
	for _, a := range p.providers {
		kinds = append(kinds, a.ProviderSpecKinds()...)
	}
	return kinds
}

// providerFor picks the Machine's provider; with none, one that answers every call with why.
func (p *Providers) providerFor(m *machinev1beta1.Machine) Actuator {
	if len(p.providers) == 0 {
		return unserved{fmt.Errorf("no machine provider is configured")}
	}
	t, ok := SpecTypeOf(m.Spec.ProviderSpec.Value)
	if !ok {
		return p.providers[0]
	}
	for _, a := range p.providers {
		if t.ServedBy(a.ProviderSpecKinds()) {
			return a
		}
	}
	// Only a caller that does not filter foreign Machines, as the controller does, gets here.
	return unserved{fmt.Errorf("no provider serves providerSpec kind %s (apiVersion %s); this machine controller serves %s",
		t.Kind, t.APIVersion, DescribeKinds(p.ProviderSpecKinds()))}
}

// Create implements Actuator.
func (p *Providers) Create(ctx context.Context, m *machinev1beta1.Machine) error {
	return p.providerFor(m).Create(ctx, m)
}

// Update implements Actuator.
func (p *Providers) Update(ctx context.Context, m *machinev1beta1.Machine) error {
	return p.providerFor(m).Update(ctx, m)
}

// Exists implements Actuator.
func (p *Providers) Exists(ctx context.Context, m *machinev1beta1.Machine) (bool, error) {
	return p.providerFor(m).Exists(ctx, m)
}

// Delete implements Actuator.
func (p *Providers) Delete(ctx context.Context, m *machinev1beta1.Machine) error {
	return p.providerFor(m).Delete(ctx, m)
}

// unserved is the Actuator of a Machine no provider serves: every call fails with err.
type unserved struct{ err error }

func (u unserved) Create(context.Context, *machinev1beta1.Machine) error         { return u.err }
func (u unserved) Update(context.Context, *machinev1beta1.Machine) error         { return u.err }
func (u unserved) Exists(context.Context, *machinev1beta1.Machine) (bool, error) { return false, u.err }
func (u unserved) Delete(context.Context, *machinev1beta1.Machine) error         { return u.err }

// ServedKinds returns the kinds the actuator serves; nil means all.
func ServedKinds(a Actuator) []schema.GroupKind {
	if s, ok := a.(SpecServer); ok {
		return s.ProviderSpecKinds()
	}
	return nil
}

// SpecType is a providerSpec.value's apiVersion and kind, and the group of its apiVersion.
type SpecType struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Group      string `json:"-"`
}

// SpecTypeOf reads a providerSpec.value's apiVersion and kind; false without a parsable apiVersion.
func SpecTypeOf(value *runtime.RawExtension) (SpecType, bool) {
	var t SpecType
	switch {
	case value == nil:
	case value.Object != nil:
		t.APIVersion, t.Kind = value.Object.GetObjectKind().GroupVersionKind().ToAPIVersionAndKind()
	case json.Unmarshal(value.Raw, &t) != nil:
		return SpecType{}, false
	}
	gv, err := schema.ParseGroupVersion(t.APIVersion)
	t.Group = gv.Group
	return t, t.APIVersion != "" && err == nil
}

// ServedBy reports whether one of served covers the type.
func (t SpecType) ServedBy(served []schema.GroupKind) bool {
	return slices.ContainsFunc(served, func(gk schema.GroupKind) bool {
		return gk.Group == t.Group && (gk.Kind == "" || gk.Kind == t.Kind)
	})
}

// DescribeKinds names served types for messages: "group" for every kind of a group, else "Kind (group)".
func DescribeKinds(served []schema.GroupKind) string {
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
