package vspheretest

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
)

// proxy relays TCP between the provider and vcsim and can hold all traffic,
// which is what a vCenter stopped with SIGSTOP looks like to a client: the
// kernel still accepts connections and buffers requests, nothing is read or
// answered, and no connection is refused or reset. The test's inspection
// client does not go through it.
type proxy struct {
	ln      net.Listener
	backend string // vcsim's host:port

	mu      sync.Mutex
	resumed chan struct{} // non-nil while paused, closed by resume
	conns   map[net.Conn]struct{}
	closed  bool

	done chan struct{} // closed when the test ends: held relays give up
	wg   sync.WaitGroup
}

// startProxy listens on a loopback port and relays each connection to
// backend until the test ends.
func startProxy(t testing.TB, backend string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, backend: backend, conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

// Pause makes vCenter unresponsive to the provider (its endpoint, Server and
// Port): connections, new or open, are accepted and held, bytes in flight
// are kept, nothing is answered, until Resume. Client is not affected, so
// the test can still look at the inventory.
func (v *VCenter) Pause() {
	v.proxy.mu.Lock()
	defer v.proxy.mu.Unlock()
	if v.proxy.resumed == nil {
		v.proxy.resumed = make(chan struct{})
	}
}

// Resume lets the held traffic flow again, in order, as a vCenter given
// SIGCONT would read and answer the requests it had buffered.
func (v *VCenter) Resume() {
	v.proxy.mu.Lock()
	defer v.proxy.mu.Unlock()
	if v.proxy.resumed != nil {
		close(v.proxy.resumed)
		v.proxy.resumed = nil
	}
}

// hold waits while the proxy is paused; false once the test has ended.
func (p *proxy) hold() bool {
	p.mu.Lock()
	resumed := p.resumed
	p.mu.Unlock()
	if resumed != nil {
		select {
		case <-resumed:
		case <-p.done:
			return false
		}
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		if !p.track(c) {
			return
		}
		p.wg.Add(1)
		go p.relay(c)
	}
}

// track registers a connection to close when the test ends; false (and the
// connection closed) once it has.
func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
	_ = c.Close()
}

// relay connects an accepted client to vcsim (only once not paused: a
// stopped vCenter does not even start the TLS handshake) and copies both
// ways until both sides are done.
func (p *proxy) relay(client net.Conn) {
	defer p.wg.Done()
	defer p.untrack(client)
	if !p.hold() {
		return
	}
	server, err := net.Dial("tcp", p.backend)
	if err != nil {
		return
	}
	if !p.track(server) {
		return
	}
	defer p.untrack(server)
	var both sync.WaitGroup
	both.Add(2)
	go func() { defer both.Done(); p.pipe(server, client) }()
	go func() { defer both.Done(); p.pipe(client, server) }()
	both.Wait()
}

// pipe copies src to dst, holding every chunk while paused. The end of src
// is passed on as a half-close, so a request sent just before the client
// gave up still reaches vcsim (as the kernel would deliver it after
// SIGCONT); an error closes both sides.
func (p *proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		if !p.hold() {
			break
		}
		n, err := src.Read(buf)
		if n > 0 {
			if !p.hold() {
				break
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if errors.Is(err, io.EOF) {
			if tc, ok := dst.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
				return
			}
			break
		}
		if err != nil {
			break
		}
	}
	_ = dst.Close()
	_ = src.Close()
}

// close stops accepting, releases held relays and closes every connection.
func (p *proxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	p.closed = true
	close(p.done)
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
