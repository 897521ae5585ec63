package operator

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"math"
	"net/http"
	"os"
	"slices"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/machine-api-operator/machine-api-operator/pkg/leaderelection"
	mapimetrics "github.com/machine-api-operator/machine-api-operator/pkg/metrics"
	"github.com/machine-api-operator/machine-api-operator/pkg/names"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/certs"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/collector"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// ownedTypes are the kinds the operator applies; their informers only hold
// objects with the managed-by label, and any event on them triggers a sync
// (this is how drift and deletions are reverted within seconds).
func ownedTypes() []client.Object {
	return []client.Object{
		&appsv1.Deployment{}, &appsv1.DaemonSet{},
		&corev1.Service{}, &corev1.ServiceAccount{}, &corev1.Secret{},
		&rbacv1.Role{}, &rbacv1.RoleBinding{}, &rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{},
		&admissionregistrationv1.ValidatingWebhookConfiguration{}, &admissionregistrationv1.MutatingWebhookConfiguration{},
		&admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{},
		&apiextensionsv1.CustomResourceDefinition{},
	}
}

// CacheOptions restrict the manager's informers to what the operator needs:
// namespaced objects in its namespace, owned kinds by label, and the
// cluster-scoped inputs by name. Machines and MachineSets (of the namespace,
// read only by the metrics collector and the install gate) are cached
// stripped down to what those read (collector.Transform). They are for a
// cluster with the CRDs of the vanilla deploy path (the operator watches
// what else it finds while it runs). Use them in manager.Options.Cache.
func CacheOptions(namespace string) cache.Options {
	vanilla := servedAPIs{}
	for _, a := range optionalAPIs {
		vanilla[a.kind()] = !a.openShiftOnly
	}
	return cacheOptions(namespace, vanilla)
}

// cacheOptions are CacheOptions for a cluster that serves the optional APIs
// in served. The cache can only restrict kinds the API server serves when
// it is built; a kind whose CRD comes later is cached with the defaults
// (every object in scope; Machines still stripped by DefaultTransform).
func cacheOptions(namespace string, served servedAPIs) cache.Options {
	owned := labels.SelectorFromSet(labels.Set{config.ManagedByLabel: config.ManagedByValue})
	byName := func(name string) cache.ByObject {
		return cache.ByObject{Field: fields.OneTermEqualSelector("metadata.name", name)}
	}
	by := map[client.Object]cache.ByObject{
		// The trusted CA bundle, in the namespace (the only ConfigMap read).
		&corev1.ConfigMap{}: byName(names.TrustedCAConfigMapName),
	}
	for _, a := range optionalAPIs {
		if a.obj == nil || !served[a.kind()] {
			continue
		}
		if a.byName != "" {
			by[a.obj] = byName(a.byName)
		} else {
			by[a.obj] = cache.ByObject{Transform: collector.Transform}
		}
	}
	for _, obj := range ownedTypes() {
		by[obj] = cache.ByObject{Label: owned}
	}
	return cache.Options{
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		DefaultTransform:  collector.Transform,
		ByObject:          by,
	}
}

// metricsTLS is the optional TLS setting as SecureServerOptions takes it.
func metricsTLS(f func(*tls.Config)) []func(*tls.Config) {
	if f == nil {
		return nil
	}
	return []func(*tls.Config){f}
}

