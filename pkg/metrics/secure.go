// Package metrics registers collectors and gives every binary its metrics server's options.
package metrics

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Serving-certificate file names in a cert directory (a mounted kubernetes.io/tls Secret).
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
)

// Register registers collectors with controller-runtime's registry; again is fine, a clash panics.
func Register(collectors ...prometheus.Collector) {
	for _, c := range collectors {
		if err := ctrlmetrics.Registry.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				panic(err)
			}
		}
	}
}

// SecureServerOptions are every binary's metrics server options: HTTPS (HTTP/1.1 only, against HTTP/2 stream-reset
// floods), requests authorized by the API server, certDir's pair or self-signed. See docs/architecture.md ("Metrics").
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
		// controller-runtime self-signs when the cert directory holds no pair:
		// one that does not exist, so no stray file in the temp dir is served.
		opts.CertDir = filepath.Join(os.TempDir(), "machine-api-operator-no-metrics-cert")
		return opts
	}
	src := newCertSource(certDir)
	opts.TLSOpts = append(opts.TLSOpts, func(c *tls.Config) { c.GetCertificate = src.GetCertificate })
	return opts
}

// authnAuthzFilter is controller-runtime's filters.WithAuthenticationAndAuthorization, but
// a rejected token gets 401 (as from kube-apiserver and kube-rbac-proxy), not 500.
func authnAuthzFilter(c *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	filter, err := filters.WithAuthenticationAndAuthorization(c, httpClient)
	return func(log logr.Logger, handler http.Handler) (http.Handler, error) {
		h, err := filter(log, handler)
		return unauthorizedOnAuthnError(h), err
	}, err
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

// authnErrorAsUnauthorized turns the filter's 500 "Authentication failed" into
// 401 "Unauthorized"; a 500 is held back until its body shows which it is.
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
		if bytes.HasPrefix(b, []byte("Authentication failed")) { // the filter's body for this 500
			http.Error(w.ResponseWriter, "Unauthorized", http.StatusUnauthorized)
			return len(b), nil
		}
		w.ResponseWriter.WriteHeader(http.StatusInternalServerError)
	}
	w.started = true
	return w.ResponseWriter.Write(b)
}

// certSource serves dir's key pair through certwatcher, self-signed until the pair first parses: certwatcher.New
// fails while the files are missing (the optional Secret volume before service-ca issues it).
type certSource struct {
	dir     string
	recheck time.Duration // how long a pair is served before the files are read again
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

// GetCertificate is tls.Config.GetCertificate: the files are re-read on a
// handshake at most once per recheck; a failed read keeps the last good pair.
func (s *certSource) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := s.clock.Now(); s.watcher == nil || now.Sub(s.checked) >= s.recheck {
		s.checked = now
		var err error
		if s.watcher != nil {
			err = s.watcher.ReadCertificate()
		} else {
			s.watcher, err = certwatcher.New(filepath.Join(s.dir, CertFile), filepath.Join(s.dir, KeyFile)) // nil on error
		}
		if msg := fmt.Sprint(err); err != nil && msg != s.lastErr { // logged once, not per handshake
			logf.Log.WithName("metrics-certificate").Info("no usable serving certificate in the directory; serving the previous or a self-signed one", "dir", s.dir, "err", msg)
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

// selfSigned is what controller-runtime's metrics server generates: CN localhost, SAN 127.0.0.1.
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
