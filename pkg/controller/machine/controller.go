package machine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/authority"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/readyourwrites"
)

// Default timings. Waits that depend on the provider or on pods use
// per-Machine exponential backoff instead of fixed polling.
const (
	defaultWaitBackoffBase = time.Second
	defaultWaitBackoffMax  = 2 * time.Minute

	// A drain makes one eviction pass per reconcile and comes back after
	// defaultDrainBackoffBase, doubling while a pass evicts nothing new, up
	// to defaultDrainBackoffMax: a blocked drain costs a few requests every
	// few seconds and never holds a worker.
	defaultDrainBackoffBase = time.Second
	defaultDrainBackoffMax  = 5 * time.Second
)

// DefaultMaxConcurrentReconciles is how many Machines the controller
// reconciles at once when controller.Options.MaxConcurrentReconciles is 0
// (machine-controller-manager's --max-concurrent-reconciles default). A
// reconcile never waits for pods or instances, so a drain blocked by a
// PodDisruptionBudget occupies a worker only for one eviction pass.
const DefaultMaxConcurrentReconciles = 50

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
	// Actuator is the provider. If it implements ProviderSpecServer, Machines
	// of other providers are left untouched.
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

	// MachineAPIMigration is OpenShift's feature gate of that name: when set,
	// a Machine whose status.authoritativeAPI is not MachineAPI is left
	// alone with Paused=True (package internal/authority).
	MachineAPIMigration bool

	// Gate (optional) holds back instance creations and deletions while it
	// is frozen (package safety's API-server check).
	Gate Gate

	// KubeClient is the clientset the drain uses (kubectl's drain helper
	// needs one). SetupWithManager builds it from the manager's config when
	// nil; a Reconciler used without a manager must set it to drain.
	KubeClient kubernetes.Interface
}

// Reconciler is the machine controller.
type Reconciler struct {
	client           client.Client
	apiReader        client.Reader
	actuator         Actuator
	events           *patch.Events
	kube             kubernetes.Interface
	nodeDrainTimeout time.Duration
	now              func() time.Time
	namespace        string
	migration        bool
	gate             Gate

	// Tunables (tests shorten them).
	waitBackoff  workqueue.TypedRateLimiter[types.NamespacedName]
	drainBackoff workqueue.TypedRateLimiter[types.NamespacedName]

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
		events:           &patch.Events{Recorder: opts.Recorder},
		kube:             opts.KubeClient,
		nodeDrainTimeout: opts.NodeDrainTimeout,
		now:              opts.Now,
		namespace:        opts.Namespace,
		migration:        opts.MachineAPIMigration,
		gate:             opts.Gate,
		waitBackoff:      workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](defaultWaitBackoffBase, defaultWaitBackoffMax),
		drainBackoff:     workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](defaultDrainBackoffBase, defaultDrainBackoffMax),
		writes:           readyourwrites.New(),
	}
	if r.now == nil {
		r.now = time.Now
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
	// gone: the finalizer was removed, or the Machine is not ours (another
	// provider's, or another API's); patchStatus writes nothing.
	gone bool
	// fresh: a write of this reconcile under an optimistic lock succeeded, so
	// the object it was based on (and m, updated from the response) was the
	// API server's current one: no uncached read is needed to trust it.
	fresh bool
	// behind lists the resourceVersions this reconcile's writes left behind
	// (the one read, then each write's result but the last): a later
	// reconcile that reads one of them from the cache waits for the cache.
	behind []string
}

// wrote notes that a write replaced version prev (see scope.behind).
func (s *scope) wrote(prev string) {
	s.behind = append(s.behind, prev)
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

// Reconcile drives one Machine: observe (the cached Machine), decide and act
// (reconcile), report (one status patch, only when the status changed).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if r.namespace != "" && req.Namespace != r.namespace {
		return ctrl.Result{}, nil
	}
	m := &machinev1beta1.Machine{}
	if err := r.client.Get(ctx, req.NamespacedName, m); err != nil {
		if apierrors.IsNotFound(err) {
			r.waitBackoff.Forget(req.NamespacedName)
			r.drainBackoff.Forget(req.NamespacedName)
			r.events.Forget(req.NamespacedName)
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
	s := &scope{m: m, base: m.DeepCopy(), key: req.NamespacedName}
	res, err := r.reconcile(ctx, s)
	defer func() { r.writes.WroteThrough(req.NamespacedName, s.behind, s.base.ResourceVersion, r.now()) }()
	providerID := s.m.Spec.ProviderID
	if perr := r.patchStatus(ctx, s); perr != nil {
		if apierrors.IsNotFound(perr) && !s.m.DeletionTimestamp.IsZero() {
			perr = nil
		}
		err = errors.Join(err, perr)
	}
	// Even after a failed status write: the instance is there.
	err = errors.Join(err, r.persistProviderID(ctx, s, providerID))
	if err != nil {
		// An error means controller-runtime's backoff; a RequeueAfterError
		// was already turned into res.RequeueAfter.
		return ctrl.Result{}, err
	}
	return res, nil
}

func (r *Reconciler) reconcile(ctx context.Context, s *scope) (ctrl.Result, error) {
	m := s.m
	d := authority.Decide(r.migration, m.Spec.AuthoritativeAPI, m.Status.AuthoritativeAPI)
	if d.Step != authority.Reconcile {
		return ctrl.Result{}, r.leaveToAuthority(ctx, s, d)
	}
	if spec, foreign := foreignProviderSpec(m.Spec.ProviderSpec.Value, servedKinds(r.actuator)); foreign {
		return ctrl.Result{}, r.leaveForeign(ctx, s, spec)
	}
	now := r.now()
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
	if !controllerutil.ContainsFinalizer(m, machinev1beta1.MachineFinalizer) {
		if err := r.patchObject(ctx, s, true, func(m *machinev1beta1.Machine) {
			controllerutil.AddFinalizer(m, machinev1beta1.MachineFinalizer)
		}); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer: %w", err)
		}
	}
	return r.reconcileNormal(ctx, s)
}
