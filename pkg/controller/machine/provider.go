// Package machine is the machine controller: it drives each Machine through a provider (Actuator) from
// creation to deletion, draining its node and honouring lifecycle hooks on the way out.
package machine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
)

// Actuator is what a provider implements. Every method must be idempotent: the controller calls them
// again after errors, restarts and leader changes.
//
// Create and Update may set, on the Machine they get, spec.providerID (stable and unique),
// status.addresses (at least the Node's InternalIP) and status.providerStatus; the controller persists
// exactly these, and alone writes phase, conditions, errors, lastUpdated and the finalizer.
//
// Errors: an InvalidConfiguration MachineError from Create fails the Machine (retrying cannot help; name
// the field), as does one from Exists before the Machine was provisioned; from Update it sets
// ProviderUpdated=False. A terminal failure from Create, Update or Exists is an error returned with the
// Machine's status.phase set to Failed (Failed does both: OpenShift's contract); the Machine then fails with
// errorReason/errorMessage from the error. A *RequeueAfterError is a provider-side wait, not an error; any
// other is retried with backoff. The deletion path fails nothing: it retries.
// A provider should also implement ProviderSpecServer, so it never gets another provider's Machine.
type Actuator interface {
	// Create creates the instance once Exists reported false, maybe on a stale view of a Machine provisioned
	// meanwhile: it first looks for the instance it made for it (kubemark: the Node of its name; vSphere: its UID).
	Create(ctx context.Context, machine *machinev1beta1.Machine) error
	// Update brings an existing instance in line with the Machine and refreshes what Create may set.
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

// InvalidConfiguration reports a providerSpec that cannot work (name the field); the Machine fails.
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

// Failed marks machine (the one the Actuator got) Failed and returns err: a terminal failure, which the
// controller persists with errorReason and errorMessage from err (a *MachineError gives both).
func Failed(machine *machinev1beta1.Machine, err error) error {
	phase := machinev1beta1.PhaseFailed
	machine.Status.Phase = &phase
	return err
}

// terminalError is an error an Actuator returned with its Machine marked Failed.
type terminalError struct{ err error }

func (e *terminalError) Error() string { return e.err.Error() }
func (e *terminalError) Unwrap() error { return e.err }

// isTerminal reports whether err is a provider's terminal failure.
func isTerminal(err error) bool {
	var t *terminalError
	return errors.As(err, &t)
}

// providerResult is err, marked terminal when the Actuator also set c's phase to Failed.
func providerResult(c *machinev1beta1.Machine, err error) error {
	if err != nil && phaseOf(c) == machinev1beta1.PhaseFailed {
		return &terminalError{err}
	}
	return err
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
	// Owner is the ownership mark the provider wrote when it created the instance; zero (no mark: an
	// installer's, a user's, another tool's instance) is never collected.
	Owner Owner
}

// InstanceLister is an optional provider interface for the orphan collection (docs/safety.md).
type InstanceLister interface {
	// ListInstances lists the instances in the places Machines of namespace create them (all when it cannot
	// tell), with their ownership marks; the collector checks each mark against the Machines of its namespace.
	ListInstances(ctx context.Context, namespace string) ([]Instance, error)
	// DeleteInstance deletes inst unless inst.Name now names another instance; a missing one is deleted.
	DeleteInstance(ctx context.Context, inst Instance) error
}

// Providers is an Actuator serving several providers, each Machine dispatched by its providerSpec type.
type Providers struct {
	providers []ProviderActuator
}

// ProviderActuator is an Actuator that names the providerSpec types it serves.
type ProviderActuator interface {
	Actuator
	ProviderSpecServer
}

var _ ProviderActuator = &Providers{}

// NewProviders returns an Actuator dispatching to providers; the first gets untyped providerSpecs.
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

// Calling the provider: keeping what it may set, counting failures, the Gate.

// Gate holds back the provider calls that create or delete instances while Frozen (package safety's
// API-server freeze), so none happens on a view of the cluster the controller cannot update.
type Gate interface {
	Frozen() bool
}

// gateRequeueAfter is how soon a Machine held back by the Gate is looked at again.
const gateRequeueAfter = 10 * time.Second

// heldByGate reports whether the Gate holds back op (create or delete).
func (r *Reconciler) heldByGate(ctx context.Context, op string) bool {
	if r.Gate == nil || !r.Gate.Frozen() {
		return false
	}
	log.FromContext(ctx).V(1).Info("not calling the provider: the machine controller is frozen while the API server is unreachable",
		"operation", op, "requeueAfter", gateRequeueAfter)
	return true
}

// requeueOrError turns a RequeueAfterError into a timed requeue; other errors get the backoff.
func requeueOrError(err error) (ctrl.Result, error) {
	if ra, ok := AsRequeueAfter(err); ok {
		return ctrl.Result{RequeueAfter: ra.After}, nil
	}
	return ctrl.Result{}, err
}

// exists calls Actuator.Exists on a copy of the Machine.
func (r *Reconciler) exists(ctx context.Context, s *scope) (bool, error) {
	ProviderCallsTotal.WithLabelValues(OperationExists).Inc()
	c := s.m.DeepCopy()
	ok, err := r.Actuator.Exists(ctx, c)
	countProviderError(s.m, OperationExists, err)
	return ok, providerResult(c, err)
}

// callProvider calls Create/Update/Delete on a copy of the Machine and keeps exactly what the Actuator
// may set: status.addresses and providerStatus (the status write) and spec.providerID, patched at once
// (nodelink links the Node by it), even after an error: the instance is there.
func (r *Reconciler) callProvider(ctx context.Context, s *scope, op string, call func(context.Context, *machinev1beta1.Machine) error) error {
	ProviderCallsTotal.WithLabelValues(op).Inc()
	c := s.m.DeepCopy()
	err := call(ctx, c)
	countProviderError(s.m, op, err)
	if op == OperationDelete {
		return err
	}
	s.m.Status.Addresses = c.Status.Addresses
	// The API server returns providerStatus with sorted keys: a provider's field order is no change.
	if !sameJSON(s.m.Status.ProviderStatus, c.Status.ProviderStatus) {
		s.m.Status.ProviderStatus = c.Status.ProviderStatus
	}
	err = providerResult(c, err)
	if !reflect.DeepEqual(s.m.Spec.ProviderID, c.Spec.ProviderID) {
		if perr := r.patchObject(ctx, s, false, func(m *machinev1beta1.Machine) { m.Spec.ProviderID = c.Spec.ProviderID }); perr != nil {
			err = errors.Join(err, fmt.Errorf("persisting spec.providerID: %w", perr))
		}
	}
	return err
}

// countProviderError counts a failed provider call; a RequeueAfterError is a wait, not a failure.
func countProviderError(m *machinev1beta1.Machine, op string, err error) {
	if _, wait := AsRequeueAfter(err); err == nil || wait {
		return
	}
	ProviderErrorsTotal.WithLabelValues(op).Inc()
	if c := instanceFailed[op]; c != nil {
		reason := patch.Truncate(err.Error(), maxReasonLength) // the reason label: the MachineError reason, or the message
		if me := asMachineError(err); me != nil && me.Reason != "" {
			reason = string(me.Reason)
		}
		c.WithLabelValues(m.Name, m.Namespace, reason).Inc()
	}
}

// providerIDSuffix is " <providerID>" for event notes, or "".
func providerIDSuffix(m *machinev1beta1.Machine) string {
	if m.Spec.ProviderID != nil && *m.Spec.ProviderID != "" {
		return " " + *m.Spec.ProviderID
	}
	return ""
}

// sameJSON reports whether two raw JSON values are equal as JSON values.
func sameJSON(a, b *runtime.RawExtension) bool {
	if a == nil || b == nil {
		return a == b
	}
	if bytes.Equal(a.Raw, b.Raw) {
		return true
	}
	var va, vb any
	if json.Unmarshal(a.Raw, &va) != nil || json.Unmarshal(b.Raw, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
