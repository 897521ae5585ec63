package machine

// Provisioning: a Machine that is not being deleted is created through the
// provider, then updated until it is Running; Failed is terminal.

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
)

// reconcileNormal handles a Machine that is not being deleted.
func (r *Reconciler) reconcileNormal(ctx context.Context, s *scope) (ctrl.Result, error) {
	m := s.m
	if phaseOf(m) == machinev1beta1.PhaseFailed {
		// Terminal: only deletion is processed.
		return ctrl.Result{}, nil
	}

	exists, err := r.exists(ctx, s)
	if err != nil {
		if IsInvalidConfiguration(err) && !IsProvisioned(m) {
			// Retrying cannot help a providerSpec the provider cannot read.
			r.fail(ctx, s, err, "")
			return ctrl.Result{}, nil
		}
		if ra, ok := AsRequeueAfter(err); ok {
			// A provider-side wait, not a failure: conditions stay as they are.
			return ctrl.Result{RequeueAfter: ra.After}, nil
		}
		m.Status.Conditions = conditions.Set(m.Status.Conditions, conditions.New(InstanceExistsCondition, corev1.ConditionUnknown,
			ReasonErrorCheckingProvider, "", "failed to check whether the instance exists: "+err.Error()), r.now())
		return ctrl.Result{}, err
	}

	step := decideProvisioning(phaseOf(m), exists, IsProvisioned(m), m.Status.NodeRef != nil)
	switch {
	case step.InstanceMissing:
		m.Status.Conditions = conditions.Set(m.Status.Conditions, conditions.New(InstanceExistsCondition, corev1.ConditionFalse,
			ReasonInstanceMissing, machinev1beta1.ConditionSeverityWarning, "the provisioned instance no longer exists on the provider"), r.now())
		r.fail(ctx, s, nil, "the instance was not found on the provider: it was deleted outside the Machine API")
		return ctrl.Result{}, nil

	case step.Create:
		return r.create(ctx, s)

	default:
		return r.update(ctx, s)
	}
}

// update handles a Machine whose instance exists: the provider's Update,
// then the phase the instance's state gives (Provisioned, Running).
func (r *Reconciler) update(ctx context.Context, s *scope) (ctrl.Result, error) {
	m := s.m
	updateErr := r.callProvider(ctx, s, OperationUpdate, r.actuator.Update)
	m.Status.Conditions = conditions.Set(m.Status.Conditions, conditions.New(InstanceExistsCondition, corev1.ConditionTrue,
		ReasonInstanceExists, "", "the instance exists on the provider"), r.now())
	// A RequeueAfter from Update is a "call me again then" (health
	// checks, slow refreshes), not a failure: the phase still advances.
	providerWait, isWait := AsRequeueAfter(updateErr)
	if updateErr != nil && !isWait {
		r.events.Once(s.key, "", m, corev1.EventTypeWarning, EventFailedUpdate, "Update", updateErr.Error())
		if IsInvalidConfiguration(updateErr) {
			// The providerSpec went invalid after creation: the instance
			// exists, so not Failed; ProviderUpdated=False says so. Only a
			// spec change (which wakes us) can help: no error, no requeue.
			msg := updateErr.Error()
			var me *MachineError
			if errors.As(updateErr, &me) {
				msg = me.Message
			}
			m.Status.Conditions = conditions.Set(m.Status.Conditions, conditions.New(ProviderUpdatedCondition, corev1.ConditionFalse,
				ReasonInvalidConfiguration, machinev1beta1.ConditionSeverityWarning, patch.Truncate(msg, maxConditionMessage)), r.now())
			return ctrl.Result{}, nil
		}
		return requeueOrError(updateErr)
	}
	r.events.Clear(s.key, "", EventFailedUpdate)
	if conditions.Get(m.Status.Conditions, ProviderUpdatedCondition) != nil {
		// Only set once an update was rejected: then cleared here.
		m.Status.Conditions = conditions.Set(m.Status.Conditions, conditions.New(ProviderUpdatedCondition, corev1.ConditionTrue,
			ReasonProviderUpdated, "", "the provider accepted the Machine's configuration"), r.now())
	}
	setPhase(m, phaseAfterUpdate(phaseOf(m), IsProvisioned(m), m.Status.NodeRef != nil))
	if !IsProvisioned(m) {
		// The provider has not reported providerID/addresses yet.
		after := r.waitBackoff.When(s.key)
		if isWait {
			after = providerWait.After
		}
		log.FromContext(ctx).V(1).Info("instance exists but has no providerID or addresses yet", "requeueAfter", after)
		return ctrl.Result{RequeueAfter: after}, nil
	}
	r.waitBackoff.Forget(s.key)
	r.events.Clear(s.key, "", EventFailedCreate)
	if isWait {
		return ctrl.Result{RequeueAfter: providerWait.After}, nil
	}
	return ctrl.Result{}, nil
}

