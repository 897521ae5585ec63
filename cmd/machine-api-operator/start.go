package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/kubeconfig"
	"github.com/machine-api-operator/machine-api-operator/pkg/leaderelection"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
	"github.com/machine-api-operator/machine-api-operator/pkg/tlsflags"
	"github.com/machine-api-operator/machine-api-operator/pkg/version"
)

// startOptions are the flags of `start`.
type startOptions struct {
	kubeconfig     string
	imagesJSON     string
	namespace      string
	leaderElect    bool
	leaderElection leaderelection.Timing
	// tls is the metrics server's TLS, fixed when a TLS flag was given
	// (tlsFromFlags), else following the cluster's TLS profile.
	tls                   tlsflags.Options
	tlsFromFlags          bool
	metricsAddr           string
	metricsCertDir        string
	healthAddr            string
	operandStableDuration time.Duration
	degradedAfter         time.Duration
	upgradeDegradedAfter  time.Duration
	webhookCertificates   string
}

// webhookCertificates are the values of --webhook-certificates.
var webhookCertificates = map[string]operator.WebhookCertificates{
	"auto":       operator.CertificatesAuto,
	"service-ca": operator.CertificatesServiceCA,
	"operator":   operator.CertificatesOperator,
}

// starter runs the operator once the command line is accepted (tests stub it).
type starter func(ctx context.Context, o *startOptions, stderr io.Writer) error

func newStartCommand(stderr io.Writer, start starter) *cobra.Command {
	o := &startOptions{}
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Run the operator: render and sync the Machine API and report the ClusterOperator",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.imagesJSON == "" {
				return usageError{errors.New("--images-json is required: the path of images.json (the machine-api-operator-images ConfigMap)")}
			}
			if o.leaderElect {
				if err := o.leaderElection.Validate(); err != nil {
					return usageError{err}
				}
			}
			if o.operandStableDuration < 0 || o.degradedAfter < 0 || o.upgradeDegradedAfter < 0 {
				return usageError{errors.New("--operand-stable-duration, --degraded-after and --upgrade-degraded-after must not be negative")}
			}
			if _, ok := webhookCertificates[o.webhookCertificates]; !ok {
				return usageError{fmt.Errorf("--webhook-certificates must be one of auto, service-ca, operator; got %q", o.webhookCertificates)}
			}
			o.tlsFromFlags = cmd.Flags().Changed(tlsflags.MinVersionFlag) || cmd.Flags().Changed(tlsflags.CipherSuitesFlag)
			if _, err := o.tls.Apply(); err != nil {
				return usageError{err}
			}
			return start(cmd.Context(), o, stderr)
		},
	}
	ns := cmp.Or(os.Getenv("COMPONENT_NAMESPACE"), config.DefaultNamespace)
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig. Default: in-cluster config, then $KUBECONFIG.")
	f.StringVar(&o.imagesJSON, "images-json", "", "Path to images.json (required).")
	f.StringVar(&o.namespace, "namespace", ns, "Namespace of the operands (default: $COMPONENT_NAMESPACE, else openshift-machine-api).")
	f.BoolVar(&o.leaderElect, "leader-elect", true, "Elect a leader with the Lease "+config.OperatorLeaseName+" so only one replica syncs.")
	// OpenShift's lease duration and renew deadline. See docs/reliability.md.
	o.leaderElection = leaderelection.Timing{
		LeaseDuration: 137 * time.Second,
		RenewDeadline: 107 * time.Second,
		RetryPeriod:   leaderelection.DefaultRetryPeriod,
		RenewInterval: leaderelection.DefaultRenewInterval,
	}
	o.leaderElection.AddFlags(f)
	o.tls = tlsflags.Options{MinVersion: tlsflags.DefaultMinVersion}
	o.tls.AddFlags(f)
	// :$METRICS_PORT is set by OpenShift's Deployment; 8443 is OpenShift's port.
	f.StringVar(&o.metricsAddr, "metrics-bind-address", ":"+cmp.Or(os.Getenv("METRICS_PORT"), "8443"),
		"Address of the Prometheus metrics endpoint (HTTPS; a scraper needs a token allowed to get the non-resource URL /metrics); 0 disables it. Default: :$METRICS_PORT, else :8443.")
	f.StringVar(&o.metricsCertDir, "metrics-cert-dir", "",
		"Directory with the metrics serving certificate (tls.crt, tls.key), re-read when it changes; empty, or while the files are missing, a self-signed certificate is served.")
	f.StringVar(&o.healthAddr, "health-probe-bind-address", ":9445", "Address of /healthz and /readyz; 0 disables them.")
	f.DurationVar(&o.operandStableDuration, "operand-stable-duration", 3*time.Minute, "How long the operand Deployment must stay available before Available=True.")
	f.DurationVar(&o.degradedAfter, "degraded-after", 2*time.Minute, "How long a failure or an operand outage must last before Degraded=True.")
	f.DurationVar(&o.upgradeDegradedAfter, "upgrade-degraded-after", 20*time.Minute,
		"While versions differ (install, upgrade), how long Progressing must have been True before a failure or an operand outage sets Degraded=True (OpenShift's 20m); 0 disables the suppression.")
	f.StringVar(&o.webhookCertificates, "webhook-certificates", "auto",
		"Who issues webhook serving certificates: service-ca (OpenShift), operator (self-managed CA), or auto (service-ca while the cluster serves servicecas.operator.openshift.io, decided at every sync).")
	return cmd
}

