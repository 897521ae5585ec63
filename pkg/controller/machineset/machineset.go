package machineset

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/authority"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/freeze"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
)

// Options configure a Reconciler.
type Options struct {
	// Namespace (optional) restricts the controller to one namespace.
	Namespace string
	// Client reads a cache with SetupWithManager's indexes (default: the manager's).
	Client client.Client
	// APIReader re-reads the MachineSet uncached before adopting (default: the manager's).
	APIReader client.Reader
	// Recorder (optional) receives events (default: the manager's, named ControllerName).
	Recorder events.EventRecorder
	// Clock (optional) is the time source; tests use a fake one.
	Clock clock.PassiveClock
	// MaxCreateBurst caps the Machines one Reconcile creates (--machine-create-burst).
	MaxCreateBurst int
	// MaxConcurrentDeletes caps the deletions in flight (--max-concurrent-deletes).
	MaxConcurrentDeletes int
	// MachineAPIMigration is OpenShift's feature gate (package internal/authority).
	MachineAPIMigration bool
	// ExpectationsTimeout drops expectations the cache never shows (--expectations-timeout).
	ExpectationsTimeout time.Duration
	// CreateRetry (optional) paces resending a Create whose response was lost.
	CreateRetry wait.Backoff
}

// withDefaults fills in the zero fields that need no manager (SetupWithManager fills in the others).
func (o Options) withDefaults() Options {
	if o.CreateRetry.Steps == 0 {
		o.CreateRetry = DefaultCreateRetry()
	}
	o.Clock = cmp.Or[clock.PassiveClock](o.Clock, clock.RealClock{})
	o.MaxCreateBurst = cmp.Or(max(o.MaxCreateBurst, 0), DefaultMaxCreateBurst)
	o.MaxConcurrentDeletes = cmp.Or(max(o.MaxConcurrentDeletes, 0), DefaultMaxConcurrentDeletes)
	return o
}

// Reconciler is the MachineSet controller.
type Reconciler struct {
	opts         Options // defaulted
	events       *patch.Events
	expectations *Expectations
}

// NewReconciler returns a MachineSet controller (Default* for unset options); it registers the metrics.
func NewReconciler(opts Options) *Reconciler {
	RegisterMetrics()
	opts = opts.withDefaults()
	r := &Reconciler{
		opts:         opts,
		events:       &patch.Events{Recorder: opts.Recorder},
		expectations: NewExpectations(opts.Clock, opts.ExpectationsTimeout),
	}
	r.expectations.OnTimeout = func(key types.NamespacedName, creates, deletes int) {
		ExpectationTimeoutsTotal.Add(float64(creates + deletes))
		ctrl.Log.WithName("machineset").Info("expected Machine changes never showed in the cache; dropped them",
			"machineset", key, "creates", creates, "deletes", deletes)
	}
	return r
}

// Reconcile drives one MachineSet.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if r.opts.Namespace != "" && req.Namespace != r.opts.Namespace {
		return ctrl.Result{}, nil
	}
	ms := &machinev1beta1.MachineSet{}
	if err := r.opts.Client.Get(ctx, req.NamespacedName, ms); err != nil {
		if apierrors.IsNotFound(err) {
			r.expectations.Forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading MachineSet %s: %w", req.NamespacedName, err)
	}
	if ms.DeletionTimestamp != nil { // the garbage collector deletes the Machines
		return ctrl.Result{}, nil
	}
	d := authority.Decide(r.opts.MachineAPIMigration, ms.Spec.AuthoritativeAPI, ms.Status.AuthoritativeAPI)
	if d.Step != authority.Reconcile {
		return ctrl.Result{}, r.leaveToAuthority(ctx, ms, d)
	}
	if errs := ValidateMachineSet(ms); len(errs) > 0 {
		return ctrl.Result{}, r.reconcileInvalid(ctx, ms, errs, d.Paused)
	}
	scaleErr := r.syncScaleFromZero(ctx, ms)
	res, err := r.reconcileReplicas(ctx, ms, d.Paused)
	if err = errors.Join(err, scaleErr); err != nil {
		return ctrl.Result{}, err
	}
	return res, nil
}

