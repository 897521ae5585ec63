// Package machinetest holds test helpers for the machine controller and for
// providers: a scriptable fake Actuator that counts calls.
package machinetest

import (
	"context"
	"sync"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Actuator is a fake machine.Actuator. Configure it with the fields (under
// Lock/Unlock or with Set) and read the counters with Calls. It is safe for
// concurrent use. The zero value reports that no instance exists and
// succeeds at everything.
type Actuator struct {
	mu sync.Mutex

	// ExistsValue is what Exists answers (after ExistsHook).
	ExistsValue bool
	// Errors returned by each operation (nil = success).
	CreateErr, UpdateErr, ExistsErr, DeleteErr error

	// Hooks run at the start of each call with the Machine the controller
	// passed (they may set providerID, addresses and providerStatus, as a
	// provider does). A hook's non-nil error replaces the configured one.
	CreateHook, UpdateHook, DeleteHook func(ctx context.Context, m *machinev1beta1.Machine) error
	ExistsHook                         func(ctx context.Context, m *machinev1beta1.Machine) (bool, error)

	// CreateSetsInstance makes a successful Create behave like a provider:
	// ExistsValue becomes true and, when ProviderID is set, the Machine gets
	// that providerID and Addresses.
	CreateSetsInstance bool
	// DeleteRemovesInstance makes a successful Delete set ExistsValue false.
	DeleteRemovesInstance bool
	// ProviderID and Addresses are written by Create/Update when set.
	ProviderID string
	Addresses  []string

	// Groups, when set, are the providerSpec API groups the fake serves
	// (machine.ProviderSpecServer); empty serves every Machine.
	Groups []string

	calls map[string]int
}

// Operation names used by Calls.
const (
	Create = "Create"
	Update = "Update"
	Exists = "Exists"
	Delete = "Delete"
)

// Set runs f with the actuator locked (to change its configuration).
func (a *Actuator) Set(f func(a *Actuator)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(a)
}

// Calls returns how many times op was called.
func (a *Actuator) Calls(op string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls[op]
}

// AllCalls returns a copy of every counter.
func (a *Actuator) AllCalls() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]int{}
	for k, v := range a.calls {
		out[k] = v
	}
	return out
}

// Reset zeroes the counters.
func (a *Actuator) Reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = nil
}

func (a *Actuator) count(op string) {
	if a.calls == nil {
		a.calls = map[string]int{}
	}
	a.calls[op]++
}

func (a *Actuator) fill(m *machinev1beta1.Machine) {
	if a.ProviderID != "" {
		id := a.ProviderID
		m.Spec.ProviderID = &id
	}
	if len(a.Addresses) > 0 {
		m.Status.Addresses = nil
		for _, ip := range a.Addresses {
			m.Status.Addresses = append(m.Status.Addresses, nodeAddress(ip))
		}
	}
}

// ProviderSpecKinds implements machine.ProviderSpecServer: every kind of
// Groups.
func (a *Actuator) ProviderSpecKinds() []schema.GroupKind {
	a.mu.Lock()
	defer a.mu.Unlock()
	var kinds []schema.GroupKind
	for _, g := range a.Groups {
		kinds = append(kinds, schema.GroupKind{Group: g})
	}
	return kinds
}

// Create implements machine.Actuator.
func (a *Actuator) Create(ctx context.Context, m *machinev1beta1.Machine) error {
	a.mu.Lock()
	a.count(Create)
	hook, err, sets := a.CreateHook, a.CreateErr, a.CreateSetsInstance
	a.mu.Unlock()
	if hook != nil {
		if herr := hook(ctx, m); herr != nil {
			err = herr
		}
	}
	if err != nil {
		return err
	}
	if sets {
		a.mu.Lock()
		a.ExistsValue = true
		a.fill(m)
		a.mu.Unlock()
	}
	return nil
}

// Update implements machine.Actuator.
func (a *Actuator) Update(ctx context.Context, m *machinev1beta1.Machine) error {
	a.mu.Lock()
	a.count(Update)
	hook, err := a.UpdateHook, a.UpdateErr
	a.fill(m)
	a.mu.Unlock()
	if hook != nil {
		if herr := hook(ctx, m); herr != nil {
			err = herr
		}
	}
	return err
}

// Exists implements machine.Actuator.
func (a *Actuator) Exists(ctx context.Context, m *machinev1beta1.Machine) (bool, error) {
	a.mu.Lock()
	a.count(Exists)
	hook, v, err := a.ExistsHook, a.ExistsValue, a.ExistsErr
	a.mu.Unlock()
	if hook != nil {
		return hook(ctx, m)
	}
	return v, err
}

// Delete implements machine.Actuator.
func (a *Actuator) Delete(ctx context.Context, m *machinev1beta1.Machine) error {
	a.mu.Lock()
	a.count(Delete)
	hook, err, removes := a.DeleteHook, a.DeleteErr, a.DeleteRemovesInstance
	a.mu.Unlock()
	if hook != nil {
		if herr := hook(ctx, m); herr != nil {
			err = herr
		}
	}
	if err != nil {
		return err
	}
	if removes {
		a.mu.Lock()
		a.ExistsValue = false
		a.mu.Unlock()
	}
	return nil
}
