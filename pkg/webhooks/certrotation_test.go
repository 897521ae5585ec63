package webhooks

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
)

const loopback = "127.0.0.1"

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// servingCert generates a self-signed serving certificate (and its CA, in
// the same PEM) for 127.0.0.1.
func servingCert(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(loopback, []net.IP{net.ParseIP(loopback)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

// writeFileAtomically replaces path the way kubelet updates a Secret volume:
// the new content appears at once (rename), never half-written.
func writeFileAtomically(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmp.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tmp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		t.Fatal(err)
	}
}

// The serving certificate's file names in the cert dir (controller-runtime's defaults).
const (
	CertName = "tls.crt"
	KeyName  = "tls.key"
)

// ServerOptions returns the machineset-controller's webhook.Options.
func ServerOptions() webhook.Options {
	return webhook.Options{Port: DefaultPort, CertDir: DefaultCertDir, CertName: CertName, KeyName: KeyName}
}

func writeServingCert(t *testing.T, dir string, certPEM, keyPEM []byte) {
	t.Helper()
	writeFileAtomically(t, filepath.Join(dir, KeyName), keyPEM)
	writeFileAtomically(t, filepath.Join(dir, CertName), certPEM)
}

// startServer runs a webhook.Server configured like the machineset-controller
// (ServerOptions) but on 127.0.0.1, a free port and certDir, with the
// handlers registered; it is stopped when the test ends.
func startServer(t *testing.T, certDir string, opts Options) (port int) {
	t.Helper()
	so := ServerOptions()
	so.Host, so.Port, so.CertDir = loopback, freePort(t), certDir
	srv := webhook.NewServer(so)
	Register(srv, opts)
	testenv.Run(t, srv)
	return so.Port
}

// review posts an AdmissionReview for a valid Machine to the validating
// path over a fresh TLS connection, checks the answer and returns the leaf
// certificate the server presented.
func review(ctx context.Context, port int, roots *x509.CertPool) (*x509.Certificate, error) {
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: roots, ServerName: loopback},
		DisableKeepAlives: true,
	}}
	obj, err := json.Marshal(machine("m", value(validKubemark)))
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: admissionReviewType,
		Request:  &admissionv1.AdmissionRequest{UID: "1", Operation: admissionv1.Create, Object: rawExtension(obj)},
	})
	if err != nil {
		return nil, err
	}
	url := fmt.Sprintf("https://%s%s", net.JoinHostPort(loopback, fmt.Sprint(port)), ValidateMachinePath)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("decoding the AdmissionReview (HTTP %d): %w", resp.StatusCode, err)
	}
	if out.Response == nil || !out.Response.Allowed || out.Response.UID != "1" {
		return nil, fmt.Errorf("unexpected response %+v", out.Response)
	}
	return resp.TLS.PeerCertificates[0], nil
}

// TestCertificateRotation proves that a rotated serving certificate (new
// files in the certificate directory, as when service-ca or the operator
// renews the Secret) is served without restarting the server.
func TestCertificateRotation(t *testing.T) {
	dir := t.TempDir()
	cert1, key1 := servingCert(t)
	cert2, key2 := servingCert(t)
	roots := x509.NewCertPool()
	for _, pem := range [][]byte{cert1, cert2} {
		if !roots.AppendCertsFromPEM(pem) {
			t.Fatal("cannot parse the generated certificate")
		}
	}
	writeServingCert(t, dir, cert1, key1)
	port := startServer(t, dir, Options{})

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var first *x509.Certificate
	var lastErr error
	if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		first, lastErr = review(ctx, port, roots)
		return lastErr == nil, nil
	}); err != nil {
		t.Fatalf("the webhook server never answered: %v (last error: %v)", err, lastErr)
	}
	want1, want2 := leaf(t, cert1), leaf(t, cert2)
	if !first.Equal(want1) {
		t.Fatalf("served certificate %s, want the first one %s", first.SerialNumber, want1.SerialNumber)
	}

	writeServingCert(t, dir, cert2, key2)
	var served *x509.Certificate
	if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		served, lastErr = review(ctx, port, roots)
		return lastErr == nil && served.Equal(want2), nil
	}); err != nil {
		t.Fatalf("the rotated certificate was not served: %v (still the first certificate: %v, last error: %v)", err, served != nil && served.Equal(want1), lastErr)
	}
}

func leaf(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil || len(certs) == 0 {
		t.Fatalf("parsing the generated certificate: %v", err)
	}
	return certs[0]
}