// create handles a Machine whose instance does not exist and was never
// provisioned: phase Provisioning (persisted first), then Create.
func (r *Reconciler) create(ctx context.Context, s *scope) (ctrl.Result, error) {
	m := s.m
	notCreated := conditions.New(InstanceExistsCondition, corev1.ConditionFalse, ReasonInstanceNotCreated,
		machinev1beta1.ConditionSeverityWarning, "the instance has not been created yet")
	if c := conditions.Get(m.Status.Conditions, InstanceExistsCondition); c != nil && c.Reason == ReasonInstanceNotCreated {
		notCreated.Message = c.Message // keep the last create error until the next outcome
	}
	m.Status.Conditions = conditions.Set(m.Status.Conditions, notCreated, r.now())
	// Provisioning is written with the reconcile's one status write, after
	// Create: the finalizer (already persisted) is what keeps an instance
	// from being lost, not the phase.
	setPhase(m, machinev1beta1.PhaseProvisioning)
	if m.Spec.ProviderSpec.Value == nil {
		err := InvalidConfiguration("spec.providerSpec.value is required: the provider needs its configuration to create an instance")
		r.events.Eventf(m, nil, corev1.EventTypeWarning, EventFailedCreate, "Create", "%s", err.Message)
		r.fail(ctx, s, err, "")
		return ctrl.Result{}, nil
	}
	if r.apiReader != nil && !s.fresh {
		// Guard against a stale cache: never create for an old view. Not
		// needed when this reconcile's locked write (the finalizer) proved
		// the view current.
		live := &machinev1beta1.Machine{}
		if err := r.apiReader.Get(ctx, s.key, live); err != nil {
			return ctrl.Result{}, err
		}
		if live.ResourceVersion != m.ResourceVersion || IsProvisioned(live) || !live.DeletionTimestamp.IsZero() {
			return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, nil
		}
	}
	if r.heldByGate(ctx, OperationCreate) {
		return ctrl.Result{RequeueAfter: gateRequeueAfter}, nil
	}

	err := r.callProvider(ctx, s, OperationCreate, r.actuator.Create)
	switch {
	case err == nil:
		phase, exists := phaseAfterCreate(IsProvisioned(m), m.Status.NodeRef != nil)
		setPhase(m, phase)
		if exists {
			m.Status.Conditions = conditions.Set(m.Status.Conditions, conditions.New(InstanceExistsCondition, corev1.ConditionTrue,
				ReasonInstanceExists, "", "the instance exists on the provider"), r.now())
			r.waitBackoff.Forget(s.key)
		} else {
			m.Status.Conditions = conditions.Set(m.Status.Conditions, conditions.New(InstanceExistsCondition, corev1.ConditionFalse,
				ReasonInstanceNotCreated, machinev1beta1.ConditionSeverityInfo, "the instance is being created"), r.now())
		}
		r.events.Clear(s.key, "", EventFailedCreate)
		r.events.Eventf(m, nil, corev1.EventTypeNormal, EventCreated, "Create", "Created instance%s", providerIDSuffix(m))
		if exists {
			// Provisioned in this reconcile's status write; the nodeRef
			// (nodelink) or a Node change wakes us for Running.
			return ctrl.Result{}, nil
		}
		if m.Spec.ProviderID != nil && *m.Spec.ProviderID != "" {
			// The providerID patch (a spec change) wakes us; addresses
			// alone (status) would not.
			return ctrl.Result{}, nil
		}
		// Nothing to be woken by: come back to look at the instance.
		return ctrl.Result{RequeueAfter: r.waitBackoff.When(s.key)}, nil
	case IsInvalidConfiguration(err):
		r.events.Eventf(m, nil, corev1.EventTypeWarning, EventFailedCreate, "Create", "%s", err.Error())
		r.fail(ctx, s, err, "")
		return ctrl.Result{}, nil
	default:
		if ra, ok := AsRequeueAfter(err); ok {
			m.Status.Conditions = conditions.Set(m.Status.Conditions, conditions.New(InstanceExistsCondition, corev1.ConditionFalse,
				ReasonInstanceNotCreated, machinev1beta1.ConditionSeverityInfo, "the instance is being created: "+ra.Reason), r.now())
			return ctrl.Result{RequeueAfter: ra.After}, nil
		}
		msg := "the instance has not been created: the last create attempt failed: " + err.Error()
		m.Status.Conditions = conditions.Set(m.Status.Conditions, conditions.New(InstanceExistsCondition, corev1.ConditionFalse,
			ReasonInstanceNotCreated, machinev1beta1.ConditionSeverityWarning, msg), r.now())
		r.events.Once(s.key, "", m, corev1.EventTypeWarning, EventFailedCreate, "Create", err.Error())
		return ctrl.Result{}, err
	}
}

