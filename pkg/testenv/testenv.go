// Package testenv starts a real kube-apiserver and etcd (envtest, from bin/)
// with the project's CRDs, typically once per package:
//
//	func TestMain(m *testing.M) { testenv.Main(m, &env) }
//
// Without the binaries tests fail ("run make tools"), never skip. To show a
// controller did nothing, wait until it handled the change (WorkTracker).
package testenv

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// Options configure an Env.
type Options struct {
	// ExtraCRDs are installed besides the project's.
	ExtraCRDs []*apiextensionsv1.CustomResourceDefinition
	// Bare installs only ExtraCRDs, none of the project's.
	Bare bool
	// APIServerArgs are extra kube-apiserver flags: name without dashes → value.
	APIServerArgs map[string]string
	// LogEnv names an environment variable that, when set, sends the
	// controllers' logs (V(4)) to stderr; else they are discarded.
	LogEnv string
	// Before (MainWith only) runs once the Env is up, before the tests: what a whole package
	// shares, e.g. one manager running the controller; stop is called after the tests.
	Before func(e *Env) (stop func(), err error)
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

// BinDir returns $KUBEBUILDER_ASSETS, else the repository's bin/, checking it has the binaries.
func BinDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin")
	}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return "", fmt.Errorf("%w (looked for %s in %s)", ErrMissingBinaries, name, dir)
		}
	}
	return dir, nil
}

// RepoRoot walks up from the working directory to the one with go.mod and the Makefile.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository root: %w", err)
	}
	for {
		_, errMod := os.Stat(filepath.Join(dir, "go.mod"))
		if _, errMake := os.Stat(filepath.Join(dir, "Makefile")); errMod == nil && errMake == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("finding the repository root: no directory with go.mod and Makefile above the working directory")
		}
		dir = parent
	}
}

// ModuleDir is the module cache directory of module at the version go.mod pins (tests read
// manifests another project ships, e.g. openshift/api's CRDs, without copying them here).
func ModuleDir(module string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if dir := strings.TrimSpace(string(out)); err == nil && dir != "" {
		return dir, nil
	}
	if err != nil {
		return "", fmt.Errorf("locating %s in the module cache: %w %s", module, err, out)
	}
	return "", fmt.Errorf("locating %s in the module cache: go list printed no directory", module)
}

// New starts an API server and installs the CRDs. Call Stop when done.
func New(opts Options) (*Env, error) {
	binDir, err := BinDir()
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	if !opts.Bare {
		for _, set := range []manifests.CRDSet{manifests.MachineCRDs, manifests.ConfigCRDs, manifests.NodeMaintenanceCRDs, manifests.MachineDeploymentCRDs} {
			c, err := manifests.CRDs(set)
			if err != nil {
				return nil, err
			}
			crds = append(crds, c...)
		}
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

// Main is a TestMain body: it starts one Env into *env, runs the tests and stops it.
func Main(m *testing.M, env **Env) { MainWith(m, env, Options{}) }

// MainWith is Main with options (extra CRDs, API server flags).
func MainWith(m *testing.M, env **Env, opts Options) {
	if opts.LogEnv != "" {
		out := io.Discard
		if os.Getenv(opts.LogEnv) != "" {
			out = os.Stderr
		}
		ctrl.SetLogger(textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(out), textlogger.Verbosity(4))))
	}
	// A fuzz worker process runs only fuzz inputs: an API server each would be waste, and
	// under load its slow stop kept the coordinator waiting past -fuzztime.
	flag.Parse()
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		os.Exit(m.Run())
	}
	e, err := New(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		os.Exit(1)
	}
	*env = e
	code := 1
	var stop func()
	if opts.Before != nil {
		stop, err = opts.Before(e)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: before the tests: %v\n", err)
	} else {
		code = m.Run()
	}
	if stop != nil {
		stop()
	}
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: stopping: %v\n", err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// Runnable is what Run runs: a manager or cache, until its context ends.
type Runnable interface {
	Start(ctx context.Context) error
}

// Run starts r in the background and returns stop, which ends r and waits for
// it (also at the test's end; idempotent); an error r returns fails the test.
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
	stop = sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	return stop
}

// NewManager returns a manager for cfg (default: the Env's) with the Env's scheme, cache options c and no
// endpoints; its client works with CaughtUp. Start it with Run.
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
		NewCache:               newCache,
		NewClient: func(cfg *rest.Config, o client.Options) (client.Client, error) {
			c, err := client.New(cfg, o) // reads from the manager's cache (o.Cache.Reader)
			return trackedClient{Client: c, cache: o.Cache.Reader.(*deliveryCache)}, err
		},
	})
	if err != nil {
		t.Fatalf("creating a manager: %v", err)
	}
	return mgr
}