// setupWithManager registers the operator's controller: every watched event
// maps to the single Request, and the images.json file is polled for changes.
// Optional APIs (CRD-backed kinds) served now are watched from the start;
// the others once their CRD is served (apiTracker), which the CRD watch
// brings a sync for.
func (o *Operator) setupWithManager(mgr manager.Manager, crds cache.Cache, served servedAPIs) error {
	toRequest := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{Request}
	})
	fileEvents := make(chan event.GenericEvent, 1)
	if err := mgr.Add(&fileWatcher{path: o.opts.ImagesJSONPath, interval: time.Second, events: fileEvents, synced: o.syncedImagesDigest}); err != nil {
		return err
	}
	watchedCRD := predicate.NewPredicateFuncs(func(obj client.Object) bool {
		return slices.Contains(watchedCRDs(), obj.GetName())
	})
	b := builder.ControllerManagedBy(mgr).
		Named("machine-api-operator").
		WithOptions(controller.Options{
			MaxConcurrentReconciles: 1,
			// Failed syncs retry from 100ms doubling up to 30s, so a fixed
			// cause (RBAC, a webhook, quota) is picked up within 30s.
			RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](100*time.Millisecond, 30*time.Second),
		}).
		// The trusted CA bundle's hash rolls the operand's pods.
		Watches(&corev1.ConfigMap{}, toRequest).
		WatchesRawSource(source.Kind(crds, client.Object(crdMeta()), toRequest, watchedCRD)).
		WatchesRawSource(source.Channel(fileEvents, toRequest))
	o.apis = &apiTracker{crds: crds, mapper: mgr.GetRESTMapper(), watched: map[string]bool{}}
	for _, a := range optionalAPIs {
		// A watch of a kind the cluster does not serve would keep the
		// controller from starting.
		if a.obj != nil && served[a.kind()] {
			b = b.Watches(a.obj, toRequest)
			o.apis.watched[a.kind()] = true
		}
	}
	for _, obj := range ownedTypes() {
		b = b.Watches(obj, toRequest)
	}
	// The first sync must not depend on some watched object existing.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		select {
		case fileEvents <- event.GenericEvent{Object: &configv1.ClusterOperator{}}:
		case <-ctx.Done():
		}
		return nil
	})); err != nil {
		return err
	}
	ctrl, err := b.Build(o)
	if err != nil {
		return err
	}
	o.apis.watch = func(obj client.Object) error {
		return ctrl.Watch(source.Kind(mgr.GetCache(), obj, toRequest))
	}
	return nil
}

// fileWatcher polls a file's content and emits an event when it differs
// from what the last sync read. Comparing against the last sync (not the last
// poll) means a change that some other event already synced, followed by a
// change back, is still noticed. Polling (a small read each second) is used
// instead of inotify because ConfigMap volumes swap a symlinked directory,
// which inotify watchers on the file miss.
type fileWatcher struct {
	path     string
	interval time.Duration
	events   chan<- event.GenericEvent
	// synced returns the digest the last sync read ("" before the first).
	synced func() string
}

// NeedLeaderElection: only the leader syncs, so only it needs the events.
func (w *fileWatcher) NeedLeaderElection() bool { return true }

func (w *fileWatcher) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithValues("path", w.path)
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		synced := w.synced()
		if synced == "" {
			continue // the first sync has not run yet; it will read the file
		}
		if d := fileDigest(w.path); d != synced {
			logger.Info("images file changed")
			select {
			case w.events <- event.GenericEvent{Object: &configv1.ClusterOperator{}}:
			default: // a sync is already pending
			}
		}
	}
}

// fileDigest is the content hash of a file, or the read error (so a file
// appearing or disappearing also counts as a change).
func fileDigest(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("%x", sha256.Sum256(data))
}

// ManagerOptions are the process-level settings of NewManager.
type ManagerOptions struct {
	// MetricsBindAddress serves the metrics over HTTPS with authentication
	// and authorization ("0" disables it, and the Machine collector with
	// it); MetricsCertDir holds its certificate ("" = self-signed).
	MetricsBindAddress string
	MetricsCertDir     string
	// MetricsTLS sets the metrics server's TLS version and cipher suites
	// (the cluster's TLS profile); nil keeps TLS 1.2 and Go's suites.
	MetricsTLS             func(*tls.Config)
	HealthProbeBindAddress string
	LeaderElection         bool
	// LeaderElectionTiming is the election's timing; zero fields take
	// controller-runtime's defaults (tests) and RenewInterval 0 writes the
	// Lease at every renewal.
	LeaderElectionTiming leaderelection.Timing
	// Scheme must have every API group the operator uses (pkg/scheme.New()).
	Scheme *runtime.Scheme
	// SkipControllerNameValidation allows several managers in one process
	// (tests); controller names must otherwise be unique per process.
	SkipControllerNameValidation bool
}