// fail marks the Machine Failed (terminal). reasonErr, when a *MachineError,
// gives errorReason and errorMessage; otherwise message is used.
func (r *Reconciler) fail(ctx context.Context, s *scope, reasonErr error, message string) {
	m := s.m
	var me *MachineError
	if errors.As(reasonErr, &me) {
		reason := me.Reason
		m.Status.ErrorReason = &reason
		message = me.Message
	} else if reasonErr != nil && message == "" {
		message = reasonErr.Error()
	}
	m.Status.ErrorMessage = &message
	if phaseOf(m) != machinev1beta1.PhaseFailed {
		r.events.Eventf(m, nil, corev1.EventTypeWarning, EventFailed, "Reconcile", "Machine failed: %s", message)
	}
	setPhase(m, machinev1beta1.PhaseFailed)
	m.Status.ProviderStatus = unknownInstanceState(m.Status.ProviderStatus)
	if m.Annotations[InstanceStateAnnotation] != "Unknown" {
		if err := r.patchObject(ctx, s, false, func(m *machinev1beta1.Machine) {
			if m.Annotations == nil {
				m.Annotations = map[string]string{}
			}
			m.Annotations[InstanceStateAnnotation] = "Unknown"
		}); err != nil {
			log.FromContext(ctx).Error(err, "setting the instance-state annotation")
		}
	}
}

// unknownInstanceState sets instanceState/vmState to "Unknown" in a provider
// status that has one of them (the convention of the cloud providers).
func unknownInstanceState(ps *runtime.RawExtension) *runtime.RawExtension {
	if ps == nil || len(ps.Raw) == 0 {
		return ps
	}
	var obj map[string]any
	if err := json.Unmarshal(ps.Raw, &obj); err != nil {
		return ps
	}
	changed := false
	for _, k := range []string{"instanceState", "vmState"} {
		if v, ok := obj[k]; ok && v != "Unknown" {
			obj[k] = "Unknown"
			changed = true
		}
	}
	if !changed {
		return ps
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return ps
	}
	return &runtime.RawExtension{Raw: raw}
}
