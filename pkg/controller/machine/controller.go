package machine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/authority"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/readyourwrites"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// Waits on the provider or on pods are per-Machine exponential backoffs, never fixed polling.
const (
	defaultWaitBackoffBase  = time.Second
	defaultWaitBackoffMax   = 2 * time.Minute
	defaultDrainBackoffBase = time.Second
	defaultDrainBackoffMax  = 5 * time.Second
)

// DefaultMaxConcurrentReconciles is the default of --max-concurrent-reconciles (sized in docs/performance.md).
const DefaultMaxConcurrentReconciles = 50

// Options configure a Reconciler.
type Options struct {
	Client              client.Client        // Machines and Nodes (normally the manager's cached client)
	APIReader           client.Reader        // optional (default the manager's): the drain's uncached reads of Nodes
	Actuator            provider.Actuator    // the provider; a provider.SpecServer is never given others' Machines
	Recorder            events.EventRecorder // optional (default the manager's, named ControllerName)
	NodeDrainTimeout    time.Duration        // bounds a drain (0 waits forever); NodeDrainTimeoutAnnotation overrides it
	Clock               clock.PassiveClock   // optional (default the real clock)
	Namespace           string               // optional: only the Machines of this namespace
	MachineAPIMigration bool                 // OpenShift's feature gate of that name (package internal/authority)
	Gate                provider.Gate        // optional: holds back instance creations and deletions while frozen
	KubeClient          kubernetes.Interface // the drain's clientset; SetupWithManager builds it when nil
}

// withDefaults fills in the zero fields that need no manager (SetupWithManager fills in the others).
func (o Options) withDefaults() Options {
	o.Clock = cmp.Or[clock.PassiveClock](o.Clock, clock.RealClock{})
	return o
}

// Reconciler is the machine controller.
type Reconciler struct {
	opts   Options // defaulted
	events *patch.Events
	// Tunables (tests shorten them).
	waitBackoff  workqueue.TypedRateLimiter[types.NamespacedName]
	drainBackoff workqueue.TypedRateLimiter[types.NamespacedName]
	writes       *readyourwrites.Memo
	cpMu         sync.Mutex // serializes the one-control-plane-drain-at-a-time check and cordon
}

// NewReconciler returns a machine controller. It registers the metrics.
func NewReconciler(opts Options) *Reconciler {
	RegisterMetrics()
	opts = opts.withDefaults()
	backoff := workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName]
	return &Reconciler{
		opts:         opts,
		events:       &patch.Events{Recorder: opts.Recorder},
		waitBackoff:  backoff(defaultWaitBackoffBase, defaultWaitBackoffMax),
		drainBackoff: backoff(defaultDrainBackoffBase, defaultDrainBackoffMax),
		writes:       readyourwrites.New(),
	}
}

// scope is one Reconcile's view of a Machine: m is the working copy, base the last state read or written.
// Each status write sends the fields one field manager owns (statusWriters), when they differ from base.
type scope struct {
	m, base *machinev1beta1.Machine
	key     types.NamespacedName
	// Why Reconcile writes no status at its end (all false: it does).
	leftAlone    bool     // another provider's Machine or another API's: leave.go wrote what it had to
	othersToEnd  bool     // being deleted without our finalizer: another controller ends it
	released     bool     // we removed our finalizer: the Machine may be gone
	awaitingLink bool     // Create made the instance: the status waits for nodelink's nodeRef (provision.go)
	behind       []string // the resourceVersions our writes left behind (package readyourwrites)
}

// statusDone reports whether Reconcile must not write the status at its end.
func (s *scope) statusDone() bool {
	return s.leftAlone || s.othersToEnd || s.released || s.awaitingLink
}

func phaseOf(m *machinev1beta1.Machine) string { return ptr.Deref(m.Status.Phase, "") }

func setPhase(m *machinev1beta1.Machine, phase string) { m.Status.Phase = &phase }

