// Package operand holds what every operand binary shares: the common flags
// and the controller-runtime manager they configure.
package operand

import (
	"cmp"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/machine-api-operator/machine-api-operator/pkg/kubeconfig"
	"github.com/machine-api-operator/machine-api-operator/pkg/leaderelection"
	mapimetrics "github.com/machine-api-operator/machine-api-operator/pkg/metrics"
	"github.com/machine-api-operator/machine-api-operator/pkg/names"
	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
	"github.com/machine-api-operator/machine-api-operator/pkg/tlsflags"
	"github.com/machine-api-operator/machine-api-operator/pkg/version"
)

// Options are the flags every operand binary has.
type Options struct {
	Kubeconfig       string
	Namespace        string
	LeaderElect      bool
	LeaderElectionID string
	// LeaderElectionNamespace holds the Lease; "" is Namespace.
	LeaderElectionNamespace string
	LeaderElection          leaderelection.Timing
	MetricsBindAddress      string
	MetricsCertDir          string // "" serves a self-signed certificate
	HealthProbeBindAddress  string
	PprofBindAddress        string
	MaxConcurrentReconciles int
	KubeAPIQPS              float32
	KubeAPIBurst            int
	TLS                     tlsflags.Options // of the metrics and webhook servers
	// FeatureGates are OpenShift's, as its operator passes them; unknown ones
	// are accepted and logged.
	FeatureGates map[string]bool
	// Webhook adds the webhook server flags; nil for binaries without one.
	Webhook *WebhookOptions
}

// WebhookOptions configure a binary's admission webhook server (OpenShift's
// flag names).
type WebhookOptions struct {
	Enabled bool
	Host    string // "" binds every address
	Port    int
	CertDir string // tls.crt and tls.key
	// ClientCAFile, when set, serves only clients whose certificate it signed
	// (the API server's, see docs/openshift.md); a missing file accepts any client.
	ClientCAFile string
}

// Defaults returns the options of a binary; leaderElectionID names its Lease.
func Defaults(leaderElectionID, metricsAddr, healthAddr string) Options {
	return Options{
		Namespace:        names.DefaultNamespace,
		LeaderElect:      true,
		LeaderElectionID: leaderElectionID,
		// OpenShift's lease duration and renew deadline. See docs/reliability.md.
		LeaderElection: leaderelection.Timing{
			LeaseDuration: 120 * time.Second,
			RenewDeadline: 90 * time.Second,
			RetryPeriod:   leaderelection.DefaultRetryPeriod,
			RenewInterval: leaderelection.DefaultRenewInterval,
		},
		MetricsBindAddress:      metricsAddr,
		HealthProbeBindAddress:  healthAddr,
		MaxConcurrentReconciles: 1,
		// Sized by the scale benchmark (docs/performance.md).
		KubeAPIQPS:   200,
		KubeAPIBurst: 400,
		TLS:          tlsflags.Options{MinVersion: tlsflags.DefaultMinVersion},
	}
}

