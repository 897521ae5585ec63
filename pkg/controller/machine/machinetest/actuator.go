// Package machinetest holds a scriptable fake Actuator that counts calls.
package machinetest

import (
	"context"
	"maps"
	"sync"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Actuator is a fake machine.Actuator: configure it under Set, read the counters with Calls.
type Actuator struct {
	mu sync.Mutex

	ExistsValue                                bool  // what Exists answers (after ExistsHook)
	CreateErr, UpdateErr, ExistsErr, DeleteErr error // returned by each operation (nil = success)

	// Hooks run at the start of each call with the controller's Machine; a non-nil error replaces the configured one.
	CreateHook, UpdateHook, DeleteHook hook
	ExistsHook                         func(ctx context.Context, m *machinev1beta1.Machine) (bool, error)

	CreateSetsInstance    bool     // a successful Create sets ExistsValue, ProviderID and Addresses
	DeleteRemovesInstance bool     // a successful Delete clears ExistsValue
	ProviderID            string   // written by Create/Update when set
	Addresses             []string // likewise
	Groups                []string // the providerSpec API groups served (machine.ProviderSpecServer); empty: all

	calls map[string]int
}

type hook = func(ctx context.Context, m *machinev1beta1.Machine) error

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
func (a *Actuator) Calls(op string) (n int) {
	a.Set(func(a *Actuator) { n = a.calls[op] })
	return n
}

// AllCalls returns a copy of every counter.
func (a *Actuator) AllCalls() (calls map[string]int) {
	a.Set(func(a *Actuator) { calls = maps.Clone(a.calls) })
	return calls
}

// Reset zeroes the counters.
func (a *Actuator) Reset() {
	a.Set(func(a *Actuator) { a.calls = nil })
}

// call counts op, reads its configuration with config (under the lock), then runs its hook.
func (a *Actuator) call(ctx context.Context, m *machinev1beta1.Machine, op string, config func() (hook, error)) error {
	a.mu.Lock()
	if a.calls == nil {
		a.calls = map[string]int{}
	}
	a.calls[op]++
	h, err := config()
	a.mu.Unlock()
	if h != nil {
		if herr := h(ctx, m); herr != nil {
			err = herr
		}
	}
	return err
}

func (a *Actuator) fill(m *machinev1beta1.Machine) {
	if a.ProviderID != "" {
		id := a.ProviderID
		m.Spec.ProviderID = &id
	}
	if len(a.Addresses) > 0 {
		m.Status.Addresses = nil
		for _, ip := range a.Addresses {
			m.Status.Addresses = append(m.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
		}
	}
}

// ProviderSpecKinds implements machine.ProviderSpecServer: every kind of Groups.
func (a *Actuator) ProviderSpecKinds() (kinds []schema.GroupKind) {
	a.Set(func(a *Actuator) {
		for _, g := range a.Groups {
			kinds = append(kinds, schema.GroupKind{Group: g})
		}
	})
	return kinds
}

// Create implements machine.Actuator.
func (a *Actuator) Create(ctx context.Context, m *machinev1beta1.Machine) error {
	var sets bool
	err := a.call(ctx, m, Create, func() (hook, error) { sets = a.CreateSetsInstance; return a.CreateHook, a.CreateErr })
	if err == nil && sets {
		a.Set(func(a *Actuator) { a.ExistsValue = true; a.fill(m) })
	}
	return err
}

// Update implements machine.Actuator.
func (a *Actuator) Update(ctx context.Context, m *machinev1beta1.Machine) error {
	return a.call(ctx, m, Update, func() (hook, error) { a.fill(m); return a.UpdateHook, a.UpdateErr })
}

// Exists implements machine.Actuator.
func (a *Actuator) Exists(ctx context.Context, m *machinev1beta1.Machine) (bool, error) {
	var h func(ctx context.Context, m *machinev1beta1.Machine) (bool, error)
	var v bool
	err := a.call(ctx, m, Exists, func() (hook, error) { h, v = a.ExistsHook, a.ExistsValue; return nil, a.ExistsErr })
	if h != nil {
		return h(ctx, m)
	}
	return v, err
}

// Delete implements machine.Actuator.
func (a *Actuator) Delete(ctx context.Context, m *machinev1beta1.Machine) error {
	var gone bool
	err := a.call(ctx, m, Delete, func() (hook, error) { gone = a.DeleteRemovesInstance; return a.DeleteHook, a.DeleteErr })
	if err == nil && gone {
		a.Set(func(a *Actuator) { a.ExistsValue = false })
	}
	return err
}
