// Package testenv starts a real kube-apiserver and etcd (controller-runtime
// envtest, using the binaries `make tools` builds into bin/) with the project's
// CRDs installed. Every test that talks to the Kubernetes API uses it.
//
// A package typically starts one API server for all its tests:
//
//	var env *testenv.Env
//
//	func TestMain(m *testing.M) { testenv.Main(m, &env) }
//
// The binaries are required: when they are missing the tests fail with
// "run make tools"; nothing is skipped silently.
//
// Tests wait with package poll (a condition and a timeout, never a fixed
// sleep). A test that must show that a controller did nothing waits for the
// controller to have handled the change instead (WorkTracker, Quiescent,
// CaughtUp), then checks the outcome.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/machine-api-operator/machine-api-operator/manifests"
	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
)

// requiredBinaries are the files envtest needs in its assets directory.
var requiredBinaries = []string{"kube-apiserver", "etcd"}

// Options configure an Env.
type Options struct {
	// ExtraCRDs are installed in addition to the machine, config,
	// nodemaintenance and machinedeployment CRDs.
	ExtraCRDs []*apiextensionsv1.CustomResourceDefinition
	// APIServerArgs are extra kube-apiserver flags ("--name=value" form is not
	// used; give the name without dashes and its value).
	APIServerArgs map[string]string
	// LogEnv names an environment variable (FOO_TEST_LOG): when it is set,
	// the controllers' logs (controller-runtime's logger, verbosity 4) go to
	// stderr; otherwise they are discarded. Empty leaves the logger alone.
	LogEnv string
}

// Env is a running API server with the project's CRDs installed.
type Env struct {
	// Config is an admin rest.Config for the API server.
	Config *rest.Config
	// Client is a controller-runtime client (no cache) using Scheme.
	Client client.Client
	// Scheme has every API group the project uses.
	Scheme *runtime.Scheme

	env *envtest.Environment
}

// ErrMissingBinaries is returned when bin/ lacks the API server binaries.
var ErrMissingBinaries = errors.New("kube-apiserver and etcd not found: run make tools")

// BinDir returns the directory holding kube-apiserver and etcd:
// $KUBEBUILDER_ASSETS if set, else bin/ at the repository root.
func BinDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin")
	}
	for _, name := range requiredBinaries {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return "", fmt.Errorf("%w (looked for %s in %s)", ErrMissingBinaries, name, dir)
		}
	}
	return dir, nil
}

// RepoRoot finds the repository root by walking up from the working directory
// to the directory holding go.mod and the Makefile.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository root: %w", err)
	}
	for {
		if fileExists(filepath.Join(dir, "go.mod")) && fileExists(filepath.Join(dir, "Makefile")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("finding the repository root: no directory with go.mod and Makefile above the working directory")
		}
		dir = parent
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// New starts an API server and installs the CRDs. Call Stop when done.
func New(opts Options) (*Env, error) {
	binDir, err := BinDir()
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, set := range []manifests.CRDSet{manifests.MachineCRDs, manifests.ConfigCRDs, manifests.NodeMaintenanceCRDs, manifests.MachineDeploymentCRDs} {
		c, err := manifests.CRDs(set)
		if err != nil {
			return nil, err
		}
		crds = append(crds, c...)
	}
	crds = append(crds, opts.ExtraCRDs...)

	s := scheme.New()
	env := &envtest.Environment{
		BinaryAssetsDirectory:    binDir,
		CRDs:                     crds,
		CRDInstallOptions:        envtest.CRDInstallOptions{Scheme: s},
		ErrorIfCRDPathMissing:    true,
		Scheme:                   s,
		ControlPlaneStartTimeout: 60 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	if len(opts.APIServerArgs) > 0 {
		args := env.ControlPlane.GetAPIServer().Configure()
		for k, v := range opts.APIServerArgs {
			args.Set(k, v)
		}
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest API server from %s: %w", binDir, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("creating client: %w", err)
	}
	return &Env{Config: cfg, Client: c, Scheme: s, env: env}, nil
}

// Stop shuts the API server and etcd down.
func (e *Env) Stop() error {
	if e == nil || e.env == nil {
		return nil
	}
	return e.env.Stop()
}

// Start starts an Env for a single test and stops it when the test ends.
func Start(t testing.TB, opts Options) *Env {
	t.Helper()
	e, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})
	return e
}

// Main is a TestMain body: it starts one Env for the package's tests, stores
// it in *env, runs the tests and stops the Env. A start failure fails the
// package with the reason (for example "run make tools").
func Main(m *testing.M, env **Env) {
	os.Exit(runMain(m, env, Options{}))
}

// MainWith is Main with options (extra CRDs, API server flags).
func MainWith(m *testing.M, env **Env, opts Options) {
	os.Exit(runMain(m, env, opts))
}

func runMain(m *testing.M, env **Env, opts Options) int {
	if opts.LogEnv != "" {
		out := io.Discard
		if os.Getenv(opts.LogEnv) != "" {
			out = os.Stderr
		}
		ctrl.SetLogger(textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(out), textlogger.Verbosity(4))))
	}
	e, err := New(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		return 1
	}
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: stopping: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Runnable is what Run runs: a controller-runtime manager or cache, anything
// that runs until its context ends.
type Runnable interface {
	Start(ctx context.Context) error
}

// Run starts r in the background and returns stop, which ends r and waits
// until it has returned; an error r returns fails the test. stop also runs
// when the test ends; calling it again does nothing.
func Run(t testing.TB, r Runnable) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := r.Start(ctx); err != nil {
			t.Errorf("%T: %v", r, err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// NewManager returns a controller-runtime manager for cfg (the Env's admin
// config when nil) with the Env's scheme, the cache options c, and no
// metrics or health probe endpoints. Its client and cache record what its
// event handlers were handed, for CaughtUp. Start it with Run.
func (e *Env) NewManager(t testing.TB, cfg *rest.Config, c cache.Options) manager.Manager {
	t.Helper()
	if cfg == nil {
		cfg = e.Config
	}
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  c,
		NewCache:               NewCache,
	})
	if err != nil {
		t.Fatalf("creating a manager: %v", err)
	}
	return &trackedManager{Manager: mgr, client: trackedClient{Client: mgr.GetClient(), cache: mgr.GetCache().(*deliveryCache)}}
}
