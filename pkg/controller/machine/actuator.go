// Package machine is the machine controller: it drives each Machine through
// a provider (Actuator) from creation to deletion, draining its node and
// honouring lifecycle hooks on the way out.
package machine

import (
	"context"
	"errors"
	"fmt"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

// Actuator is what a provider implements to plug into the machine
// controller. Every method must be idempotent: the controller calls them again
// after errors, restarts and leader changes.
//
// What the provider writes, and what the controller writes:
//
//   - Create and Update receive the Machine and may set, on that object,
//     spec.providerID (a stable, unique ID of the instance, e.g.
//     "kubemark://<namespace>/<name>"), status.addresses (at least the
//     InternalIP the Node will report) and status.providerStatus. The
//     controller persists exactly these three fields after the call (the
//     provider needs no write access to Machines). Nothing else the provider
//     changes on the object is persisted.
//   - The controller alone writes status.phase, status.conditions,
//     status.errorReason/errorMessage, status.lastUpdated, the finalizer, and
//     deletes the Node. Nodelink writes status.nodeRef.
//
// Errors:
//   - InvalidConfiguration (a *MachineError with Reason InvalidConfiguration)
//     from Create marks the Machine Failed with errorReason/errorMessage;
//     retrying cannot help. Messages must name the offending field.
//   - A *RequeueAfterError asks to be called again after a provider-side wait
//     (an instance still booting or terminating); it is not an error.
//   - Any other error is retried with exponential backoff.
//
// A provider should also implement ProviderSpecServer: the controller then
// never calls it for a Machine whose providerSpec is another provider's, and
// leaves that Machine untouched instead of letting the provider fail it.
type Actuator interface {
	// Create creates the instance. Called only when Exists reported false.
	Create(ctx context.Context, machine *machinev1beta1.Machine) error
	// Update brings an existing instance in line with the Machine and
	// refreshes providerID, addresses and providerStatus.
	Update(ctx context.Context, machine *machinev1beta1.Machine) error
	// Exists reports whether the instance exists. It must answer false only
	// when the instance is certainly gone (or was never created).
	Exists(ctx context.Context, machine *machinev1beta1.Machine) (bool, error)
	// Delete starts or completes deleting the instance. Returning nil does
	// not mean it is gone: the controller calls Exists until it is false.
	Delete(ctx context.Context, machine *machinev1beta1.Machine) error
}

// MachineError is a provider error with a Machine API error reason.
type MachineError struct {
	Reason  machinev1beta1.MachineStatusError
	Message string
}

func (e *MachineError) Error() string { return fmt.Sprintf("%s: %s", e.Reason, e.Message) }

// InvalidConfiguration reports a providerSpec that cannot work; the Machine
// becomes Failed. The message should name the field and say what is wrong.
func InvalidConfiguration(format string, args ...any) *MachineError {
	return &MachineError{Reason: machinev1beta1.InvalidConfigurationMachineError, Message: fmt.Sprintf(format, args...)}
}

// IsInvalidConfiguration reports whether err (or an error it wraps) is an
// InvalidConfiguration MachineError.
func IsInvalidConfiguration(err error) bool {
	var me *MachineError
	return errors.As(err, &me) && me.Reason == machinev1beta1.InvalidConfigurationMachineError
}

// RequeueAfterError asks the controller to come back after After.
type RequeueAfterError struct {
	After time.Duration
	// Reason is logged and shown in conditions ("instance is booting").
	Reason string
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
	if errors.As(err, &r) {
		return r, true
	}
	return nil, false
}
