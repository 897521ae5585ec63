package operator

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/rest"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/render"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/status"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// TestLeaderElection runs two operators; only the leader writes anything but
// its Lease.
func TestLeaderElection(t *testing.T) {
	ns := newNamespace(t)
	setInfrastructure(t, configv1.ExternalPlatformType, "kubemark")
	images := writeImages(t, testImages)
	a := startOperator(t, images, harnessOptions{ns: ns, leaderElection: true})
	b := startOperator(t, images, harnessOptions{ns: ns, leaderElection: true})
	waitDeployment(t, ns)
	setDeploymentAvailable(t, ns, true)
	waitCondition(t, configv1.OperatorAvailable, configv1.ConditionTrue, status.ReasonAsExpected, "")

	nonLease := func(r *running) []string {
		var out []string
		for _, w := range r.counter.WriteRequests() {
			if !strings.Contains(w, "/leases") && !strings.Contains(w, "/events") {
				out = append(out, w)
			}
		}
		return out
	}
	wa, wb := nonLease(a), nonLease(b)
	t.Logf("operator A writes: %d, operator B writes: %d", len(wa), len(wb))
	if (len(wa) == 0) == (len(wb) == 0) {
		t.Fatalf("want exactly one writer; A wrote %v, B wrote %v", wa, wb)
	}

	// The leader goes away; the other takes over and keeps the Machine API
	// in sync (a deleted Deployment comes back).
	leader, follower := a, b
	if len(wa) == 0 {
		leader, follower = b, a
	}
	leader.stop()
	follower.counter.Reset()
	if err := env.Client.Delete(context.Background(), mustDeployment(t, ns)); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 30*time.Second, "follower recreates the deployment", func(ctx context.Context) (bool, error) {
		d, err := getDeployment(ctx, ns)
		return d != nil && len(nonLease(follower)) > 0, err
	})
}

func mustDeployment(t *testing.T, ns string) *appsv1.Deployment {
	t.Helper()
	d, err := getDeployment(context.Background(), ns)
	if err != nil || d == nil {
		t.Fatalf("no deployment: %v", err)
	}
	return d
}

// TestAPIServerUnreachable starts the operator while the API server cannot be
// reached, and cuts it off again later: it retries, never exits, and
// recovers.
func TestAPIServerUnreachable(t *testing.T) {
	ns := newNamespace(t)
	setInfrastructure(t, configv1.ExternalPlatformType, "kubemark")
	target, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	p := newTCPProxy(t, target.Host)
	cfg := rest.CopyConfig(env.Config)
	cfg.Host = "https://" + p.addr

	// Down at start: wait until the operator has tried (and been refused)
	// a few times, then bring the API back.
	p.setUp(false)
	startOperator(t, writeImages(t, testImages), harnessOptions{ns: ns, restConfig: cfg})
	p.waitRefused(t, 3)
	if d, _ := getDeployment(context.Background(), ns); d != nil {
		t.Fatal("operator synced through a proxy that is down")
	}
	p.setUp(true)
	waitDeployment(t, ns)

	// Down for a while; meanwhile someone tampers with the operand.
	p.setUp(false)
	d := mustDeployment(t, ns)
	for i := range d.Spec.Template.Spec.Containers {
		d.Spec.Template.Spec.Containers[i].Image = "example.io/tampered:1"
	}
	if err := env.Client.Update(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	// The operator keeps trying through the outage (its watches reconnect).
	p.waitRefused(t, 3)
	p.setUp(true)
	poll.Eventually(t, 60*time.Second, "drift reverted after the outage", func(ctx context.Context) (bool, error) {
		d, err := getDeployment(ctx, ns)
		return d != nil && containerImage(d, render.MachineContainer) == testImages.ClusterAPIControllerKubemark, err
	})
}

// tcpProxy forwards TCP connections to target while up; when down it
// refuses new connections and cuts existing ones.
type tcpProxy struct {
	addr   string
	target string
	ln     net.Listener
	mu     sync.Mutex
	up     bool
	conns  map[net.Conn]struct{}
	// refused counts connections refused while down, since the last setUp.
	refused int
}

// waitRefused waits until the proxy has refused n connections since it
// was last set up or down: proof that the client kept trying.
func (p *tcpProxy) waitRefused(t *testing.T, n int) {
	t.Helper()
	poll.Eventually(t, 60*time.Second, fmt.Sprintf("%d connections refused by the proxy", n), func(context.Context) (bool, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.refused < n {
			return false, fmt.Errorf("%d refused", p.refused)
		}
		return true, nil
	})
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	go p.serve()
	t.Cleanup(func() { _ = ln.Close(); p.setUp(false) })
	return p
}

func (p *tcpProxy) setUp(up bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.up = up
	p.refused = 0
	if !up {
		for c := range p.conns {
			_ = c.Close()
		}
		p.conns = map[net.Conn]struct{}{}
	}
}

func (p *tcpProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if !p.up {
			p.refused++
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns[c], p.conns[u] = struct{}{}, struct{}{}
		p.mu.Unlock()
		go func() { _, _ = io.Copy(u, c); _ = u.Close() }()
		go func() { _, _ = io.Copy(c, u); _ = c.Close() }()
	}
}