// reconcileInvalid records why ms is invalid; not requeued: a fix changes the MachineSet.
func (r *Reconciler) reconcileInvalid(ctx context.Context, ms *machinev1beta1.MachineSet, errs field.ErrorList, paused *machinev1beta1.Condition) error {
	msg := errs.ToAggregate().Error()
	ctrl.LoggerFrom(ctx).Info("MachineSet is invalid; not managing its Machines", "err", msg)
	changed := ms.Status.ErrorMessage == nil || *ms.Status.ErrorMessage != msg
	if err := r.patchStatus(ctx, ms, r.withPaused(invalidStatus(ms, msg), paused)); err != nil {
		return err
	}
	if changed {
		r.events.Eventf(ms, nil, corev1.EventTypeWarning, EventInvalidConfiguration, "Validate", "%s", msg)
	}
	return nil
}

// reconcileReplicas claims Machines, creates or deletes to reach spec.replicas, writes the status.
func (r *Reconciler) reconcileReplicas(ctx context.Context, ms *machinev1beta1.MachineSet, paused *machinev1beta1.Condition) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	key := client.ObjectKeyFromObject(ms)
	// Before the list: a later observation would vouch for a Machine it lacks.
	satisfied, _ := r.expectations.Satisfied(key)
	machines, err := r.listMachines(ctx, ms)
	if err != nil {
		return ctrl.Result{}, err
	}
	c := classifyMachines(ms, selectorOf(ms), machines)
	active := c.active

	// A failed claim means our view is stale or contested: no replica changes.
	var claimErr error
	if len(c.adopt) > 0 {
		adopted, err := r.adopt(ctx, ms, c.adopt)
		active = append(active, adopted...)
		claimErr = err
	}
	if len(c.release) > 0 {
		claimErr = errors.Join(claimErr, r.release(ctx, ms, c.release))
	}

	var act replicaAction
	var actErr error
	if claimErr == nil {
		policy := machinev1beta1.MachineSetDeletePolicy(ms.Spec.DeletePolicy)
		frozen, held := freeze.MachineSetFrozen(ms), ms.Annotations[mdv1beta1.DisableMachineCreateAnnotation] == "true"
		act = decide(int(*ms.Spec.Replicas), active, satisfied, policy, r.opts.MaxCreateBurst, frozen || held)
		switch {
		case act.frozen && frozen:
			log.V(2).Info("not creating Machines: the MachineSet is frozen (docs/safety.md)", "replicas", len(active), "desired", *ms.Spec.Replicas)
		case act.frozen:
			log.V(2).Info("not creating Machines: an old set of an OnDelete MachineDeployment ("+mdv1beta1.DisableMachineCreateAnnotation+")", "replicas", len(active), "desired", *ms.Spec.Replicas)
		case act.wait:
			creates, deletes := r.expectations.Pending(key)
			log.V(4).Info("waiting for expected Machine changes to show in the cache",
				"pendingCreates", creates, "pendingDeletes", deletes)
		case act.create > 0:
			log.V(2).Info("creating Machines", "count", act.create, "replicas", len(active), "desired", *ms.Spec.Replicas)
			actErr = r.createMachines(ctx, ms, act.create)
		case len(act.remove) > 0:
			log.V(2).Info("deleting Machines", "count", len(act.remove), "replicas", len(active), "desired", *ms.Spec.Replicas)
			actErr = r.deleteMachines(ctx, ms, act.remove)
		}
	}

	nodes := r.nodeLookup(ctx)
	st, availWait := computeStatus(ms, active, nodes, r.opts.Clock.Now())
	statusErr := r.patchStatus(ctx, ms, r.withPaused(st, paused))

	if err := errors.Join(claimErr, actErr, statusErr); err != nil {
		return ctrl.Result{}, err
	}
	// Wake up when pending expectations expire, should an event be lost; at once if
	// they expired during this reconcile (slow Creates): nothing else may wake us.
	creates, deletes := r.expectations.Pending(key)
	ok, wait := r.expectations.Satisfied(key)
	if ok && creates+deletes > 0 {
		wait = time.Millisecond
	}
	if wait > 0 && (availWait == 0 || wait < availWait) {
		availWait = wait
	}
	return ctrl.Result{RequeueAfter: availWait}, nil
}

