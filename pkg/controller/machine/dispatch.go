package machine

import (
	"context"
	"fmt"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Providers is an Actuator serving several providers from one binary: each Machine goes to the provider
// whose ProviderSpecKinds cover its providerSpec.value, and the controller leaves Machines of any other
// type untouched. A providerSpec.value without a parsable apiVersion goes to the first provider, which
// reports what is wrong with it.
type Providers struct {
	providers []ProviderActuator
}

// ProviderActuator is an Actuator that names the providerSpec types it serves.
type ProviderActuator interface {
	Actuator
	ProviderSpecServer
}

var _ ProviderActuator = &Providers{}

// NewProviders returns an Actuator dispatching to providers; the first is the default for Machines whose
// providerSpec names no type.
func NewProviders(providers ...ProviderActuator) *Providers {
	return &Providers{providers: providers}
}

// ProviderSpecKinds implements ProviderSpecServer: every provider's kinds.
func (p *Providers) ProviderSpecKinds() []schema.GroupKind {
	var kinds []schema.GroupKind
	for _, a := range p.providers {
		kinds = append(kinds, a.ProviderSpecKinds()...)
	}
	return kinds
}

// providerFor picks the Machine's provider.
func (p *Providers) providerFor(m *machinev1beta1.Machine) (Actuator, error) {
	if len(p.providers) == 0 {
		return nil, fmt.Errorf("no machine provider is configured")
	}
	t, ok := providerSpecType(m.Spec.ProviderSpec.Value)
	if !ok {
		return p.providers[0], nil
	}
	for _, a := range p.providers {
		if t.servedBy(a.ProviderSpecKinds()) {
			return a, nil
		}
	}
	// Only a caller that does not filter foreign Machines, as the controller does, gets here.
	return nil, fmt.Errorf("no provider serves providerSpec kind %s (apiVersion %s); this machine controller serves %s",
		t.Kind, t.APIVersion, describeKinds(p.ProviderSpecKinds()))
}

// Create implements Actuator.
func (p *Providers) Create(ctx context.Context, m *machinev1beta1.Machine) error {
	a, err := p.providerFor(m)
	if err != nil {
		return err
	}
	return a.Create(ctx, m)
}

// Update implements Actuator.
func (p *Providers) Update(ctx context.Context, m *machinev1beta1.Machine) error {
	a, err := p.providerFor(m)
	if err != nil {
		return err
	}
	return a.Update(ctx, m)
}

// Exists implements Actuator.
func (p *Providers) Exists(ctx context.Context, m *machinev1beta1.Machine) (bool, error) {
	a, err := p.providerFor(m)
	if err != nil {
		return false, err
	}
	return a.Exists(ctx, m)
}

// Delete implements Actuator.
func (p *Providers) Delete(ctx context.Context, m *machinev1beta1.Machine) error {
	a, err := p.providerFor(m)
	if err != nil {
		return err
	}
	return a.Delete(ctx, m)
}
