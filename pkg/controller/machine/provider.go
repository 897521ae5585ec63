// Package machine is the machine controller: it drives each Machine through a provider (package provider's
// Actuator) from creation to deletion, draining its node and honouring lifecycle hooks on the way out.
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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

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

// Calling the provider: keeping what it may set, counting failures, the Gate.

// gateRequeueAfter is how soon a Machine held back by the Gate is looked at again.
const gateRequeueAfter = 10 * time.Second

// heldByGate reports whether the Gate holds back op (create or delete).
func (r *Reconciler) heldByGate(ctx context.Context, op string) bool {
	if r.opts.Gate == nil || !r.opts.Gate.Frozen() {
		return false
	}
	log.FromContext(ctx).V(1).Info("not calling the provider: the machine controller is frozen while the API server is unreachable",
		"operation", op, "requeueAfter", gateRequeueAfter)
	return true
}

// requeueOrError turns a provider.RequeueAfterError into a timed requeue; other errors get the backoff.
func requeueOrError(err error) (ctrl.Result, error) {
	if ra, ok := provider.AsRequeueAfter(err); ok {
		return ctrl.Result{RequeueAfter: ra.After}, nil
	}
	return ctrl.Result{}, err
}

// exists calls Actuator.Exists on a copy of the Machine.
func (r *Reconciler) exists(ctx context.Context, s *scope) (bool, error) {
	ProviderCallsTotal.WithLabelValues(OperationExists).Inc()
	c := s.m.DeepCopy()
	ok, err := r.opts.Actuator.Exists(ctx, c)
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

// countProviderError counts a failed provider call; a provider.RequeueAfterError is a wait, not a failure.
func countProviderError(m *machinev1beta1.Machine, op string, err error) {
	if _, wait := provider.AsRequeueAfter(err); err == nil || wait {
		return
	}
	ProviderErrorsTotal.WithLabelValues(op).Inc()
	if c := instanceFailed[op]; c != nil {
		reason := patch.Truncate(err.Error(), maxReasonLength) // the reason label: the provider.Error reason, or the message
		if pe := provider.AsError(err); pe != nil && pe.Reason != "" {
			reason = string(pe.Reason)
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