// Reconcile drives one Machine: observe, decide and act (reconcile), report (one status patch if changed).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if r.opts.Namespace != "" && req.Namespace != r.opts.Namespace {
		return ctrl.Result{}, nil
	}
	m := &machinev1beta1.Machine{}
	if err := r.opts.Client.Get(ctx, req.NamespacedName, m); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if r.writes.Stale(req.NamespacedName, m.ResourceVersion, r.opts.Clock.Now()) {
		// Our own last write is not in the cache yet, and its event does not wake us (machinePredicate).
		return ctrl.Result{RequeueAfter: readyourwrites.CatchUpDelay}, nil
	}
	s := &scope{m: m, base: m.DeepCopy(), key: req.NamespacedName}
	res, err := r.reconcile(ctx, s)
	defer func() {
		r.writes.WroteThrough(req.NamespacedName, s.behind, s.base.ResourceVersion, r.opts.Clock.Now())
	}()
	if perr := r.writeStatus(ctx, s); perr != nil {
		if apierrors.IsNotFound(perr) && !s.m.DeletionTimestamp.IsZero() {
			perr = nil
		}
		err = errors.Join(err, perr)
	}
	if err != nil {
		return ctrl.Result{}, err // a provider.RequeueAfterError was already turned into res.RequeueAfter
	}
	return res, nil
}

// forget drops what the controller remembers of a Machine that is gone.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.waitBackoff.Forget(key)
	r.drainBackoff.Forget(key)
	r.events.Forget(key)
	r.writes.Forget(key)
	for _, c := range instanceFailed { // its failure counters' series
		c.DeletePartialMatch(prometheus.Labels{"name": key.Name, "namespace": key.Namespace})
	}
}

// reconcile leaves the Machine alone (leave.go), or goes on to the deletion pipeline or provisioning.
func (r *Reconciler) reconcile(ctx context.Context, s *scope) (ctrl.Result, error) {
	m := s.m
	d := authority.Decide(r.opts.MachineAPIMigration, m.Spec.AuthoritativeAPI, m.Status.AuthoritativeAPI)
	if d.Step != authority.Reconcile {
		return ctrl.Result{}, r.leaveToAuthority(ctx, s, d)
	}
	if spec, foreign := foreignProviderSpec(m.Spec.ProviderSpec.Value, provider.ServedKinds(r.opts.Actuator)); foreign {
		return ctrl.Result{}, r.leaveForeign(ctx, s, spec)
	}
	now := r.opts.Clock.Now()
	if d.Paused != nil {
		m.Status.Conditions = conditions.Set(m.Status.Conditions, *d.Paused, now)
	}
	m.Status.Conditions = conditions.Remove(m.Status.Conditions, ProviderSupportedCondition)
	drainable, terminable := hookConditions(m.Spec.LifecycleHooks)
	m.Status.Conditions = conditions.Set(m.Status.Conditions, drainable, now)
	m.Status.Conditions = conditions.Set(m.Status.Conditions, terminable, now)

	if !m.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	if !controllerutil.ContainsFinalizer(m, machinev1beta1.MachineFinalizer) { // under an optimistic lock: others edit the list
		if err := r.patchObject(ctx, s, true, func(m *machinev1beta1.Machine) {
			controllerutil.AddFinalizer(m, machinev1beta1.MachineFinalizer)
		}); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer: %w", err)
		}
	}
	return r.reconcileNormal(ctx, s)
}

// The Machine writes: metadata/spec merge patches and one status patch (docs/architecture.md).

// patchObject merge-patches metadata/spec, under an optimistic lock for lists others edit (finalizers).
func (r *Reconciler) patchObject(ctx context.Context, s *scope, optimisticLock bool, mutate func(*machinev1beta1.Machine)) error {
	before := s.m.DeepCopy()
	after := s.m.DeepCopy()
	mutate(after)
	if equality.Semantic.DeepEqual(before.ObjectMeta, after.ObjectMeta) && equality.Semantic.DeepEqual(before.Spec, after.Spec) {
		return nil
	}
	after.Status = before.Status // diff only metadata and spec
	var patch client.Patch = client.MergeFrom(before)
	if optimisticLock {
		patch = client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	}
	prev := s.base.ResourceVersion
	if err := r.opts.Client.Patch(ctx, after, patch); err != nil {
		return err
	}
	s.behind = append(s.behind, prev)
	s.base.ObjectMeta, s.base.Spec = *after.ObjectMeta.DeepCopy(), *after.Spec.DeepCopy()
	s.m.ObjectMeta, s.m.Spec = after.ObjectMeta, after.Spec // after is not used again
	return nil
}

