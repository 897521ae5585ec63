package machine

// Provisioning: create the instance, then update until Running; Failed is terminal.

import (
	"context"
	"encoding/json"
	"errors"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// reconcileNormal handles a Machine that is not being deleted.
func (r *Reconciler) reconcileNormal(ctx context.Context, s *scope) (ctrl.Result, error) {
	m := s.m
	if phaseOf(m) == machinev1beta1.PhaseFailed {
		return ctrl.Result{}, nil // terminal: only deletion is processed
	}
	exists, err := r.exists(ctx, s)
	switch decideProviderError(OperationExists, err, provider.IsProvisioned(m)) {
	case verdictOK:
	case verdictFail:
		r.setCondition(m, InstanceExistsCondition, corev1.ConditionUnknown, ReasonErrorCheckingProvider, "",
			"failed to check whether the instance exists: "+err.Error())
		r.fail(ctx, s, err)
		return ctrl.Result{}, nil
	case verdictWait:
		ra, _ := provider.AsRequeueAfter(err)
		return ctrl.Result{RequeueAfter: ra.After}, nil
	default:
		r.setCondition(m, InstanceExistsCondition, corev1.ConditionUnknown, ReasonErrorCheckingProvider, "",
			"failed to check whether the instance exists: "+err.Error())
		return ctrl.Result{}, err
	}
	step := decideProvisioning(phaseOf(m), exists, provider.IsProvisioned(m), m.Status.NodeRef != nil)
	switch {
	case step.InstanceMissing:
		r.setCondition(m, InstanceExistsCondition, corev1.ConditionFalse, ReasonInstanceMissing,
			machinev1beta1.ConditionSeverityWarning, "the provisioned instance no longer exists on the provider")
		r.fail(ctx, s, errors.New("the instance was not found on the provider: it was deleted outside the Machine API"))
		return ctrl.Result{}, nil
	case step.Create:
		return r.create(ctx, s)
	default:
		return r.update(ctx, s)
	}
}

const instanceExistsMessage = "the instance exists on the provider"

// setCondition sets a condition on the working copy.
func (r *Reconciler) setCondition(m *machinev1beta1.Machine, t machinev1beta1.ConditionType,
	status corev1.ConditionStatus, reason string, severity machinev1beta1.ConditionSeverity, msg string) {
	m.Status.Conditions = conditions.Set(m.Status.Conditions, conditions.New(t, status, reason, severity, msg), r.opts.Clock.Now())
}

// update runs the provider's Update on an existing instance, then sets the phase its state gives.
func (r *Reconciler) update(ctx context.Context, s *scope) (ctrl.Result, error) {
	m := s.m
	updateErr := r.callProvider(ctx, s, OperationUpdate, r.opts.Actuator.Update)
	r.setCondition(m, InstanceExistsCondition, corev1.ConditionTrue, ReasonInstanceExists, "", instanceExistsMessage)
	// A RequeueAfter from Update (health checks, slow refreshes) is not a failure: the phase still advances.
	providerWait, isWait := provider.AsRequeueAfter(updateErr)
	switch verdict := decideProviderError(OperationUpdate, updateErr, provider.IsProvisioned(m)); verdict {
	case verdictFail, verdictRejectedUpdate, verdictRetry:
		r.events.Once(s.key, "", patch.Event{Regarding: m, Type: corev1.EventTypeWarning, Reason: EventFailedUpdate, Action: "Update", Note: updateErr.Error()})
		if verdict == verdictFail {
			r.fail(ctx, s, updateErr)
			return ctrl.Result{}, nil
		}
		if verdict == verdictRetry {
			return ctrl.Result{}, updateErr
		}
		// Only a spec change (which wakes us) can help: no requeue.
		r.setCondition(m, ProviderUpdatedCondition, corev1.ConditionFalse, ReasonInvalidConfiguration,
			machinev1beta1.ConditionSeverityWarning, patch.Truncate(provider.AsError(updateErr).Message, maxConditionMessage))
		return ctrl.Result{}, nil
	}
	r.events.Clear(s.key, "", EventFailedUpdate)
	if conditions.Get(m.Status.Conditions, ProviderUpdatedCondition) != nil {
		r.setCondition(m, ProviderUpdatedCondition, corev1.ConditionTrue, ReasonProviderUpdated, "",
			"the provider accepted the Machine's configuration")
	}
	setPhase(m, decideProvisioning(phaseOf(m), true, provider.IsProvisioned(m), m.Status.NodeRef != nil).Phase)
	if !provider.IsProvisioned(m) {
		after := r.waitBackoff.When(s.key)
		if isWait {
			after = providerWait.After
		}
		log.FromContext(ctx).V(1).Info("instance exists but has no providerID or addresses yet", "requeueAfter", after)
		return ctrl.Result{RequeueAfter: after}, nil
	}
	r.waitBackoff.Forget(s.key)
	r.events.Clear(s.key, "", EventFailedCreate)
	return requeueOrError(updateErr) // a provider wait, or nil
}

// create runs the provider's Create; the finalizer, not the phase, keeps an instance from being lost.
func (r *Reconciler) create(ctx context.Context, s *scope) (ctrl.Result, error) {
	m := s.m
	msg := "the instance has not been created yet"
	if c := conditions.Get(m.Status.Conditions, InstanceExistsCondition); c != nil && c.Reason == ReasonInstanceNotCreated {
		msg = c.Message // keep the last create error until the next outcome
	}
	r.setCondition(m, InstanceExistsCondition, corev1.ConditionFalse, ReasonInstanceNotCreated,
		machinev1beta1.ConditionSeverityWarning, msg)
	setPhase(m, machinev1beta1.PhaseProvisioning)
	if m.Spec.ProviderSpec.Value == nil {
		err := provider.InvalidConfiguration("spec.providerSpec.value is required: the provider needs its configuration to create an instance")
		r.events.Eventf(m, nil, corev1.EventTypeWarning, EventFailedCreate, "Create", "%s", err.Message)
		r.fail(ctx, s, err)
		return ctrl.Result{}, nil
	}
	// No uncached read first: a stale cached view (a failover) can only call Create again for a Machine
	// provisioned meanwhile, and Create finds the instance it made before (Actuator).
	if r.heldByGate(ctx, OperationCreate) {
		return ctrl.Result{RequeueAfter: gateRequeueAfter}, nil
	}

	err := r.callProvider(ctx, s, OperationCreate, r.opts.Actuator.Create)
	switch decideProviderError(OperationCreate, err, provider.IsProvisioned(m)) {
	case verdictFail:
		r.events.Eventf(m, nil, corev1.EventTypeWarning, EventFailedCreate, "Create", "%s", err.Error())
		r.fail(ctx, s, err)
		return ctrl.Result{}, nil
	case verdictWait:
		ra, _ := provider.AsRequeueAfter(err)
		r.setCondition(m, InstanceExistsCondition, corev1.ConditionFalse, ReasonInstanceNotCreated,
			machinev1beta1.ConditionSeverityInfo, "the instance is being created: "+ra.Reason)
		return ctrl.Result{RequeueAfter: ra.After}, nil
	}
	if err != nil {
		r.setCondition(m, InstanceExistsCondition, corev1.ConditionFalse, ReasonInstanceNotCreated, machinev1beta1.ConditionSeverityWarning,
			"the instance has not been created: the last create attempt failed: "+err.Error())
		r.events.Once(s.key, "", patch.Event{Regarding: m, Type: corev1.EventTypeWarning, Reason: EventFailedCreate, Action: "Create", Note: err.Error()})
		return ctrl.Result{}, err
	}
	phase, exists := phaseAfterCreate(provider.IsProvisioned(m), m.Status.NodeRef != nil)
	setPhase(m, phase)
	if exists {
		r.setCondition(m, InstanceExistsCondition, corev1.ConditionTrue, ReasonInstanceExists, "", instanceExistsMessage)
		r.waitBackoff.Forget(s.key)
	} else {
		r.setCondition(m, InstanceExistsCondition, corev1.ConditionFalse, ReasonInstanceNotCreated,
			machinev1beta1.ConditionSeverityInfo, "the instance is being created")
	}
	r.events.Clear(s.key, "", EventFailedCreate)
	r.events.Eventf(m, nil, corev1.EventTypeNormal, EventCreated, "Create", "Created instance%s", providerIDSuffix(m))
	if exists && m.Status.NodeRef != nil {
		return ctrl.Result{}, nil
	}
	// The first status write waits for nodelink's nodeRef, whose event wakes us (Provisioned and Running in
	// one write, docs/architecture.md), or for the wait backoff; nothing else may wake us (machinePredicate).
	s.awaitingLink = exists
	return ctrl.Result{RequeueAfter: r.waitBackoff.When(s.key)}, nil
}

// fail marks the Machine Failed; a *provider.Error gives errorReason and errorMessage.
func (r *Reconciler) fail(ctx context.Context, s *scope, err error) {
	m := s.m
	message := err.Error()
	m.Status.ErrorReason = nil
	if me := provider.AsError(err); me != nil {
		reason := me.Reason
		m.Status.ErrorReason = &reason
		message = me.Message
	}
	m.Status.ErrorMessage = &message
	if phaseOf(m) != machinev1beta1.PhaseFailed {
		r.events.Eventf(m, nil, corev1.EventTypeWarning, EventFailed, "Reconcile", "Machine failed: %s", message)
	}
	setPhase(m, machinev1beta1.PhaseFailed)
	m.Status.ProviderStatus = unknownInstanceState(m.Status.ProviderStatus)
	if err := r.annotate(ctx, s, provider.InstanceStateAnnotation, "Unknown"); err != nil {
		log.FromContext(ctx).Error(err, "setting the instance-state annotation")
	}
}

// unknownInstanceState sets a provider status's instanceState/vmState to "Unknown" (providers' convention).
func unknownInstanceState(ps *runtime.RawExtension) *runtime.RawExtension {
	var obj map[string]any
	if ps == nil || json.Unmarshal(ps.Raw, &obj) != nil {
		return ps
	}
	changed := false
	for _, k := range []string{"instanceState", "vmState"} {
		if v, ok := obj[k]; ok && v != "Unknown" {
			obj[k] = "Unknown"
			changed = true
		}
	}
	if raw, err := json.Marshal(obj); changed && err == nil {
		return &runtime.RawExtension{Raw: raw}
	}
	return ps
}
