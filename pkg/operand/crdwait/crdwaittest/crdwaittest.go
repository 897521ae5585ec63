// Package crdwaittest starts an API server with only some of the project's
// CRDs and installs the others while a test runs.
package crdwaittest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/machine-api-operator/machine-api-operator/manifests"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// Env is an API server started with some of the project's CRD sets.
type Env struct{ *testenv.Env }

// Start starts an API server with the given CRD sets (none: a bare cluster)
// and stops it when the test ends.
func Start(t testing.TB, sets ...manifests.CRDSet) *Env {
	t.Helper()
	return &Env{testenv.Start(t, testenv.Options{Bare: true, ExtraCRDs: CRDs(t, sets...)})}
}

// CRDs returns the CRDs of the given sets.
func CRDs(t testing.TB, sets ...manifests.CRDSet) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, set := range sets {
		c, err := manifests.CRDs(set)
		if err != nil {
			t.Fatal(err)
		}
		crds = append(crds, c...)
	}
	return crds
}

// Install creates the CRDs of the given sets and waits until they are served.
func (e *Env) Install(t testing.TB, sets ...manifests.CRDSet) {
	t.Helper()
	crds := CRDs(t, sets...)
	for _, crd := range crds {
		if err := e.Client.Create(context.Background(), crd.DeepCopy()); err != nil {
			t.Fatalf("creating CRD %s: %v", crd.Name, err)
		}
	}
	if err := envtest.WaitForCRDs(e.Config, crds, envtest.CRDInstallOptions{MaxTime: 30 * time.Second, PollInterval: 100 * time.Millisecond}); err != nil {
		t.Fatal(fmt.Errorf("waiting for the CRDs to be served: %w", err))
	}
}

// StartBinaryWithoutCRDs runs a binary (setup builds its manager with health
// probes at healthAddr) on a bare API server, waits until /readyz fails the
// check named failing, installs the Machine API CRDs and waits until ready.
func StartBinaryWithoutCRDs(t *testing.T, ns, failing string, setup func(cfg *rest.Config, healthAddr string) (manager.Manager, error)) *Env {
	t.Helper()
	e := Start(t)
	if err := e.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	addr := FreeAddr(t)
	mgr, err := setup(e.Config, addr)
	if err != nil {
		t.Fatalf("setting the binary up without the Machine API CRDs: %v", err)
	}
	testenv.Run(t, mgr)
	poll.Eventually(t, 30*time.Second, "not ready while the CRDs are missing", ReadyzCondition(addr, false, failing))
	e.Install(t, manifests.MachineCRDs)
	poll.Eventually(t, 30*time.Second, "ready once the CRDs are served", ReadyzCondition(addr, true, ""))
	return e
}

// FreeAddr returns a loopback address with a port free right now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// ReadyzCondition holds when /readyz at addr answers 200, or (not
// wantReady) not 200 with "[-]<failing> failed" in the body.
func ReadyzCondition(addr string, wantReady bool, failing string) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz?verbose=true", nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		defer func() { _ = resp.Body.Close() }()
		raw, err := io.ReadAll(resp.Body)
		code, body := resp.StatusCode, string(raw)
		switch {
		case err != nil:
			return false, err
		case wantReady && code != http.StatusOK:
			return false, fmt.Errorf("/readyz: %d %s", code, body)
		case !wantReady && (code == http.StatusOK || !strings.Contains(body, "[-]"+failing+" failed")):
			return false, fmt.Errorf("/readyz: %d %s, want check %s failing", code, body, failing)
		}
		return true, nil
	}
}

// TestArgs are the flags a test gives a binary: namespace ns, no leader election, no metrics
// endpoint, health probes at healthAddr ("0": none).
func TestArgs(ns, healthAddr string, more ...string) []string {
	return append([]string{"--namespace=" + ns, "--leader-elect=false", "--metrics-bind-address=0",
		"--health-probe-bind-address=" + healthAddr}, more...)
}

// NewManager builds what a binary's main builds from its parsed options (parseErr: parsing's
// error): the manager, with the controllers add registers.
func NewManager(cfg *rest.Config, opts operand.Options, parseErr error, add func(manager.Manager) error) (manager.Manager, error) {
	if parseErr != nil {
		return nil, parseErr
	}
	mgr, err := opts.NewManager(cfg)
	if err != nil {
		return nil, err
	}
	return mgr, add(mgr)
}