// annotate sets a Machine annotation (no request when it has that value already).
func (r *Reconciler) annotate(ctx context.Context, s *scope, key, value string) error {
	return r.patchObject(ctx, s, false, func(m *machinev1beta1.Machine) {
		metav1.SetMetaDataAnnotation(&m.ObjectMeta, key, value)
	})
}

// Field managers of the Machine status (docs/architecture.md, "Status writes and events"): the machine
// controller owns what it observes and decides, its authority step owns status.authoritativeAPI and Paused;
// nodelink owns nodeRef, and writes it alone.
var (
	statusFields = patch.Fields{
		Manager: ControllerName,
		Keys:    []string{"phase", "providerStatus", "addresses", "errorReason", "errorMessage", "lastUpdated", "lastOperation"},
		Conditions: []string{string(InstanceExistsCondition), string(DrainedCondition), string(DrainableCondition),
			string(TerminableCondition), string(ProviderUpdatedCondition), string(ProviderSupportedCondition)},
	}
	initAPIFields, pausedFields = authority.StatusFields(ControllerName + "-authority")
)

// writeStatus writes, unless Reconcile is done with the status, what changed in it: the authority's fields,
// then the controller's, with a new lastUpdated.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) error {
	if s.statusDone() {
		return nil
	}
	work := s.m.DeepCopy() // s.m becomes the server's object after each write
	if phaseOf(work) != machinev1beta1.PhaseFailed {
		work.Status.ErrorReason = nil
		work.Status.ErrorMessage = nil
	}
	for _, f := range []patch.Fields{initAPIFields, pausedFields} {
		if err := r.apply(ctx, s, work, f); err != nil {
			return err
		}
	}
	work.Status.LastUpdated = s.base.Status.LastUpdated
	if changed, err := patch.StatusChanged(s.base, work, statusFields); err != nil || !changed {
		return err
	}
	now := metav1.NewTime(r.opts.Clock.Now().Truncate(time.Second))
	work.Status.LastUpdated = &now
	from, to := phaseOf(s.base), phaseOf(work)
	if err := r.apply(ctx, s, work, statusFields); err != nil {
		return err
	}
	if from != to {
		PhaseTransitionsTotal.WithLabelValues(from, to).Inc()
		if to != machinev1beta1.PhaseDeleting {
			PhaseTransitionSeconds.WithLabelValues(to).Observe(r.opts.Clock.Now().Sub(work.CreationTimestamp.Time).Seconds())
		}
		log.FromContext(ctx).Info("phase changed", "from", from, "to", to)
	}
	return nil
}

// apply writes f's fields of work's status when they differ from base's; then base and the working copy are
// the server's object.
func (r *Reconciler) apply(ctx context.Context, s *scope, work *machinev1beta1.Machine, f patch.Fields) error {
	desired := work.DeepCopy()
	desired.ObjectMeta, desired.Spec = *s.base.ObjectMeta.DeepCopy(), *s.base.Spec.DeepCopy()
	prev := s.base.ResourceVersion
	wrote, err := patch.ApplyStatus(ctx, r.opts.Client, s.base, desired, f)
	if err != nil || !wrote {
		return err
	}
	s.behind = append(s.behind, prev)
	s.base = desired
	*s.m = *desired.DeepCopy()
	return nil
}

// freshReader reads uncached (the drain's re-read of a Node).
func (r *Reconciler) freshReader() client.Reader {
	return cmp.Or[client.Reader](r.opts.APIReader, r.opts.Client)
}
