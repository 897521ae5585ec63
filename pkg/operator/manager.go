package operator

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
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

// ownedTypes are the kinds the operator applies: cached by the managed-by
// label, any event on them brings a sync (drift is reverted within seconds).
// Its Secrets are watched by name (certSecretCaches): it may read no other.
func ownedTypes() []client.Object {
	return []client.Object{
		&appsv1.Deployment{}, &appsv1.DaemonSet{},
		&corev1.Service{},
		&admissionregistrationv1.ValidatingWebhookConfiguration{}, &admissionregistrationv1.MutatingWebhookConfiguration{},
		&admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{},
		&apiextensionsv1.CustomResourceDefinition{},
	}
}

// CacheOptions restrict the manager's informers to what the operator needs,
// on a cluster with the CRDs of the vanilla deploy path (see cacheOptions).
func CacheOptions(namespace string) cache.Options {
	vanilla := servedAPIs{}
	for _, a := range optionalAPIs {
		vanilla[a.kind()] = !a.openShiftOnly
	}
	return cacheOptions(namespace, vanilla)
}

// cacheOptions: the namespace, owned kinds by label, inputs by name, Machines
// stripped; only kinds served now (a later CRD's kind gets the defaults).
func cacheOptions(namespace string, served servedAPIs) cache.Options {
	owned := labels.SelectorFromSet(labels.Set{config.ManagedByLabel: config.ManagedByValue})
	byName := func(name string) cache.ByObject {
		return cache.ByObject{Field: fields.OneTermEqualSelector("metadata.name", name)}
	}
	by := map[client.Object]cache.ByObject{
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

// setupWithManager registers the controller: every event maps to Request;
// optional APIs served now are watched at once, the others by apiTracker.
func (o *Operator) setupWithManager(mgr manager.Manager, crds cache.Cache, secrets []cache.Cache, served servedAPIs) error {
	toRequest := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{Request}
	})
	fileEvents := make(chan event.GenericEvent, 1)
	// The first sync must not depend on some watched object existing.
	fileEvents <- event.GenericEvent{Object: &configv1.ClusterOperator{}}
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
			// A fixed cause (RBAC, a webhook, quota) is picked up within 30s.
			RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](100*time.Millisecond, 30*time.Second),
		}).
		// The trusted CA bundle's hash rolls the operand's pods.
		Watches(&corev1.ConfigMap{}, toRequest).
		WatchesRawSource(source.Kind(crds, client.Object(crdMeta()), toRequest, watchedCRD)).
		WatchesRawSource(source.Channel(fileEvents, toRequest))
	for _, c := range secrets {
		b = b.WatchesRawSource(source.Kind(c, client.Object(&corev1.Secret{}), toRequest))
	}
	o.apis = &apiTracker{crds: crds, mapper: mgr.GetRESTMapper(), watched: map[string]bool{}}
	for _, a := range optionalAPIs {
		// A watch of a kind not served would keep the controller from starting.
		if a.obj != nil && served[a.kind()] {
			b = b.Watches(a.obj, toRequest)
			o.apis.watched[a.kind()] = true
		}
	}
	for _, obj := range ownedTypes() {
		b = b.Watches(obj, toRequest)
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

// fileWatcher polls (inotify misses a ConfigMap volume's symlink swap) for a
// file that differs from what the last sync read, not the last poll.
type fileWatcher struct {
	path     string
	interval time.Duration
	events   chan<- event.GenericEvent
	synced   func() string // the digest the last sync read ("" before the first)
}

// NeedLeaderElection: only the leader syncs.
func (w *fileWatcher) NeedLeaderElection() bool { return true }

func (w *fileWatcher) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithValues("path", w.path)
	wait.UntilWithContext(ctx, func(context.Context) {
		// Before the first sync (synced is ""), that sync reads the file.
		if synced := w.synced(); synced == "" || fileDigest(w.path) == synced {
			return
		}
		logger.Info("images file changed")
		select {
		case w.events <- event.GenericEvent{Object: &configv1.ClusterOperator{}}:
		default: // a sync is already pending
		}
	}, w.interval)
	return nil
}

// fileDigest is the content hash of a file, or the read error (so a file
// appearing or disappearing counts as a change).
func fileDigest(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("%x", sha256.Sum256(data))
}

// ManagerOptions are the process-level settings of NewManager.
type ManagerOptions struct {
	// MetricsBindAddress serves the metrics over HTTPS ("0" disables them and
	// the Machine collector); MetricsCertDir holds its certificate ("" = self-signed).
	MetricsBindAddress string
	MetricsCertDir     string
	// MetricsTLS sets the metrics server's TLS; nil keeps TLS 1.2 and Go's suites.
	MetricsTLS             func(*tls.Config)
	HealthProbeBindAddress string
	LeaderElection         bool
	// LeaderElectionTiming: zero fields take controller-runtime's defaults.
	LeaderElectionTiming leaderelection.Timing
	// Scheme must have every API group the operator uses (pkg/scheme.New()).
	Scheme *runtime.Scheme
	// SkipControllerNameValidation allows several managers in one process (tests).
	SkipControllerNameValidation bool
}

