package machine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/readyourwrites"
)

// Default timings. Waits that depend on the provider or on pods use
// per-Machine exponential backoff instead of fixed polling.
const (
	// DefaultDrainAttemptTimeout bounds one drain attempt (one Reconcile).
	DefaultDrainAttemptTimeout = 20 * time.Second

	defaultWaitBackoffBase  = time.Second
	defaultWaitBackoffMax   = 2 * time.Minute
	defaultDrainBackoffBase = 5 * time.Second
	defaultDrainBackoffMax  = 5 * time.Minute
	defaultEvictRetryDelay  = 2 * time.Second
)

// Options configure a Reconciler.
type Options struct {
	// Client reads and writes Machines and Nodes (normally the manager's
	// cached client).
	Client client.Client
	// APIReader (optional) reads uncached: before Create the controller
	// re-reads the Machine to make sure a stale cache does not hide a
	// providerID written moments ago. SetupWithManager defaults it to the
	// manager's API reader.
	APIReader client.Reader
	// Actuator is the provider.
	Actuator Actuator
	// Recorder (optional) receives events; SetupWithManager defaults it to
	// the manager's recorder named "machine-controller".
	Recorder events.EventRecorder
	// NodeDrainTimeout bounds a drain; 0 waits forever. The Machine
	// annotation machine.openshift.io/node-drain-timeout overrides it.
	NodeDrainTimeout time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Namespace (optional) restricts the controller to Machines of one
	// namespace; empty means every namespace the cache sees.
	Namespace string

	// KubeClient is the clientset the drain uses (kubectl's drain helper
	// needs one). SetupWithManager builds it from the manager's config when
	// nil; a Reconciler used without a manager must set it to drain.
	KubeClient kubernetes.Interface
	// DrainAttemptTimeout bounds one drain attempt (default 20s); the drain
	// is then retried with backoff.
	DrainAttemptTimeout time.Duration
}

// Reconciler is the machine controller.
type Reconciler struct {
	client           client.Client
	apiReader        client.Reader
	actuator         Actuator
	recorder         events.EventRecorder
	kube             kubernetes.Interface
	nodeDrainTimeout time.Duration
	attemptTimeout   time.Duration
	now              func() time.Time
	namespace        string

	// Tunables (tests shorten them).
	evictRetryDelay time.Duration
	waitBackoff     workqueue.TypedRateLimiter[types.NamespacedName]
	drainBackoff    workqueue.TypedRateLimiter[types.NamespacedName]

	events *eventMemo
	writes *readyourwrites.Memo
	// cpMu serializes the one-control-plane-drain-at-a-time check and cordon.
	cpMu sync.Mutex
}

// NewReconciler returns a machine controller. It registers the metrics.
func NewReconciler(opts Options) *Reconciler {
	RegisterMetrics()
	r := &Reconciler{
		client:           opts.Client,
		apiReader:        opts.APIReader,
		actuator:         opts.Actuator,
		recorder:         opts.Recorder,
		kube:             opts.KubeClient,
		nodeDrainTimeout: opts.NodeDrainTimeout,
		attemptTimeout:   opts.DrainAttemptTimeout,
		now:              opts.Now,
		namespace:        opts.Namespace,
		evictRetryDelay:  defaultEvictRetryDelay,
		waitBackoff:      workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](defaultWaitBackoffBase, defaultWaitBackoffMax),
		drainBackoff:     workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](defaultDrainBackoffBase, defaultDrainBackoffMax),
		events:           newEventMemo(),
		writes:           readyourwrites.New(),
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.attemptTimeout <= 0 {
		r.attemptTimeout = DefaultDrainAttemptTimeout
	}
	return r
}

// scope is one Reconcile's view of a Machine: m is the working copy, base the
// last state written to (or read from) the API server; status patches are
// merge patches from base, so fields the controller did not change (nodelink's
// nodeRef) are never sent.
type scope struct {
	m    *machinev1beta1.Machine
	base *machinev1beta1.Machine
	key  types.NamespacedName
	// gone: the finalizer was removed; nothing more is written.
	gone bool
}

func phaseOf(m *machinev1beta1.Machine) string {
	if m.Status.Phase == nil {
		return ""
	}
	return *m.Status.Phase
}

func setPhase(m *machinev1beta1.Machine, phase string) {
	m.Status.Phase = &phase
}