// listMachines lists ms's Machines and orphans from the cache (its own objects: never modify them).
func (r *Reconciler) listMachines(ctx context.Context, ms *machinev1beta1.MachineSet) ([]*machinev1beta1.Machine, error) {
	var out []*machinev1beta1.Machine
	for _, v := range []string{string(ms.UID), OrphanIndexValue} {
		list := &machinev1beta1.MachineList{}
		if err := r.opts.Client.List(ctx, list, client.InNamespace(ms.Namespace),
			client.MatchingFields{IndexMachineController: v}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing Machines of MachineSet %s/%s: %w", ms.Namespace, ms.Name, err)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// nodeLookup returns a memoizing cache lookup of Nodes by name (nil when absent).
func (r *Reconciler) nodeLookup(ctx context.Context) func(string) *corev1.Node {
	seen := map[string]*corev1.Node{}
	return func(name string) *corev1.Node {
		if n, ok := seen[name]; ok {
			return n
		}
		n := &corev1.Node{}
		if err := r.opts.Client.Get(ctx, types.NamespacedName{Name: name}, n, client.UnsafeDisableDeepCopy); err != nil {
			if !apierrors.IsNotFound(err) {
				ctrl.LoggerFrom(ctx).Error(err, "reading Node for readiness", "node", name)
			}
			n = nil
		}
		seen[name] = n
		return n
	}
}

// Field managers of the MachineSet status: the controller's replica counts and errors; its authority step's
// authoritativeAPI and Paused; the safety controller's Frozen (docs/architecture.md, "Status writes and events").
var (
	statusFields = patch.Fields{Manager: ControllerName, Keys: []string{"replicas", "fullyLabeledReplicas", "readyReplicas",
		"availableReplicas", "observedGeneration", "labelSelector", "errorReason", "errorMessage"}}
	initAPIFields, pausedFields = authority.StatusFields(ControllerName + "-authority")
)

// patchStatus writes what changed in st, each field manager's fields by itself.
func (r *Reconciler) patchStatus(ctx context.Context, ms *machinev1beta1.MachineSet, st machinev1beta1.MachineSetStatus) error {
	return client.IgnoreNotFound(patch.SetStatus(ctx, r.opts.Client, ms, func(ms *machinev1beta1.MachineSet) { ms.Status = st },
		initAPIFields, pausedFields, statusFields))
}

func (r *Reconciler) syncScaleFromZero(ctx context.Context, ms *machinev1beta1.MachineSet) error {
	want, provider, err := ScaleFromZeroAnnotations(&ms.Spec.Template.Spec)
	if provider == "" {
		return nil
	}
	if err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("not writing scale-from-zero annotations: invalid providerSpec", "provider", provider, "err", err)
		if provider == ProviderVSphere { // OpenShift's vSphere MachineSet controller's event; once per message here
			r.events.Once(client.ObjectKeyFromObject(ms), "scale-from-zero", patch.Event{Regarding: ms, Type: corev1.EventTypeWarning, Reason: EventReconcileError, Action: "Reconcile", Note: err.Error()})
		}
		return nil
	}
	diff := missingAnnotations(ms.Annotations, want)
	if diff == nil {
		return nil
	}
	upd := ms.DeepCopy()
	if upd.Annotations == nil {
		upd.Annotations = map[string]string{}
	}
	maps.Copy(upd.Annotations, diff)
	if err := r.opts.Client.Patch(ctx, upd, client.MergeFrom(ms)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patching scale-from-zero annotations: %w", err)
	}
	return nil
}

// adopt makes ms the orphans' controller, re-reading it uncached first so a
// deleted or replaced MachineSet adopts nothing; the lock lets another owner win.
func (r *Reconciler) adopt(ctx context.Context, ms *machinev1beta1.MachineSet, orphans []*machinev1beta1.Machine) ([]*machinev1beta1.Machine, error) {
	fresh := &machinev1beta1.MachineSet{}
	if err := cmp.Or[client.Reader](r.opts.APIReader, r.opts.Client).Get(ctx, client.ObjectKeyFromObject(ms), fresh); err != nil {
		return nil, fmt.Errorf("re-reading MachineSet before adopting Machines: %w", err)
	}
	if fresh.UID != ms.UID {
		return nil, fmt.Errorf("not adopting Machines: MachineSet was replaced (UID %s, cached %s)", fresh.UID, ms.UID)
	}
	if fresh.DeletionTimestamp != nil {
		return nil, fmt.Errorf("not adopting Machines: MachineSet is being deleted")
	}
	ref := metav1.NewControllerRef(ms, machineSetKind)
	adopted, err := r.patchOwners(ctx, orphans, "adopting", "adopted Machine", func(m *machinev1beta1.Machine) {
		m.OwnerReferences = append(m.OwnerReferences, *ref)
	})
	return slices.DeleteFunc(adopted, func(m *machinev1beta1.Machine) bool { return m == nil }), err
}

func (r *Reconciler) release(ctx context.Context, ms *machinev1beta1.MachineSet, machines []*machinev1beta1.Machine) error {
	_, err := r.patchOwners(ctx, machines, "releasing", "released Machine: its labels no longer match the selector",
		func(m *machinev1beta1.Machine) {
			m.OwnerReferences = slices.DeleteFunc(m.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.UID == ms.UID })
		})
	return err
}

// patchOwners applies edit to each Machine under an optimistic lock, in
// parallel; it returns the patched Machines by index (nil where not).
func (r *Reconciler) patchOwners(ctx context.Context, machines []*machinev1beta1.Machine, verb, done string, edit func(*machinev1beta1.Machine)) ([]*machinev1beta1.Machine, error) {
	out := make([]*machinev1beta1.Machine, len(machines))
	errs := parallel(len(machines), r.opts.MaxConcurrentDeletes, func(i int) error {
		orig := machines[i]
		upd := orig.DeepCopy()
		edit(upd)
		if err := r.opts.Client.Patch(ctx, upd, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("%s Machine %s: %w", verb, orig.Name, err)
		}
		ctrl.LoggerFrom(ctx).V(2).Info(done, "machine", orig.Name)
		out[i] = upd
		return nil
	})
	return out, errors.Join(errs...)
}

func newMachine(ms *machinev1beta1.MachineSet) *machinev1beta1.Machine {
	t := &ms.Spec.Template
	return &machinev1beta1.Machine{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    ms.Name + "-",
			Namespace:       ms.Namespace,
			Labels:          maps.Clone(t.Labels),
			Annotations:     maps.Clone(t.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ms, machineSetKind)},
		},
		Spec: *t.Spec.DeepCopy(),
	}
}

