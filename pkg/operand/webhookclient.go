package operand

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"sync"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// ClientCAs is the PEM bundle of --webhook-client-ca-file, read again when its content changes
// (a mounted ConfigMap that appears, rotates or goes): a missing file turns verification off.
type ClientCAs struct {
	path string

	mu      sync.Mutex
	loaded  bool
	missing bool   // the file was missing
	data    []byte // the content pool was built from
	pool    *x509.CertPool
	err     error
}

// NewClientCAs reads path at each use.
func NewClientCAs(path string) *ClientCAs { return &ClientCAs{path: path} }

// current returns the pool (nil: the file is missing) or why the file is unusable.
func (c *ClientCAs) current() (*x509.CertPool, error) {
	data, err := os.ReadFile(c.path)
	missing := errors.Is(err, fs.ErrNotExist)
	if err != nil && !missing {
		return nil, fmt.Errorf("reading the webhook client CA %s: %w", c.path, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loaded && missing == c.missing && bytes.Equal(data, c.data) {
		return c.pool, c.err
	}
	c.loaded, c.missing, c.data, c.pool, c.err = true, missing, data, nil, nil
	if missing {
		klog.InfoS("webhook client CA file missing: the webhook server accepts any client", "file", c.path)
		return nil, nil
	}
	cas, err := certutil.ParseCertsPEM(data)
	if err != nil {
		c.err = fmt.Errorf("webhook client CA %s has no usable certificate: %w", c.path, err)
		klog.ErrorS(c.err, "refusing every webhook request until the client CA file is fixed")
		return nil, c.err
	}
	c.pool = x509.NewCertPool()
	for _, ca := range cas {
		c.pool.AddCert(ca)
	}
	klog.InfoS("webhook client CA loaded: only clients with a certificate it signed are served", "file", c.path, "certificates", len(cas))
	return c.pool, nil
}

// Verify returns nil when the request's client certificate chains to the CA for client
// authentication (or the CA file is missing), else why it is refused.
func (c *ClientCAs) Verify(state *tls.ConnectionState) error {
	pool, err := c.current()
	switch {
	case err != nil:
		return err
	case pool == nil:
		return nil
	case state == nil || len(state.PeerCertificates) == 0:
		return errors.New("no client certificate")
	}
	inter := x509.NewCertPool()
	for _, ic := range state.PeerCertificates[1:] {
		inter.AddCert(ic)
	}
	_, err = state.PeerCertificates[0].Verify(x509.VerifyOptions{
		Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return fmt.Errorf("client certificate %q: %w", state.PeerCertificates[0].Subject.CommonName, err)
	}
	return nil
}

// RequestClientCert asks every TLS client for its certificate without requiring one in the
// handshake: the readiness probe (a bare handshake) still passes; requests are checked by
// VerifyingServer.
func RequestClientCert(cfg *tls.Config) { cfg.ClientAuth = tls.RequestClientCert }

// VerifyingServer refuses (403) every request whose client certificate ClientCAs does not
// accept, before any handler registered on it runs.
type VerifyingServer struct {
	webhook.Server
	CAs *ClientCAs
}

// Register implements webhook.Server.
func (s VerifyingServer) Register(path string, h http.Handler) {
	s.Server.Register(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.CAs.Verify(r.TLS); err != nil {
			klog.V(2).InfoS("refusing a webhook request", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
			http.Error(w, "client not allowed: "+err.Error(), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	}))
}
