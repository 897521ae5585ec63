package vspheretest

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
)

// proxy relays TCP between the provider and vcsim and can hold all traffic, as a vCenter stopped with SIGSTOP:
// connections are accepted and requests buffered, nothing is answered, refused or reset.
type proxy struct {
	ln      net.Listener
	backend string          // vcsim's host:port
	ctx     context.Context // done when the test ends: held relays give up, connections close

	mu      sync.Mutex
	resumed chan struct{} // non-nil while paused, closed by Resume

	wg sync.WaitGroup
}

// startProxy listens on a loopback port and relays each connection to backend until the test ends.
func startProxy(t testing.TB, backend string) *proxy {
	t.Helper()
	ln := must(net.Listen("tcp", "127.0.0.1:0"))(t)
	ctx, cancel := context.WithCancel(context.Background())
	p := &proxy{ln: ln, backend: backend, ctx: ctx}
	p.wg.Go(p.serve)
	t.Cleanup(func() {
		_ = ln.Close()
		cancel()
		p.wg.Wait()
	})
	return p
}

// Pause makes vCenter unresponsive to the provider (Server and Port) until Resume: connections, new or
// open, are accepted and held, bytes in flight are kept. Client is not affected.
func (v *VCenter) Pause() {
	v.proxy.mu.Lock()
	defer v.proxy.mu.Unlock()
	if v.proxy.resumed == nil {
		v.proxy.resumed = make(chan struct{})
	}
}

// Resume lets the held traffic flow again, in order, as a vCenter given SIGCONT would.
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
		case <-p.ctx.Done():
		}
	}
	return p.ctx.Err() == nil
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.wg.Go(func() { p.relay(c) })
	}
}

// relay connects an accepted client to vcsim (only once not paused: a stopped vCenter does not even start
// the TLS handshake) and copies both ways until both sides are done or the test ends.
func (p *proxy) relay(client net.Conn) {
	defer client.Close()
	defer context.AfterFunc(p.ctx, func() { _ = client.Close() })()
	if !p.hold() {
		return
	}
	server, err := net.Dial("tcp", p.backend)
	if err != nil {
		return
	}
	defer server.Close()
	defer context.AfterFunc(p.ctx, func() { _ = server.Close() })()
	var both sync.WaitGroup
	both.Go(func() { p.pipe(server, client) })
	both.Go(func() { p.pipe(client, server) })
	both.Wait()
}

// pipe copies src to dst, holding every chunk while paused. The end of src is passed on as a half-close, so
// a request sent just before the client gave up still reaches vcsim; an error closes both sides.
func (p *proxy) pipe(dst, src net.Conn) {
	_, err := io.Copy(dst, heldReader{p, src})
	if tc, ok := dst.(*net.TCPConn); ok && err == nil {
		_ = tc.CloseWrite()
		return
	}
	_ = dst.Close()
	_ = src.Close()
}

// heldReader reads from r only while the proxy is not paused, and holds what it read until then.
type heldReader struct {
	p *proxy
	r io.Reader
}

func (h heldReader) Read(b []byte) (int, error) {
	if !h.p.hold() {
		return 0, net.ErrClosed
	}
	n, err := h.r.Read(b)
	if n > 0 && !h.p.hold() {
		return 0, net.ErrClosed
	}
	return n, err
}