// deleteMachines deletes victims, at most maxDeletes at a time.
func (r *Reconciler) deleteMachines(ctx context.Context, ms *machinev1beta1.MachineSet, victims []*machinev1beta1.Machine) error {
	key := client.ObjectKeyFromObject(ms)
	for _, m := range victims {
		r.expectations.ExpectDeletions(key, m.UID)
	}
	errs := parallel(len(victims), r.opts.MaxConcurrentDeletes, func(i int) error {
		return r.deleteMachine(ctx, ms, key, victims[i])
	})
	if failed, first := failures(errs); failed > 0 {
		return fmt.Errorf("%d of %d Machine deletions failed: %w", failed, len(victims), first)
	}
	return nil
}

func (r *Reconciler) deleteMachine(ctx context.Context, ms *machinev1beta1.MachineSet, key types.NamespacedName, victim *machinev1beta1.Machine) error {
	uid := victim.UID
	m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: victim.Name, Namespace: victim.Namespace}}
	err := r.opts.Client.Delete(ctx, m, client.Preconditions{UID: &uid})
	if err != nil { // nothing will be observed
		r.expectations.DeletionObserved(key, uid)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		MachineDeletesTotal.WithLabelValues(ResultFailure).Inc()
		r.events.Eventf(ms, victim, corev1.EventTypeWarning, EventFailedDelete, "Delete", "Error deleting machine %s: %v", victim.Name, err)
		return fmt.Errorf("deleting Machine %s: %w", victim.Name, err)
	}
	MachineDeletesTotal.WithLabelValues(ResultSuccess).Inc()
	r.events.Eventf(ms, victim, corev1.EventTypeNormal, EventSuccessfulDelete, "Delete", "Deleted machine: %s", victim.Name)
	return nil
}
