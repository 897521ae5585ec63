package machine

// Provider results: calling the Actuator, persisting what it may set, and
// turning its answers into requeues, errors and metrics.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
)

// requeueOrError turns a RequeueAfterError into a timed requeue and leaves
// other errors to controller-runtime's exponential backoff.
func requeueOrError(err error) (ctrl.Result, error) {
	if ra, ok := AsRequeueAfter(err); ok {
		return ctrl.Result{RequeueAfter: ra.After}, nil
	}
	return ctrl.Result{}, err
}

// exists calls Actuator.Exists on a copy of the Machine.
func (r *Reconciler) exists(ctx context.Context, s *scope) (bool, error) {
	ProviderCallsTotal.WithLabelValues(OperationExists).Inc()
	ok, err := r.actuator.Exists(ctx, s.m.DeepCopy())
	countProviderError(s.m, OperationExists, err)
	return ok, err
}

// callProvider calls Create/Update/Delete on a copy of the Machine and then
// keeps exactly what the Actuator contract lets the provider set:
// status.addresses and status.providerStatus (written with the status
// patch) and spec.providerID (patched right after it).
func (r *Reconciler) callProvider(ctx context.Context, s *scope, op string, call func(context.Context, *machinev1beta1.Machine) error) error {
	ProviderCallsTotal.WithLabelValues(op).Inc()
	c := s.m.DeepCopy()
	err := call(ctx, c)
	countProviderError(s.m, op, err)
	if op == OperationDelete {
		return err
	}
	s.m.Status.Addresses = c.Status.Addresses
	// Compare providerStatus by meaning, not bytes: the API server returns
	// it with sorted keys, so a provider's field order must not look like a
	// change (which would write lastUpdated on every reconcile).
	if !sameJSON(s.m.Status.ProviderStatus, c.Status.ProviderStatus) {
		s.m.Status.ProviderStatus = c.Status.ProviderStatus
	}
	// spec.providerID is persisted after the reconcile's status write
	// (persistProviderID): written first, it would let nodelink match the
	// Machine and write its nodeRef between our two writes, and the first
	// status write of a Machine is under an optimistic lock.
	s.m.Spec.ProviderID = c.Spec.ProviderID
	return err
}

// persistProviderID patches spec.providerID when the provider changed it in
// this reconcile (s.m differs from s.base).
func (r *Reconciler) persistProviderID(ctx context.Context, s *scope, id *string) error {
	if s.gone || reflect.DeepEqual(s.base.Spec.ProviderID, id) {
		return nil
	}
	s.m.Spec.ProviderID = s.base.Spec.ProviderID // patchObject diffs from s.m
	if err := r.patchObject(ctx, s, false, func(m *machinev1beta1.Machine) { m.Spec.ProviderID = id }); err != nil {
		return fmt.Errorf("persisting spec.providerID: %w", err)
	}
	return nil
}

// countProviderError counts a failed provider call (machine_api_provider_
// errors_total, and OpenShift's mapi_instance_{create,update,delete}_failed
// for the Machine); a RequeueAfterError is a provider-side wait, not a failure.
func countProviderError(m *machinev1beta1.Machine, op string, err error) {
	if err == nil {
		return
	}
	if _, ok := AsRequeueAfter(err); ok {
		return
	}
	ProviderErrorsTotal.WithLabelValues(op).Inc()
	if c := instanceFailed(op); c != nil {
		c.WithLabelValues(m.Name, m.Namespace, failureReason(err)).Inc()
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