// Reconcile drives one Machine.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if r.namespace != "" && req.Namespace != r.namespace {
		return ctrl.Result{}, nil
	}
	m := &machinev1beta1.Machine{}
	if err := r.client.Get(ctx, req.NamespacedName, m); err != nil {
		if apierrors.IsNotFound(err) {
			r.waitBackoff.Forget(req.NamespacedName)
			r.drainBackoff.Forget(req.NamespacedName)
			r.events.forget(req.NamespacedName)
			r.writes.Forget(req.NamespacedName)
			deleteInstanceFailedMetrics(req.Name, req.Namespace)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if r.writes.Stale(req.NamespacedName, m.ResourceVersion, r.now()) {
		// Our own last write is not in the cache yet (its event does not
		// wake us: see machinePredicate).
		return ctrl.Result{RequeueAfter: readyourwrites.CatchUpDelay}, nil
	}
	read := m.ResourceVersion
	s := &scope{m: m, base: m.DeepCopy(), key: req.NamespacedName}
	res, err := r.reconcile(ctx, s)
	defer func() { r.writes.Wrote(req.NamespacedName, read, s.base.ResourceVersion, r.now()) }()
	if perr := r.patchStatus(ctx, s); perr != nil {
		if apierrors.IsNotFound(perr) && !s.m.DeletionTimestamp.IsZero() {
			perr = nil
		}
		err = errors.Join(err, perr)
	}
	if err != nil {
		// An error means controller-runtime's backoff; a RequeueAfterError
		// was already turned into res.RequeueAfter.
		return ctrl.Result{}, err
	}
	return res, nil
}

func (r *Reconciler) reconcile(ctx context.Context, s *scope) (ctrl.Result, error) {
	m := s.m
	now := r.now()
	drainable, terminable := hookConditions(m.Spec.LifecycleHooks)
	m.Status.Conditions = setCondition(m.Status.Conditions, drainable, now)
	m.Status.Conditions = setCondition(m.Status.Conditions, terminable, now)

	if !m.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	if !controllerutil.ContainsFinalizer(m, machinev1beta1.MachineFinalizer) {
		if err := r.patchObject(ctx, s, true, func(m *machinev1beta1.Machine) {
			controllerutil.AddFinalizer(m, machinev1beta1.MachineFinalizer)
		}); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer: %w", err)
		}
	}
	return r.reconcileNormal(ctx, s)
}

// reconcileNormal handles a Machine that is not being deleted.
func (r *Reconciler) reconcileNormal(ctx context.Context, s *scope) (ctrl.Result, error) {
	m := s.m
	logger := log.FromContext(ctx)
	if phaseOf(m) == machinev1beta1.PhaseFailed {
		// Terminal: only deletion is processed.
		return ctrl.Result{}, nil
	}

	exists, err := r.exists(ctx, s)
	if err != nil {
		if IsInvalidConfiguration(err) && !isProvisioned(m) {
			// Retrying cannot help a providerSpec the provider cannot read.
			r.fail(ctx, s, err, "")
			return ctrl.Result{}, nil
		}
		if ra, ok := AsRequeueAfter(err); ok {
			// A provider-side wait, not a failure: conditions stay as they are.
			return ctrl.Result{RequeueAfter: ra.After}, nil
		}
		m.Status.Conditions = setCondition(m.Status.Conditions, newCondition(InstanceExistsCondition, corev1.ConditionUnknown,
			ReasonErrorCheckingProvider, "", "failed to check whether the instance exists: "+err.Error()), r.now())
		return ctrl.Result{}, err
	}

	step := decideProvisioning(phaseOf(m), exists, isProvisioned(m), m.Status.NodeRef != nil)
	switch {
	case step.InstanceMissing:
		m.Status.Conditions = setCondition(m.Status.Conditions, newCondition(InstanceExistsCondition, corev1.ConditionFalse,
			ReasonInstanceMissing, machinev1beta1.ConditionSeverityWarning, "the provisioned instance no longer exists on the provider"), r.now())
		r.fail(ctx, s, nil, "the instance was not found on the provider: it was deleted outside the Machine API")
		return ctrl.Result{}, nil

	case step.Create:
		return r.create(ctx, s)

	default:
		updateErr := r.callProvider(ctx, s, OperationUpdate, r.actuator.Update)
		m.Status.Conditions = setCondition(m.Status.Conditions, newCondition(InstanceExistsCondition, corev1.ConditionTrue,
			ReasonInstanceExists, "", "the instance exists on the provider"), r.now())
		// A RequeueAfter from Update is a "call me again then" (health
		// checks, slow refreshes), not a failure: the phase still advances.
		providerWait, isWait := AsRequeueAfter(updateErr)
		if updateErr != nil && !isWait {
			r.events.once(r, m, corev1.EventTypeWarning, EventFailedUpdate, "Update", updateErr.Error())
			if IsInvalidConfiguration(updateErr) {
				// The providerSpec was made invalid after creation. The
				// instance still exists, so the Machine is not Failed (upstream
				// sets errorReason/errorMessage only then) and keeps its phase;
				// InstanceExists stays about the instance. The problem is shown
				// on its own condition, ProviderUpdated=False/
				// InvalidConfiguration, with the provider's message (plus the
				// FailedUpdate event). Retrying cannot help until the Machine
				// changes, and any spec change wakes the controller, so no
				// error (no backoff) and no requeue.
				msg := updateErr.Error()
				var me *MachineError
				if errors.As(updateErr, &me) {
					msg = me.Message
				}
				m.Status.Conditions = setCondition(m.Status.Conditions, newCondition(ProviderUpdatedCondition, corev1.ConditionFalse,
					ReasonInvalidConfiguration, machinev1beta1.ConditionSeverityWarning, truncate(msg, maxConditionMessage)), r.now())
				return ctrl.Result{}, nil
			}
			return requeueOrError(updateErr)
		}
		r.events.clear(m, EventFailedUpdate)
		if getCondition(m.Status.Conditions, ProviderUpdatedCondition) != nil {
			// Only set once an update was rejected: then cleared here.
			m.Status.Conditions = setCondition(m.Status.Conditions, newCondition(ProviderUpdatedCondition, corev1.ConditionTrue,
				ReasonProviderUpdated, "", "the provider accepted the Machine's configuration"), r.now())
		}
		setPhase(m, phaseAfterUpdate(phaseOf(m), isProvisioned(m), m.Status.NodeRef != nil))
		if !isProvisioned(m) {
			// The provider has not reported providerID/addresses yet.
			after := r.waitBackoff.When(s.key)
			if isWait {
				after = providerWait.After
			}
			logger.V(1).Info("instance exists but has no providerID or addresses yet", "requeueAfter", after)
			return ctrl.Result{RequeueAfter: after}, nil
		}
		r.waitBackoff.Forget(s.key)
		r.events.clear(m, EventFailedCreate)
		if isWait {
			return ctrl.Result{RequeueAfter: providerWait.After}, nil
		}
		return ctrl.Result{}, nil
	}
}

