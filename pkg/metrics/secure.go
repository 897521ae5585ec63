package metrics

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Serving-certificate file names in a cert directory: the layout of a
// kubernetes.io/tls Secret (OpenShift's service-ca writes these) mounted there.
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
)

// SecureServerOptions are the options of every binary's metrics server:
// HTTPS, with each request authenticated (TokenReview) and authorized
// (SubjectAccessReview: verb get on the non-resource URL /metrics) by the
// API server through controller-runtime's filter. The binary's identity needs
// create on tokenreviews.authentication.k8s.io and
// subjectaccessreviews.authorization.k8s.io; a scraper needs a ClusterRole
// with nonResourceURLs ["/metrics"], verbs ["get"]. No credentials or a
// rejected token get 401, credentials without that permission 403.
//
// certDir "" serves controller-runtime's self-signed certificate (generated
// in memory at start). Otherwise tls.crt/tls.key in certDir are served and
// re-read when they change (a rotated Secret needs no restart); while they
// are missing (an optional Secret volume whose Secret is not issued yet) the
// self-signed certificate is served, and the files are picked up once they
// appear. bindAddress "0" disables the server.
//
// HTTP/2 is not offered (HTTP/1.1 only), as kubebuilder does by default:
// Prometheus scrapes over HTTP/1.1, and the endpoint is then not exposed to
// HTTP/2 stream-reset floods (CVE-2023-44487, CVE-2023-39325).
//
// tlsOpts (the binary's TLS flags) are applied after this function's own
// settings, so they may raise the minimum version or pick cipher suites.
func SecureServerOptions(bindAddress, certDir string, tlsOpts ...func(*tls.Config)) metricsserver.Options {
	opts := metricsserver.Options{
		BindAddress:    bindAddress,
		SecureServing:  true,
		FilterProvider: authnAuthzFilter,
		TLSOpts: []func(*tls.Config){func(c *tls.Config) {
			c.NextProtos = []string{"http/1.1"}
			c.MinVersion = tls.VersionTLS12
		}},
	}
	opts.TLSOpts = append(opts.TLSOpts, tlsOpts...)
	if certDir == "" {
		// controller-runtime generates the self-signed certificate when the
		// (default, temporary) cert directory holds no tls.crt/tls.key.
		// Point it at a directory that certainly does not exist, so no
		// stray file in the temp dir is ever served.
		opts.CertDir = filepath.Join(os.TempDir(), "machine-api-operator-no-metrics-cert")
		return opts
	}
	src := newCertSource(certDir)
	opts.TLSOpts = append(opts.TLSOpts, func(c *tls.Config) { c.GetCertificate = src.GetCertificate })
	return opts
}

// authnAuthzFilter is controller-runtime's filters.WithAuthenticationAndAuthorization
// with one difference: a request whose credentials cannot be authenticated
// (a token the API server rejects: expired, revoked, not a token) gets 401
// Unauthorized, as from kube-apiserver and kube-rbac-proxy (OpenShift's
// metrics proxies), not the 500 controller-runtime answers when its
// authenticator reports the rejection as an error.
func authnAuthzFilter(c *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	filter, err := filters.WithAuthenticationAndAuthorization(c, httpClient)
	if err != nil {
		return nil, err
	}
	return func(log logr.Logger, handler http.Handler) (http.Handler, error) {
		h, err := filter(log, handler)
		if err != nil {
			return nil, err
		}
		return unauthorizedOnAuthnError(h), nil
	}, nil
}

// unauthorizedOnAuthnError wraps h (see authnErrorAsUnauthorized).
func unauthorizedOnAuthnError(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		aw := &authnErrorAsUnauthorized{ResponseWriter: w}
		h.ServeHTTP(aw, r)
		if aw.held { // a 500 without a body
			w.WriteHeader(http.StatusInternalServerError)
		}
	})
}

// authnFailedBody starts the body controller-runtime's filter writes with
// status 500 when authentication fails with an error.
const authnFailedBody = "Authentication failed"

// authnErrorAsUnauthorized turns the filter's 500 "Authentication failed"
// into 401 "Unauthorized"; every other response passes unchanged. A 500 is
// held back until its body shows which one it is.
type authnErrorAsUnauthorized struct {
	http.ResponseWriter
	held, started bool
}

func (w *authnErrorAsUnauthorized) WriteHeader(code int) {
	if code == http.StatusInternalServerError && !w.started {
		w.held = true
		return
	}
	w.started = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *authnErrorAsUnauthorized) Write(b []byte) (int, error) {
	if w.held {
		w.held, w.started = false, true
		if bytes.HasPrefix(b, []byte(authnFailedBody)) {
			http.Error(w.ResponseWriter, "Unauthorized", http.StatusUnauthorized)
			return len(b), nil
		}
		w.ResponseWriter.WriteHeader(http.StatusInternalServerError)
	}
	w.started = true
	return w.ResponseWriter.Write(b)
}

// certSource serves the key pair in dir through controller-runtime's
// certwatcher, and a self-signed certificate until the pair first parses.
// Kept around certwatcher: certwatcher.New fails while the files are missing
// and Start gives up after 10 s, but the optional Secret volume may stay empty
// until service-ca issues it, and the files must be picked up then.
type certSource struct {
	dir     string
	recheck time.Duration // how long a read pair is served before the files are read again
	clock   clock.PassiveClock

	mu         sync.Mutex
	checked    time.Time
	watcher    *certwatcher.CertWatcher // nil until the pair first parses
	selfSigned *tls.Certificate
	lastErr    string
}

func newCertSource(dir string) *certSource {
	return &certSource{dir: dir, recheck: 10 * time.Second, clock: clock.RealClock{}}
}

// GetCertificate is tls.Config.GetCertificate. The files are re-read on a
// handshake (at most once per recheck), never in the background; certwatcher
// keeps the last good pair when a read fails (e.g. caught mid-rotation).
func (s *certSource) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := s.clock.Now(); s.watcher == nil || now.Sub(s.checked) >= s.recheck {
		s.checked = now
		err := s.read()
		if msg := fmt.Sprint(err); err != nil && msg != s.lastErr { // logged once, not per handshake
			logf.Log.WithName("metrics-certificate").Info("no usable serving certificate in the directory; serving the previous or a self-signed one", "dir", s.dir, "error", msg)
		}
		s.lastErr = fmt.Sprint(err)
	}
	if s.watcher != nil {
		return s.watcher.GetCertificate(hello)
	}
	if s.selfSigned == nil {
		cert, err := selfSigned()
		if err != nil {
			return nil, err
		}
		s.selfSigned = cert
	}
	return s.selfSigned, nil
}

func (s *certSource) read() error {
	if s.watcher != nil {
		return s.watcher.ReadCertificate()
	}
	w, err := certwatcher.New(filepath.Join(s.dir, CertFile), filepath.Join(s.dir, KeyFile))
	if err == nil {
		s.watcher = w
	}
	return err
}

// selfSigned is the certificate controller-runtime's metrics server
// generates when it has none: CN localhost, SAN 127.0.0.1.
func selfSigned() (*tls.Certificate, error) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKeyWithFixtures("localhost", []net.IP{{127, 0, 0, 1}}, nil, "")
	if err != nil {
		return nil, fmt.Errorf("generating a self-signed metrics serving certificate: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("loading the self-signed metrics serving certificate: %w", err)
	}
	return &cert, nil
}
