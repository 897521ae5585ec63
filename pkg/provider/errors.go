package provider

import (
	"errors"
	"fmt"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

// Error is a provider error with a Machine API error reason (the Machine's status.errorReason).
type Error struct {
	Reason  machinev1beta1.MachineStatusError
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Reason, e.Message) }

// InvalidConfiguration reports a providerSpec that cannot work (name the field); the Machine fails.
func InvalidConfiguration(format string, args ...any) *Error {
	return &Error{Reason: machinev1beta1.InvalidConfigurationMachineError, Message: fmt.Sprintf(format, args...)}
}

// IsInvalidConfiguration reports whether err (or an error it wraps) is an InvalidConfiguration Error.
func IsInvalidConfiguration(err error) bool {
	pe := AsError(err)
	return pe != nil && pe.Reason == machinev1beta1.InvalidConfigurationMachineError
}

// AsError returns the *Error in err's chain, or nil.
func AsError(err error) *Error {
	var pe *Error
	errors.As(err, &pe)
	return pe
}

// Failed marks machine (the one the Actuator got) Failed and returns err: a terminal failure, which the
// controller persists with errorReason and errorMessage from err (an *Error gives both).
func Failed(machine *machinev1beta1.Machine, err error) error {
	phase := machinev1beta1.PhaseFailed
	machine.Status.Phase = &phase
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
