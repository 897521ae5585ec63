package machine

import (
	"context"
	"maps"
	"sync"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fakeActuator is a scriptable fake Actuator: configure it under Set, read the counters with Calls.
type fakeActuator struct {
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
	Groups                []string // the providerSpec API groups served (provider.SpecServer); empty: all

	calls map[string]int
}

type hook = func(ctx context.Context, m *machinev1beta1.Machine) error

// Operation names used by Calls.
const (
	opCreate = "Create"
	opUpdate = "Update"
	opExists = "Exists"
	opDelete = "Delete"
)

// Set runs f with the actuator locked (to change its configuration).
func (a *fakeActuator) Set(f func(a *fakeActuator)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(a)
}

// Calls returns how many times op was called.
func (a *fakeActuator) Calls(op string) (n int) {
	a.Set(func(a *fakeActuator) { n = a.calls[op] })
	return n
}

// AllCalls returns a copy of every counter.
func (a *fakeActuator) AllCalls() (calls map[string]int) {
	a.Set(func(a *fakeActuator) { calls = maps.Clone(a.calls) })
	return calls
}

// Reset zeroes the counters.
func (a *fakeActuator) Reset() {
	a.Set(func(a *fakeActuator) { a.calls = nil })
}

// call counts op, reads its configuration with config (under the lock), then runs its hook.
func (a *fakeActuator) call(ctx context.Context, m *machinev1beta1.Machine, op string, config func() (hook, error)) error {
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

func (a *fakeActuator) fill(m *machinev1beta1.Machine) {
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

// ProviderSpecKinds implements provider.SpecServer: every kind of Groups.
func (a *fakeActuator) ProviderSpecKinds() (kinds []schema.GroupKind) {
	a.Set(func(a *fakeActuator) {
		for _, g := range a.Groups {
			kinds = append(kinds, schema.GroupKind{Group: g})
		}
	})
	return kinds
}

// Create implements Actuator.
func (a *fakeActuator) Create(ctx context.Context, m *machinev1beta1.Machine) error {
	var sets bool
	err := a.call(ctx, m, opCreate, func() (hook, error) { sets = a.CreateSetsInstance; return a.CreateHook, a.CreateErr })
	if err == nil && sets {
		a.Set(func(a *fakeActuator) { a.ExistsValue = true; a.fill(m) })
	}
	return err
}

// Update implements Actuator.
func (a *fakeActuator) Update(ctx context.Context, m *machinev1beta1.Machine) error {
	return a.call(ctx, m, opUpdate, func() (hook, error) { a.fill(m); return a.UpdateHook, a.UpdateErr })
}

// Exists implements Actuator.
func (a *fakeActuator) Exists(ctx context.Context, m *machinev1beta1.Machine) (bool, error) {
	var h func(ctx context.Context, m *machinev1beta1.Machine) (bool, error)
	var v bool
	err := a.call(ctx, m, opExists, func() (hook, error) { h, v = a.ExistsHook, a.ExistsValue; return nil, a.ExistsErr })
	if h != nil {
		return h(ctx, m)
	}
	return v, err
}

// Delete implements Actuator.
func (a *fakeActuator) Delete(ctx context.Context, m *machinev1beta1.Machine) error {
	var gone bool
	err := a.call(ctx, m, opDelete, func() (hook, error) { gone = a.DeleteRemovesInstance; return a.DeleteHook, a.DeleteErr })
	if err == nil && gone {
		a.Set(func(a *fakeActuator) { a.ExistsValue = false })
	}
	return err
}
