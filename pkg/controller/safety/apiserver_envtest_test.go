package safety

import (
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// relay forwards TCP to the API server until cut: then its open connections
// are closed and new ones are accepted but never answered, as an API server
// behind a broken network looks to a client.
type relay struct {
	ln      net.Listener
	backend string
	mu      sync.Mutex
	cut     bool
	conns   []net.Conn
}

func startRelay(t *testing.T, backend string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln, backend: backend}
	t.Cleanup(func() { _ = ln.Close(); r.setCut(true) })
	go r.serve()
	return r
}

func (r *relay) serve() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		r.conns = append(r.conns, c)
		cut := r.cut
		r.mu.Unlock()
		if cut {
			continue // held: accepted, never answered (closed by the next setCut or cleanup)
		}
		go func() {
			b, err := net.Dial("tcp", r.backend)
			if err != nil {
				_ = c.Close()
				return
			}
			r.mu.Lock()
			r.conns = append(r.conns, b)
			r.mu.Unlock()
			go func() { _, _ = io.Copy(b, c); _ = b.Close() }()
			_, _ = io.Copy(c, b)
			_ = c.Close()
		}()
	}
}

// setCut cuts (true) or restores (false) the relay; either way the
// connections open so far are closed.
func (r *relay) setCut(cut bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cut = cut
	for _, c := range r.conns {
		_ = c.Close()
	}
	r.conns = nil
}

// TestAPIServerGateWithARealAPIServer: through a relay to envtest's API
// server, the gate stays open while the probe gets NotFound, freezes once
// the API server has not answered for longer than the timeout, and thaws
// when it answers again. Breaks if: probe treated a NotFound as a failure
// (frozen from the start), or had no deadline (a held request would never
// count as a failure).
func TestAPIServerGateWithARealAPIServer(t *testing.T) {
	u, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	r := startRelay(t, u.Host)
	cfg := rest.CopyConfig(env.Config)
	cfg.Host = "https://" + r.ln.Addr().String()
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	g := NewAPIServerGate(c, ns, MachineControllerOptions{APIServerCheckPeriod: 100 * time.Millisecond, APIServerCheckTimeout: 600 * time.Millisecond})
	testenv.Run(t, g)

	start := time.Now()
	poll.Eventually(t, waitTimeout, "three probes", poll.Check(func() error {
		if time.Unix(0, g.lastProbe.Load()).Before(start.Add(250 * time.Millisecond)) {
			return errors.New("not yet")
		}
		return nil
	}))
	if g.Frozen() {
		t.Fatal("frozen while the API server answers")
	}

	r.setCut(true)
	cutAt := time.Now()
	poll.Eventually(t, waitTimeout, "frozen", poll.Check(func() error {
		if !g.Frozen() {
			return errors.New("not frozen")
		}
		return nil
	}))
	if since := time.Since(cutAt); since < 600*time.Millisecond {
		t.Errorf("frozen %s after the cut, before the timeout", since)
	}

	r.setCut(false)
	poll.Eventually(t, waitTimeout, "thawed", poll.Check(func() error {
		if g.Frozen() {
			return errors.New("still frozen")
		}
		return nil
	}))
}
