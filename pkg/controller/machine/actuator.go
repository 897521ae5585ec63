// Package machine is the machine controller: it drives each Machine through a provider (Actuator) from
// creation to deletion, draining its node and honouring lifecycle hooks on the way out.
package machine

import (
	"context"
	"errors"
	"fmt"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Actuator is what a provider implements. Every method must be idempotent: the controller calls them
// again after errors, restarts and leader changes.
//
// Create and Update may set, on the Machine they get, spec.providerID (stable and unique),
// status.addresses (at least the Node's InternalIP) and status.providerStatus; the controller persists
// exactly these, and alone writes phase, conditions, errors, lastUpdated and the finalizer.
//
// Errors: an InvalidConfiguration MachineError from Create fails the Machine (retrying cannot help; name
// the field); a *RequeueAfterError is a provider-side wait, not an error; any other is retried with backoff.
// A provider should also implement ProviderSpecServer, so it never gets another provider's Machine.
type Actuator interface {
	// Create creates the instance. Called only when Exists reported false.
	Create(ctx context.Context, machine *machinev1beta1.Machine) error
	// Update brings an existing instance in line with the Machine and refreshes providerID, addresses
	// and providerStatus.
	Update(ctx context.Context, machine *machinev1beta1.Machine) error
	// Exists reports whether the instance exists: false only when it is certainly gone (or never created).
	Exists(ctx context.Context, machine *machinev1beta1.Machine) (bool, error)
	// Delete starts or completes deleting the instance; the controller calls Exists until it is false.
	Delete(ctx context.Context, machine *machinev1beta1.Machine) error
}

// MachineError is a provider error with a Machine API error reason.
type MachineError struct {
	Reason  machinev1beta1.MachineStatusError
	Message string
}

func (e *MachineError) Error() string { return fmt.Sprintf("%s: %s", e.Reason, e.Message) }

// InvalidConfiguration reports a providerSpec that cannot work; the Machine becomes Failed. The message
// should name the field and say what is wrong.
func InvalidConfiguration(format string, args ...any) *MachineError {
	return &MachineError{Reason: machinev1beta1.InvalidConfigurationMachineError, Message: fmt.Sprintf(format, args...)}
}

// IsInvalidConfiguration reports whether err (or an error it wraps) is an InvalidConfiguration MachineError.
func IsInvalidConfiguration(err error) bool {
	me := asMachineError(err)
	return me != nil && me.Reason == machinev1beta1.InvalidConfigurationMachineError
}

// asMachineError returns the *MachineError in err's chain, or nil.
func asMachineError(err error) *MachineError {
	var me *MachineError
	errors.As(err, &me)
	return me
}

// RequeueAfterError asks the controller to come back after After.
type RequeueAfterError struct {
	After  time.Duration
	Reason string // logged and shown in conditions ("instance is booting")
}

func (e *RequeueAfterError) Error() string {
	return fmt.Sprintf("requeue in %s: %s", e.After, e.Reason)
}

// RequeueAfter returns a RequeueAfterError.
func RequeueAfter(after time.Duration, reason string) error {
	return &RequeueAfterError{After: after, Reason: reason}
}

// AsRequeueAfter returns the RequeueAfterError in err's chain, if any.
func AsRequeueAfter(err error) (*RequeueAfterError, bool) {
	var r *RequeueAfterError
	ok := errors.As(err, &r)
	return r, ok
}

// Instance is one provider instance, as an InstanceLister reports it.
type Instance struct {
	ProviderID string    // the owning Machine's spec.providerID, now or to be
	Name       string    // for this project's providers, the name of the Machine it was created for
	CreatedAt  time.Time // zero when the provider cannot tell: such an instance is never collected
}

// InstanceLister is an optional provider interface for the orphan instance collection of package safety
// (docs/safety.md).
type InstanceLister interface {
	// ListInstances lists the instances that Machines of namespace own or would own (the whole
	// cluster's when namespace is empty or the provider cannot tell namespaces apart).
	ListInstances(ctx context.Context, namespace string) ([]Instance, error)
	// DeleteInstance deletes inst, and nothing when the instance named inst.Name is no longer the one
	// of inst.ProviderID; a missing instance counts as deleted.
	DeleteInstance(ctx context.Context, inst Instance) error
}

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

// providerFor picks the Machine's provider; with none, one that answers every call with why.
func (p *Providers) providerFor(m *machinev1beta1.Machine) Actuator {
	if len(p.providers) == 0 {
		return unserved{fmt.Errorf("no machine provider is configured")}
	}
	t, ok := providerSpecType(m.Spec.ProviderSpec.Value)
	if !ok {
		return p.providers[0]
	}
	for _, a := range p.providers {
		if t.servedBy(a.ProviderSpecKinds()) {
			return a
		}
	}
	// Only a caller that does not filter foreign Machines, as the controller does, gets here.
	return unserved{fmt.Errorf("no provider serves providerSpec kind %s (apiVersion %s); this machine controller serves %s",
		t.Kind, t.APIVersion, describeKinds(p.ProviderSpecKinds()))}
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