// NewManager waits until the API server answers (an unreachable API server
// at start is retried with backoff, never fatal), then builds a
// controller-runtime manager running the operator: the restricted cache, leader election on the Lease "machine-api-operator" in the
// operand namespace, health checks, metrics (with the Machine and MachineSet
// collector, on every replica), the webhook certificate issuer when
// service-ca is absent, and the operator's controller.
func NewManager(ctx context.Context, restCfg *rest.Config, o Options, m ManagerOptions) (manager.Manager, error) {
	if o.Namespace == "" {
		o.Namespace = config.DefaultNamespace
	}
	disco, err := discovery.NewDiscoveryClientForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("creating discovery client: %w", err)
	}
	if err := WaitForAPIServer(ctx, disco); err != nil {
		return nil, err
	}
	// One REST mapper for the manager and the check of which CRD-backed
	// kinds are served: the cache can only restrict those.
	httpClient, err := rest.HTTPClientFor(restCfg)
	if err != nil {
		return nil, fmt.Errorf("creating HTTP client: %w", err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(restCfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("creating REST mapper: %w", err)
	}
	served, err := servedAtStart(mapper)
	if err != nil {
		return nil, err
	}
	if missing := served.missing(true); len(missing) > 0 {
		log.FromContext(ctx).Info("Starting without CRDs the operator needs; each is watched from when it is installed", "missing", missing)
	}
	var lock resourcelock.Interface
	var events *leaderelection.Lock
	if m.LeaderElection {
		if events, err = leaderelection.NewLock(restCfg, o.Namespace, config.OperatorLeaseName, m.LeaderElectionTiming); err != nil {
			return nil, err
		}
		lock = events
	}
	t := m.LeaderElectionTiming
	mgr, err := manager.New(restCfg, manager.Options{
		Scheme:                              m.Scheme,
		MapperProvider:                      func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return mapper, nil },
		Cache:                               cacheOptions(o.Namespace, served),
		Metrics:                             mapimetrics.SecureServerOptions(m.MetricsBindAddress, m.MetricsCertDir, metricsTLS(m.MetricsTLS)...),
		HealthProbeBindAddress:              m.HealthProbeBindAddress,
		LeaderElection:                      m.LeaderElection,
		LeaderElectionID:                    config.OperatorLeaseName,
		LeaderElectionNamespace:             o.Namespace,
		LeaderElectionResourceLockInterface: lock,
		LeaderElectionReleaseOnCancel:       true,
		LeaseDuration:                       durationOrNil(t.LeaseDuration),
		RenewDeadline:                       durationOrNil(t.RenewDeadline),
		RetryPeriod:                         durationOrNil(t.RetryPeriod),
		Controller:                          ctrlconfig.Controller{SkipNameValidation: &m.SkipControllerNameValidation},
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if events != nil {
		if err := mgr.Add(events); err != nil {
			return nil, err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if m.MetricsBindAddress != "0" {
		if err := mgr.Add(collector.New(mgr.GetCache(), o.Namespace)); err != nil {
			return nil, err
		}
	}
	crds, err := newCRDCache(restCfg, cache.Options{Scheme: m.Scheme, HTTPClient: httpClient, Mapper: mapper})
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(crds); err != nil {
		return nil, err
	}
	var issuer CertIssuer
	if o.certificates() != CertificatesServiceCA {
		// Reads go to the API server: three GETs per sync, and never a
		// stale cached read that would re-issue certificates it just wrote.
		cm, err := certs.NewManager(certs.Options{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Namespace: o.Namespace})
		if err != nil {
			return nil, err
		}
		issuer = cm
	}
	op := New(o, mgr.GetClient(), mgr.GetCache(), issuer, mgr.GetEventRecorder(config.OperatorLeaseName))
	if err := op.setupWithManager(mgr, crds, served); err != nil {
		return nil, fmt.Errorf("setting up the operator controller: %w", err)
	}
	return mgr, nil
}

// WaitForAPIServer retries with exponential backoff (capped at 30s) until
// the API server answers, logging each failure.
func WaitForAPIServer(ctx context.Context, disco discovery.DiscoveryInterface) error {
	logger := log.FromContext(ctx)
	backoff := wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: 30 * time.Second}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(context.Context) (bool, error) {
		v, err := disco.ServerVersion()
		if err != nil {
			logger.Info("Waiting for the API server", "err", err.Error())
			return false, nil
		}
		logger.Info("API server reachable", "version", v.GitVersion)
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the API server: %w", err)
	}
	return nil
}

func durationOrNil(d time.Duration) *time.Duration {
	if d == 0 {
		return nil
	}
	return &d
}