func runStart(ctx context.Context, o *startOptions, stderr io.Writer) error {
	logger := klog.NewKlogr()
	ctrl.SetLogger(logger)
	ctx = klog.NewContext(ctx, logger)

	release := os.Getenv("RELEASE_VERSION")
	logger.Info("starting machine-api-operator", "version", version.String(), "releaseVersion", release, "namespace", o.namespace)
	if release == "" {
		logger.Info("WARNING: RELEASE_VERSION is not set; the ClusterOperator will report no version and the cluster version operator cannot tell when this release is rolled out")
	}

	restCfg, err := kubeconfig.Load(o.kubeconfig)
	if err != nil {
		return err
	}
	restCfg.UserAgent = "machine-api-operator/" + version.String()

	logger.Info("webhook certificates", "issuer", o.webhookCertificates)

	metricsTLS, liveTLS, err := resolveMetricsTLS(ctx, restCfg, o)
	if err != nil {
		return err
	}

	mgr, err := operator.NewManager(ctx, restCfg, operator.Options{
		Namespace:            o.namespace,
		ImagesJSONPath:       o.imagesJSON,
		ReleaseVersion:       release,
		Certificates:         webhookCertificates[o.webhookCertificates],
		StableDuration:       o.operandStableDuration,
		DegradedAfter:        o.degradedAfter,
		UpgradeDegradedAfter: o.upgradeDegradedAfter,
		MetricsTLS:           liveTLS,
	}, operator.ManagerOptions{
		Scheme:                 scheme.New(),
		MetricsBindAddress:     o.metricsAddr,
		MetricsCertDir:         o.metricsCertDir,
		HealthProbeBindAddress: o.healthAddr,
		LeaderElection:         o.leaderElect,
		LeaderElectionTiming:   o.leaderElection,
		MetricsTLS:             metricsTLS,
	})
	if err != nil {
		return err
	}
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the operator: %w", err)
	}
	return nil
}

// resolveMetricsTLS returns the metrics server's TLS: the flags if given (live nil), else the cluster's profile
// as live settings (Intermediate when it cannot be read: the operator must start regardless).
func resolveMetricsTLS(ctx context.Context, restCfg *rest.Config, o *startOptions) (configure func(*tls.Config), live *tlsflags.Live, err error) {
	if o.tlsFromFlags {
		configure, err = o.tls.Apply()
		return configure, nil, err
	}
	var apiServer *configv1.APIServer
	c, err := client.New(restCfg, client.Options{Scheme: scheme.New()})
	if err == nil {
		got := &configv1.APIServer{}
		err = c.Get(ctx, client.ObjectKey{Name: config.ClusterConfigName}, got)
		if err == nil {
			apiServer = got
		}
	}
	if err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
		klog.FromContext(ctx).Info("reading the cluster's TLS profile failed; the metrics server uses the Intermediate profile until the operator reads it", "err", err)
	}
	p := config.ResolveTLSProfile(apiServer)
	if live, err = tlsflags.NewLive(p.Options()); err != nil {
		return nil, nil, err
	}
	return live.Configure, live, nil
}
