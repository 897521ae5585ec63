package metrics

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"
	clocktesting "k8s.io/utils/clock/testing"
)

// newPair returns a self-signed serving pair for host.
func newPair(t *testing.T, host string) (certPEM, keyPEM []byte) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, []net.IP{{127, 0, 0, 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

// writeFiles writes the key, then the certificate (as a rotating writer may).
func writeFiles(t *testing.T, dir string, certPEM, keyPEM []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, KeyFile), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, CertFile), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
}

func servedCN(t *testing.T, s *certSource) string {
	t.Helper()
	c, err := s.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	// certutil names self-signed certificates "<host>@<unix time>".
	cn, _, _ := strings.Cut(leaf.Subject.CommonName, "@")
	return cn
}

// TestCertSource walks the served certificate through the directory's life
// on a fake clock (no sleeps): each step states the CN a handshake must get.
func TestCertSource(t *testing.T) {
	const (
		first   = "machine-api-controllers.openshift-machine-api.svc"
		rotated = "rotated.openshift-machine-api.svc"
		broken  = "broken.openshift-machine-api.svc"
		healed  = "healed.openshift-machine-api.svc"
	)
	dir := t.TempDir()
	clk := clocktesting.NewFakePassiveClock(time.Unix(1e9, 0))
	s := newCertSource(dir)
	s.clock = clk
	step := func(what, want string) {
		t.Helper()
		if cn := servedCN(t, s); cn != want {
			t.Fatalf("%s: served CN %q, want %q", what, cn, want)
		}
	}
	later := func() { clk.SetTime(clk.Now().Add(s.recheck)) }

	step("no files", "localhost")
	step("still no files, same instant", "localhost")
	firstCert, firstKey := newPair(t, first)
	writeFiles(t, dir, firstCert, firstKey)
	step("files appeared: served from the next handshake", first)

	rotCert, rotKey := newPair(t, rotated)
	writeFiles(t, dir, rotCert, rotKey)
	step("rotated within the recheck interval: not read yet", first)
	later()
	step("rotated, recheck interval passed", rotated)

	// A new certificate with the previous key (a half-written rotation): it
	// must be read and refused, the last good pair kept.
	brokenCert, _ := newPair(t, broken)
	writeFiles(t, dir, brokenCert, rotKey)
	later()
	step("certificate and key do not match", rotated)
	if err := os.Remove(filepath.Join(dir, CertFile)); err != nil {
		t.Fatal(err)
	}
	later()
	step("certificate file removed", rotated)

	// Reading goes on after failures: a good pair is served again.
	healCert, healKey := newPair(t, healed)
	writeFiles(t, dir, healCert, healKey)
	later()
	step("good pair again", healed)
}

// TestSecureServerOptions: HTTPS with controller-runtime's authentication and
// authorization filter, HTTP/1.1 only; the certificate from the directory
// when one is given, else controller-runtime's self-signed one.
func TestSecureServerOptions(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		o := SecureServerOptions(":8443", dir)
		if !o.SecureServing || o.FilterProvider == nil || o.BindAddress != ":8443" {
			t.Errorf("dir %q: options %+v: want secure serving with the authn/authz filter", dir, o)
		}
		cfg := &tls.Config{}
		for _, f := range o.TLSOpts {
			f(cfg)
		}
		if len(cfg.NextProtos) != 1 || cfg.NextProtos[0] != "http/1.1" {
			t.Errorf("dir %q: NextProtos %v, want only http/1.1", dir, cfg.NextProtos)
		}
		if (cfg.GetCertificate != nil) != (dir != "") {
			t.Errorf("dir %q: GetCertificate set = %v", dir, cfg.GetCertificate != nil)
		}
		if _, err := os.Stat(o.CertDir); dir == "" && !os.IsNotExist(err) {
			t.Errorf("without a cert dir controller-runtime must find no certificate in %s (%v)", o.CertDir, err)
		}
	}
}

// TestAuthnErrorAsUnauthorized: the filter's 500 "Authentication failed"
// becomes 401; any other response, 500s included, passes unchanged.
func TestAuthnErrorAsUnauthorized(t *testing.T) {
	for _, tc := range []struct {
		name     string
		handler  http.HandlerFunc
		wantCode int
		wantBody string
	}{
		{"authentication error", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "Authentication failed", http.StatusInternalServerError)
		}, http.StatusUnauthorized, "Unauthorized\n"},
		{"authorization error", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "Authorization for user x failed", http.StatusInternalServerError)
		}, http.StatusInternalServerError, "Authorization for user x failed\n"},
		{"500 without body", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
		}, http.StatusInternalServerError, ""},
		{"403", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "Authorization denied for user x", http.StatusForbidden)
		}, http.StatusForbidden, "Authorization denied for user x\n"},
		{"metrics", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte("up 1\n"))
		}, http.StatusOK, "up 1\n"},
	} {
		rec := httptest.NewRecorder()
		unauthorizedOnAuthnError(tc.handler).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if rec.Code != tc.wantCode || rec.Body.String() != tc.wantBody {
			t.Errorf("%s: %d %q, want %d %q", tc.name, rec.Code, rec.Body.String(), tc.wantCode, tc.wantBody)
		}
	}
}
