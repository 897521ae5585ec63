// Package operand holds what every operand binary (machine-controller-manager,
// nodelink-controller, machineset-controller, machine-healthcheck) shares:
// the common flags and the controller-runtime manager they configure. A
// binary's main parses the flags, builds the manager, adds its controllers
// and starts it.
package operand

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
)

// Options are the flags every operand binary has.
type Options struct {
	Kubeconfig              string
	Namespace               string
	LeaderElect             bool
	LeaderElectionID        string
	LeaseDuration           time.Duration
	RenewDeadline           time.Duration
	RetryPeriod             time.Duration
	MetricsBindAddress      string
	HealthProbeBindAddress  string
	MaxConcurrentReconciles int
	KubeAPIQPS              float32
	KubeAPIBurst            int
}

// Defaults returns the options of a binary; leaderElectionID names its Lease
// and the ports are the binary's defaults (the operator renders them
// explicitly for each container).
func Defaults(leaderElectionID, metricsAddr, healthAddr string) Options {
	return Options{
		Namespace:               config.DefaultNamespace,
		LeaderElect:             true,
		LeaderElectionID:        leaderElectionID,
		LeaseDuration:           120 * time.Second,
		RenewDeadline:           90 * time.Second,
		RetryPeriod:             20 * time.Second,
		MetricsBindAddress:      metricsAddr,
		HealthProbeBindAddress:  healthAddr,
		MaxConcurrentReconciles: 1,
		KubeAPIQPS:              20,
		KubeAPIBurst:            30,
	}
}

// AddFlags registers the shared flags and the klog flags (-v, --logtostderr, ...) on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig. Default: in-cluster config, then $KUBECONFIG.")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "Namespace whose Machine API objects this controller manages.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader (Lease "+o.LeaderElectionID+" in --namespace) so only one replica acts.")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "How long a non-leader waits before trying to take over the lease.")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "How long the leader retries renewing before giving up leadership.")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "How often leader election is attempted.")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "Address of the Prometheus metrics endpoint; 0 disables it.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, "Address of /healthz and /readyz; 0 disables them.")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", o.MaxConcurrentReconciles, "How many objects are reconciled in parallel.")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Queries per second to the API server.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Burst of queries to the API server.")
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
	if o.MaxConcurrentReconciles < 1 {
		errs = append(errs, fmt.Errorf("--max-concurrent-reconciles must be at least 1, got %d", o.MaxConcurrentReconciles))
	}
	if o.KubeAPIQPS <= 0 || o.KubeAPIBurst <= 0 {
		errs = append(errs, errors.New("--kube-api-qps and --kube-api-burst must be positive"))
	}
	return errors.Join(errs...)
}

// RESTConfig loads the client configuration: --kubeconfig, else in-cluster,
// else $KUBECONFIG; with the QPS and burst flags and a user agent.
func (o *Options) RESTConfig(userAgent string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	switch {
	case o.Kubeconfig != "":
		cfg, err = clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	default:
		cfg, err = rest.InClusterConfig()
		if err != nil {
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("loading the client configuration (set --kubeconfig or $KUBECONFIG): %w", err)
	}
	cfg.QPS, cfg.Burst = o.KubeAPIQPS, o.KubeAPIBurst
	cfg.UserAgent = userAgent
	return cfg, nil
}

// NewManager builds the binary's manager: namespaced cache for the Machine
// API objects (cluster-scoped objects such as Nodes are cached cluster-wide),
// leader election, metrics, health probes.
func (o *Options) NewManager(cfg *rest.Config) (manager.Manager, error) {
	ctrl.SetLogger(klog.NewKlogr())
	mgr, err := ctrl.NewManager(cfg, manager.Options{
		Scheme:                        scheme.New(),
		Cache:                         cache.Options{DefaultNamespaces: map[string]cache.Config{o.Namespace: {}}},
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsBindAddress},
		HealthProbeBindAddress:        o.HealthProbeBindAddress,
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionNamespace:       o.Namespace,
		LeaderElectionResourceLock:    "leases",
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &o.LeaseDuration,
		RenewDeadline:                 &o.RenewDeadline,
		RetryPeriod:                   &o.RetryPeriod,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}

// ControllerOptions are the controller settings the flags set.
func (o *Options) ControllerOptions() controller.Options {
	return controller.Options{MaxConcurrentReconciles: o.MaxConcurrentReconciles}
}