// AddFlags registers the shared flags and the klog flags (-v, --logtostderr, ...) on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig. Default: in-cluster config, then $KUBECONFIG.")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "Namespace whose Machine API objects this controller manages.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader (Lease "+o.LeaderElectionID+" in --namespace) so only one replica acts.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-elect-resource-namespace", o.LeaderElectionNamespace,
		"Namespace of the leader-election Lease; empty is --namespace.")
	o.LeaderElection.AddFlags(fs)
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress,
		"Address of the Prometheus metrics endpoint (HTTPS; a scraper needs a token allowed to get the non-resource URL /metrics); 0 disables it.")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", o.MetricsCertDir,
		"Directory with the metrics serving certificate (tls.crt, tls.key), re-read when it changes; empty, or while the files are missing, a self-signed certificate is served.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, "Address of /healthz and /readyz; 0 disables them.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-addr", o.HealthProbeBindAddress, "Same as --health-probe-bind-address (OpenShift's name).")
	o.TLS.AddFlags(fs)
	fs.Var(cliflag.NewMapStringBool(&o.FeatureGates), "feature-gates",
		"OpenShift feature gates, A=true,B=false; MachineAPIMigration=true makes the machine and machineset controllers leave resources another API is authoritative for alone; the others are accepted and logged.")
	fs.StringVar(&o.PprofBindAddress, "pprof-bind-address", o.PprofBindAddress, "Address of the Go pprof endpoints (/debug/pprof/); empty or 0 disables them.")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", o.MaxConcurrentReconciles, "How many objects are reconciled in parallel.")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Queries per second to the API server.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Burst of queries to the API server.")
	if o.Webhook != nil {
		fs.BoolVar(&o.Webhook.Enabled, "webhook-enabled", o.Webhook.Enabled, "Serve the admission webhooks.")
		fs.StringVar(&o.Webhook.Host, "webhook-host", o.Webhook.Host, "Address the webhook server binds; empty binds every address.")
		fs.IntVar(&o.Webhook.Port, "webhook-port", o.Webhook.Port, "Port of the webhook server.")
		fs.StringVar(&o.Webhook.CertDir, "webhook-cert-dir", o.Webhook.CertDir,
			"Directory with the serving certificate (tls.crt, tls.key); a rotated certificate is picked up without a restart.")
		fs.StringVar(&o.Webhook.ClientCAFile, "webhook-client-ca-file", o.Webhook.ClientCAFile,
			"PEM CA bundle: serve only webhook clients (the API server) with a client certificate it signed; read again when it changes; a missing file accepts any client.")
	}
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
}