// create handles a Machine whose instance does not exist and was never
// provisioned: phase Provisioning (persisted first), then Create.
func (r *Reconciler) create(ctx context.Context, s *scope) (ctrl.Result, error) {
	m := s.m
	notCreated := newCondition(InstanceExistsCondition, corev1.ConditionFalse, ReasonInstanceNotCreated,
		machinev1beta1.ConditionSeverityWarning, "the instance has not been created yet")
	if c := getCondition(m.Status.Conditions, InstanceExistsCondition); c != nil && c.Reason == ReasonInstanceNotCreated {
		notCreated.Message = c.Message // keep the last create error until the next outcome
	}
	m.Status.Conditions = setCondition(m.Status.Conditions, notCreated, r.now())
	if phaseOf(m) != machinev1beta1.PhaseProvisioning {
		setPhase(m, machinev1beta1.PhaseProvisioning)
		// Persist Provisioning before the first Create.
		if err := r.patchStatus(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	if m.Spec.ProviderSpec.Value == nil {
		err := InvalidConfiguration("spec.providerSpec.value is required: the provider needs its configuration to create an instance")
		r.eventf(m, corev1.EventTypeWarning, EventFailedCreate, "Create", "%s", err.Message)
		r.fail(ctx, s, err, "")
		return ctrl.Result{}, nil
	}
	if r.apiReader != nil {
		// Guard against a stale cache: never create for an old view.
		live := &machinev1beta1.Machine{}
		if err := r.apiReader.Get(ctx, s.key, live); err != nil {
			return ctrl.Result{}, err
		}
		if live.ResourceVersion != m.ResourceVersion || isProvisioned(live) || !live.DeletionTimestamp.IsZero() {
			return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, nil
		}
	}

	err := r.callProvider(ctx, s, OperationCreate, r.actuator.Create)
	switch {
	case err == nil:
		m.Status.Conditions = setCondition(m.Status.Conditions, newCondition(InstanceExistsCondition, corev1.ConditionFalse,
			ReasonInstanceNotCreated, machinev1beta1.ConditionSeverityInfo, "the instance is being created"), r.now())
		r.events.clear(m, EventFailedCreate)
		r.eventf(m, corev1.EventTypeNormal, EventCreated, "Create", "Created instance%s", providerIDSuffix(m))
		if m.Spec.ProviderID != nil && *m.Spec.ProviderID != "" {
			// The providerID patch (a spec change) wakes us; addresses
			// alone (status) would not.
			return ctrl.Result{}, nil
		}
		// Nothing to be woken by: come back to look at the instance.
		return ctrl.Result{RequeueAfter: r.waitBackoff.When(s.key)}, nil
	case IsInvalidConfiguration(err):
		r.eventf(m, corev1.EventTypeWarning, EventFailedCreate, "Create", "%s", err.Error())
		r.fail(ctx, s, err, "")
		return ctrl.Result{}, nil
	default:
		if ra, ok := AsRequeueAfter(err); ok {
			m.Status.Conditions = setCondition(m.Status.Conditions, newCondition(InstanceExistsCondition, corev1.ConditionFalse,
				ReasonInstanceNotCreated, machinev1beta1.ConditionSeverityInfo, "the instance is being created: "+ra.Reason), r.now())
			return ctrl.Result{RequeueAfter: ra.After}, nil
		}
		msg := "the instance has not been created: the last create attempt failed: " + err.Error()
		m.Status.Conditions = setCondition(m.Status.Conditions, newCondition(InstanceExistsCondition, corev1.ConditionFalse,
			ReasonInstanceNotCreated, machinev1beta1.ConditionSeverityWarning, msg), r.now())
		r.events.once(r, m, corev1.EventTypeWarning, EventFailedCreate, "Create", err.Error())
		return ctrl.Result{}, err
	}
}

func providerIDSuffix(m *machinev1beta1.Machine) string {
	if m.Spec.ProviderID != nil && *m.Spec.ProviderID != "" {
		return " " + *m.Spec.ProviderID
	}
	return ""
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
		r.eventf(m, corev1.EventTypeWarning, EventFailed, "Reconcile", "Machine failed: %s", message)
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
// persists exactly what the Actuator contract lets the provider set:
// spec.providerID (patched now), status.addresses and status.providerStatus
// (written with the status patch).
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
	if !reflect.DeepEqual(s.m.Spec.ProviderID, c.Spec.ProviderID) {
		id := c.Spec.ProviderID
		if perr := r.patchObject(ctx, s, false, func(m *machinev1beta1.Machine) { m.Spec.ProviderID = id }); perr != nil {
			return errors.Join(err, fmt.Errorf("persisting spec.providerID: %w", perr))
		}
	}
	return err
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

// patchObject changes metadata/spec with a merge patch (optionally with an
// optimistic lock, for lists such as finalizers that others also edit) and
// keeps the in-memory status as it is.
func (r *Reconciler) patchObject(ctx context.Context, s *scope, optimisticLock bool, mutate func(*machinev1beta1.Machine)) error {
	before := s.m.DeepCopy()
	after := s.m.DeepCopy()
	mutate(after)
	if equality.Semantic.DeepEqual(before.ObjectMeta, after.ObjectMeta) && equality.Semantic.DeepEqual(before.Spec, after.Spec) {
		return nil
	}
	// Diff only metadata and spec: status is the same on both sides.
	after.Status = before.Status
	var patch client.Patch = client.MergeFrom(before)
	if optimisticLock {
		patch = client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	}
	if err := r.client.Patch(ctx, after, patch); err != nil {
		return err
	}
	s.m.ObjectMeta = *after.ObjectMeta.DeepCopy()
	s.m.Spec = *after.Spec.DeepCopy()
	s.base.ObjectMeta = *after.ObjectMeta.DeepCopy()
	s.base.Spec = *after.Spec.DeepCopy()
	return nil
}

// patchStatus writes the status when it differs from what was last read or
// written; lastUpdated changes only then. errorReason/errorMessage exist only
// in phase Failed.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope) error {
	if s.gone {
		return nil
	}
	m := s.m
	if phaseOf(m) != machinev1beta1.PhaseFailed {
		m.Status.ErrorReason = nil
		m.Status.ErrorMessage = nil
	}
	m.Status.LastUpdated = s.base.Status.LastUpdated
	if equality.Semantic.DeepEqual(s.base.Status, m.Status) {
		return nil
	}
	now := metav1.NewTime(r.now().Truncate(time.Second))
	m.Status.LastUpdated = &now
	from, to := phaseOf(s.base), phaseOf(m)
	// Patch a copy so a failed patch leaves the working copy intact.
	patched := m.DeepCopy()
	patched.ObjectMeta = *s.base.ObjectMeta.DeepCopy()
	patched.Spec = *s.base.Spec.DeepCopy()
	if err := r.client.Status().Patch(ctx, patched, client.MergeFrom(s.base)); err != nil {
		return fmt.Errorf("patching Machine status: %w", err)
	}
	*s.m = *patched
	s.base = patched.DeepCopy()
	if from != to {
		PhaseTransitionsTotal.WithLabelValues(from, to).Inc()
		if to != machinev1beta1.PhaseDeleting {
			PhaseTransitionSeconds.WithLabelValues(to).Observe(r.now().Sub(m.CreationTimestamp.Time).Seconds())
		}
		log.FromContext(ctx).Info("phase changed", "from", from, "to", to)
	}
	return nil
}

// eventf records an event when a recorder is configured.
func (r *Reconciler) eventf(obj runtime.Object, eventType, reason, action, format string, args ...any) {
	if r.recorder == nil {
		return
	}
	r.recorder.Eventf(obj, nil, eventType, reason, action, format, args...)
}

// ignoreNotFound returns nil for NotFound errors.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(strings.TrimSpace(s[:n]), "") + "…"
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