// NewManager waits until the API server answers, then builds the manager
// running the operator.
func NewManager(ctx context.Context, restCfg *rest.Config, o Options, m ManagerOptions) (manager.Manager, error) {
	o.Namespace = cmp.Or(o.Namespace, config.DefaultNamespace)
	disco, err := discovery.NewDiscoveryClientForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("creating discovery client: %w", err)
	}
	if err := WaitForAPIServer(ctx, disco); err != nil {
		return nil, err
	}
	// One REST mapper for the manager and the check of which kinds are served.
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
		log.FromContext(ctx).Info("starting without CRDs the operator needs; each is watched from when it is installed", "missing", missing)
	}
	crds, err := newCRDCache(restCfg, cache.Options{Scheme: m.Scheme, HTTPClient: httpClient, Mapper: mapper})
	if err != nil {
		return nil, err
	}
	runnables := []manager.Runnable{crds}
	var secrets []cache.Cache
	if o.Certificates != CertificatesServiceCA {
		if secrets, err = certSecretCaches(restCfg, o.Namespace, cache.Options{Scheme: m.Scheme, HTTPClient: httpClient, Mapper: mapper}); err != nil {
			return nil, err
		}
		for _, c := range secrets {
			runnables = append(runnables, c)
		}
	}
	var lock resourcelock.Interface
	if m.LeaderElection {
		events, err := leaderelection.NewLock(restCfg, o.Namespace, config.OperatorLeaseName, m.LeaderElectionTiming)
		if err != nil {
			return nil, err
		}
		lock, runnables = events, append(runnables, events)
	}
	t := m.LeaderElectionTiming
	var tlsOpts []func(*tls.Config)
	if m.MetricsTLS != nil {
		tlsOpts = append(tlsOpts, m.MetricsTLS)
	}
	mgr, err := manager.New(restCfg, manager.Options{
		Scheme:         m.Scheme,
		MapperProvider: func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return mapper, nil },
		Cache:          cacheOptions(o.Namespace, served),
		// A cached Secret read would list every Secret of the namespace, which
		// the operator may not (certSecretCaches).
		Client:                              client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		Metrics:                             mapimetrics.SecureServerOptions(m.MetricsBindAddress, m.MetricsCertDir, tlsOpts...),
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
	if m.MetricsBindAddress != "0" {
		runnables = append(runnables, collector.New(mgr.GetCache(), o.Namespace))
	}
	for _, r := range runnables {
		if err := mgr.Add(r); err != nil {
			return nil, err
		}
	}
	if err := errors.Join(mgr.AddHealthzCheck("ping", healthz.Ping), mgr.AddReadyzCheck("ping", healthz.Ping)); err != nil {
		return nil, err
	}
	var issuer CertIssuer
	if o.Certificates != CertificatesServiceCA {
		// Uncached reads: a stale one would re-issue certificates just written.
		cm, err := certs.NewManager(certs.Options{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Namespace: o.Namespace})
		if err != nil {
			return nil, err
		}
		issuer = cm
	}
	op := New(o, mgr.GetClient(), mgr.GetCache(), issuer, mgr.GetEventRecorder(config.OperatorLeaseName))
	if err := op.setupWithManager(mgr, crds, secrets, served); err != nil {
		return nil, fmt.Errorf("setting up the operator controller: %w", err)
	}
	return mgr, nil
}

// certSecretCaches watch each webhook certificate Secret on its own (a list
// by name is what the operator's RBAC allows: a field selector on
// metadata.name is authorized as that resourceName).
func certSecretCaches(restCfg *rest.Config, namespace string, opts cache.Options) ([]cache.Cache, error) {
	var out []cache.Cache
	for _, name := range certs.SecretNames() {
		o := opts
		o.DefaultNamespaces = map[string]cache.Config{namespace: {}}
		o.ByObject = map[client.Object]cache.ByObject{&corev1.Secret{}: {Field: fields.OneTermEqualSelector("metadata.name", name)}}
		c, err := cache.New(restCfg, o)
		if err != nil {
			return nil, fmt.Errorf("creating the cache of Secret %s: %w", name, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// WaitForAPIServer retries with backoff (capped at 30s) until the API server answers.
func WaitForAPIServer(ctx context.Context, disco discovery.DiscoveryInterface) error {
	logger := log.FromContext(ctx)
	backoff := wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: 30 * time.Second}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(context.Context) (bool, error) {
		v, err := disco.ServerVersion()
		if err != nil {
			logger.Info("waiting for the API server", "err", err)
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