// Validate checks the flag values.
func (o *Options) Validate() error {
	var errs []error
	if o.Namespace == "" {
		errs = append(errs, errors.New("--namespace must not be empty"))
	}
	if o.LeaderElect {
		if err := o.LeaderElection.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := o.TLS.Apply(); err != nil {
		errs = append(errs, err)
	}
	if o.MaxConcurrentReconciles < 1 {
		errs = append(errs, fmt.Errorf("--max-concurrent-reconciles must be at least 1, got %d", o.MaxConcurrentReconciles))
	}
	if o.KubeAPIQPS <= 0 || o.KubeAPIBurst <= 0 {
		errs = append(errs, errors.New("--kube-api-qps and --kube-api-burst must be positive"))
	}
	if w := o.Webhook; w != nil && w.Enabled {
		if w.Port < 1 || w.Port > 65535 {
			errs = append(errs, fmt.Errorf("--webhook-port must be a TCP port (1-65535), got %d", w.Port))
		}
		if w.CertDir == "" {
			errs = append(errs, errors.New("--webhook-cert-dir must not be empty while --webhook-enabled"))
		}
	}
	return errors.Join(errs...)
}

// RESTConfig loads --kubeconfig, else in-cluster, else $KUBECONFIG, with the
// QPS and burst flags and a user agent.
func (o *Options) RESTConfig(userAgent string) (*rest.Config, error) {
	cfg, err := kubeconfig.Load(o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = o.KubeAPIQPS, o.KubeAPIBurst
	cfg.UserAgent = userAgent
	return cfg, nil
}

// NewManager builds the binary's manager: namespaced cache, leader election,
// secure metrics, health probes, the webhook server if enabled.
func (o *Options) NewManager(cfg *rest.Config) (manager.Manager, error) {
	ctrl.SetLogger(klog.NewKlogr())
	applyTLS, err := o.TLS.Apply()
	if err != nil {
		return nil, err
	}
	if len(o.FeatureGates) > 0 {
		klog.InfoS("feature gates", "featureGates", o.FeatureGates)
	}
	leaseNamespace := cmp.Or(o.LeaderElectionNamespace, o.Namespace)
	var webhookServer webhook.Server
	if w := o.Webhook; w != nil && w.Enabled {
		// Its certwatcher reloads a rotated certificate.
		tlsOpts := []func(*tls.Config){applyTLS}
		if w.ClientCAFile != "" {
			tlsOpts = append(tlsOpts, RequestClientCert)
		}
		webhookServer = webhook.NewServer(webhook.Options{
			Host: w.Host, Port: w.Port, CertDir: w.CertDir, CertName: "tls.crt", KeyName: "tls.key",
			TLSOpts: tlsOpts,
		})
		if w.ClientCAFile != "" {
			webhookServer = VerifyingServer{Server: webhookServer, CAs: NewClientCAs(w.ClientCAFile)}
		}
	}
	var lock *leaderelection.Lock
	var lockInterface resourcelock.Interface // nil stays an untyped nil
	if o.LeaderElect {
		if lock, err = leaderelection.NewLock(cfg, leaseNamespace, o.LeaderElectionID, o.LeaderElection); err != nil {
			return nil, err
		}
		lockInterface = lock
	}
	mgr, err := ctrl.NewManager(cfg, manager.Options{
		WebhookServer:                       webhookServer,
		Scheme:                              scheme.New(),
		Cache:                               cache.Options{DefaultNamespaces: map[string]cache.Config{o.Namespace: {}}},
		Metrics:                             mapimetrics.SecureServerOptions(o.MetricsBindAddress, o.MetricsCertDir, applyTLS),
		HealthProbeBindAddress:              o.HealthProbeBindAddress,
		PprofBindAddress:                    o.PprofBindAddress,
		LeaderElection:                      o.LeaderElect,
		LeaderElectionID:                    o.LeaderElectionID,
		LeaderElectionNamespace:             leaseNamespace,
		LeaderElectionResourceLockInterface: lockInterface,
		LeaderElectionReleaseOnCancel:       true,
		LeaseDuration:                       &o.LeaderElection.LeaseDuration,
		RenewDeadline:                       &o.LeaderElection.RenewDeadline,
		RetryPeriod:                         &o.LeaderElection.RetryPeriod,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	errs := []error{mgr.AddHealthzCheck("ping", healthz.Ping), mgr.AddReadyzCheck("ping", healthz.Ping)}
	if lock != nil {
		errs = append(errs, mgr.Add(lock))
	}
	if webhookServer != nil { // ready only once the webhook server serves (GetWebhookServer adds it)
		errs = append(errs, mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return mgr, nil
}

// FeatureGate reports whether --feature-gates turned gate name on.
func (o *Options) FeatureGate(name configv1.FeatureGateName) bool {
	return o.FeatureGates[string(name)]
}

// ControllerOptions are the controller settings the flags set.
func (o *Options) ControllerOptions() controller.Options {
	return controller.Options{MaxConcurrentReconciles: o.MaxConcurrentReconciles}
}

// Parse parses binary name's command line (o's flags, those addFlags
// registers, no positional arguments), then validates o and runs validate.
func (o *Options) Parse(name string, args []string, addFlags func(*pflag.FlagSet), validate ...func() error) error {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	o.AddFlags(fs)
	if addFlags != nil {
		addFlags(fs)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: %s takes only flags", fs.Args(), name)
	}
	errs := []error{o.Validate()}
	for _, v := range validate {
		errs = append(errs, v())
	}
	return errors.Join(errs...)
}

// ExitOnParseError exits 0 for --help, 2 for a refused command line.
func ExitOnParseError(name string, err error) {
	if err == nil {
		return
	}
	if errors.Is(err, pflag.ErrHelp) {
		os.Exit(0)
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	os.Exit(2)
}

// Run builds binary's manager, lets add register its controllers and runs it
// until a signal; an error is printed and exits 1.
func (o Options) Run(binary string, add func(manager.Manager) error) {
	err := func() error {
		cfg, err := o.RESTConfig(binary + "/" + version.String())
		if err != nil {
			return err
		}
		mgr, err := o.NewManager(cfg)
		if err != nil {
			return err
		}
		if err := add(mgr); err != nil {
			return err
		}
		return mgr.Start(ctrl.SetupSignalHandler())
	}()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", binary, err)
		os.Exit(1)
	}
}
