package tlsflags

import (
	"crypto/tls"
	"net"
	"testing"

	certutil "k8s.io/client-go/util/cert"
)

// serve accepts TLS connections on 127.0.0.1 with cfg and completes their
// handshakes until the test ends.
func serve(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_ = conn.(*tls.Conn).Handshake()
			_ = conn.Close()
		}
	}()
	return ln.Addr().String()
}

// handshake connects with at most TLS 1.2 and returns the negotiated version.
func handshake(addr string) (uint16, error) {
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12}) //nolint:gosec // a test of the server's versions
	if err != nil {
		return 0, err
	}
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().Version, nil
}

func TestLiveAppliesToTheNextHandshake(t *testing.T) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	live, err := NewLive(Options{MinVersion: "VersionTLS12"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{}
	live.Configure(cfg)
	// Set after Configure, as a server adds its certificate after its
	// options: the handshake still sees it.
	cfg.Certificates = []tls.Certificate{cert}
	addr := serve(t, cfg)

	if v, err := handshake(addr); err != nil || v != tls.VersionTLS12 {
		t.Fatalf("TLS 1.2 client under VersionTLS12: version %x, err %v; want TLS 1.2", v, err)
	}

	changed, err := live.Set(Options{MinVersion: "VersionTLS13"})
	if err != nil || !changed {
		t.Fatalf("Set(VersionTLS13) = %v, %v; want changed", changed, err)
	}
	if _, err := handshake(addr); err == nil {
		t.Fatal("a TLS 1.2 client was accepted after the minimum became TLS 1.3")
	}
	if got := live.Current().MinVersion; got != "VersionTLS13" {
		t.Errorf("Current().MinVersion = %q, want VersionTLS13", got)
	}

	if changed, err := live.Set(Options{MinVersion: "VersionTLS13"}); err != nil || changed {
		t.Errorf("setting the same options again: changed %v, err %v; want unchanged", changed, err)
	}
	if _, err := live.Set(Options{MinVersion: "VersionTLS99"}); err == nil {
		t.Error("an unknown version was accepted")
	}
	if got := live.Current().MinVersion; got != "VersionTLS13" {
		t.Errorf("after a refused Set, MinVersion = %q, want VersionTLS13 kept", got)
	}

	if changed, err := live.Set(Options{MinVersion: "VersionTLS12", CipherSuites: []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}}); err != nil || !changed {
		t.Fatalf("back to TLS 1.2: changed %v, err %v", changed, err)
	}
	if v, err := handshake(addr); err != nil || v != tls.VersionTLS12 {
		t.Fatalf("TLS 1.2 client after going back: version %x, err %v", v, err)
	}
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12, //nolint:gosec // a test of the server's suites
		CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384}})
	if err == nil {
		_ = conn.Close()
		t.Error("a client offering only a suite outside the configured list was accepted")
	}
}
