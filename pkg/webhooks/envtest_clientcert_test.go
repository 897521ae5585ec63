package webhooks

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// testClientCA is a CA signing the API server's webhook client certificate.
type testClientCA struct {
	dir, caFile string
	cert        *x509.Certificate
	key         *ecdsa.PrivateKey
}

func newTestClientCA(t *testing.T) *testClientCA {
	t.Helper()
	ca := &testClientCA{dir: t.TempDir()}
	ca.cert, ca.key = issueCert(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: "webhook-client-ca"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}, nil, nil)
	ca.caFile = filepath.Join(ca.dir, "ca.crt")
	writePEM(t, ca.caFile, "CERTIFICATE", ca.cert.Raw)
	return ca
}

// issueCert signs tmpl with parent (nil: self-signed) for a new key.
func issueCert(t *testing.T, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// client issues a client certificate for cn with usages (signed by ca, or by a CA of its own with another).
func (ca *testClientCA) client(t *testing.T, cn string, usages ...x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	cert, key := issueCert(t, &x509.Certificate{Subject: pkix.Name{CommonName: cn}, ExtKeyUsage: usages, KeyUsage: x509.KeyUsageDigitalSignature}, ca.cert, ca.key)
	return tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}
}

// admissionConfig writes the API server's AdmissionConfiguration: both webhook plugins present
// a client certificate signed by ca to every webhook (kubeconfig user "*").
func (ca *testClientCA) admissionConfig(t *testing.T) string {
	t.Helper()
	c := ca.client(t, "kube-apiserver-webhook-client", x509.ExtKeyUsageClientAuth)
	certFile, keyFile := filepath.Join(ca.dir, "client.crt"), filepath.Join(ca.dir, "client.key")
	writePEM(t, certFile, "CERTIFICATE", c.Leaf.Raw)
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, keyFile, "PRIVATE KEY", keyDER)
	kubeconfig := filepath.Join(ca.dir, "webhook-kubeconfig.yaml")
	write := func(path, content string) {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(kubeconfig, "apiVersion: v1\nkind: Config\nusers:\n- name: '*'\n  user:\n    client-certificate: "+certFile+"\n    client-key: "+keyFile+"\n")
	plugin := func(name string) string {
		return "- name: " + name + "\n  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: WebhookAdmissionConfiguration\n    kubeConfigFile: " + kubeconfig + "\n"
	}
	admission := filepath.Join(ca.dir, "admission.yaml")
	write(admission, "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n"+
		plugin("ValidatingAdmissionWebhook")+plugin("MutatingAdmissionWebhook"))
	return admission
}

// TestWebhookServesOnlyTheAPIServer: with --webhook-client-ca-file's verification on, the API
// server (presenting a certificate from its AdmissionConfiguration) gets its answers, while a
// client without a certificate, with one of another CA or without client-auth usage gets 403.
// Breaks if: VerifyingServer lets a request without a verified certificate through, or
// RequestClientCert is dropped (the API server's certificate is then never seen: its calls
// fail, failurePolicy Ignore admits the invalid Machine).
func TestWebhookServesOnlyTheAPIServer(t *testing.T) {
	ca := newTestClientCA(t)
	const ns = "client-cert-test"
	var addr string
	var serverCAs *x509.CertPool
	c := startAPIServerWithWebhooks(t, apiServerOptions{clientCA: ca, machineNamespace: ns, served: func(host string, port int, caPEM []byte) {
		addr = host + ":" + strconv.Itoa(port)
		serverCAs = x509.NewCertPool()
		serverCAs.AppendCertsFromPEM(caPEM)
	}})
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}

	t.Run("the API server's calls are served", func(t *testing.T) {
		m := machine("bad-cpu", value(kubemarkSpec(`"cpu":"-1"`)))
		m.Namespace = ns
		err := c.Create(ctx, m)
		if err == nil || !strings.Contains(err.Error(), `admission webhook "validation.machine.machine.openshift.io" denied the request`) {
			t.Fatalf("an invalid Machine: got %v, want the webhook's refusal", err)
		}
	})

	review, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: admissionReviewType, Request: &admissionv1.AdmissionRequest{
		UID: types.UID("1"), Operation: admissionv1.Create, Object: rawExtension([]byte(`{"metadata":{"name":"m"}}`)),
	}})
	if err != nil {
		t.Fatal(err)
	}
	post := func(t *testing.T, certs ...tls.Certificate) (int, string) {
		t.Helper()
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: serverCAs, Certificates: certs}}}
		resp, err := hc.Post("https://"+addr+ValidateMachinePath, "application/json", bytes.NewReader(review))
		if err != nil {
			t.Fatalf("posting to the webhook server: %v", err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	other := newTestClientCA(t)
	for name, certs := range map[string][]tls.Certificate{
		"no certificate":            nil,
		"another CA's certificate":  {other.client(t, "intruder", x509.ExtKeyUsageClientAuth)},
		"a server-only certificate": {ca.client(t, "server", x509.ExtKeyUsageServerAuth)},
	} {
		t.Run(name+" is refused", func(t *testing.T) {
			if code, body := post(t, certs...); code != http.StatusForbidden || !strings.Contains(body, "client not allowed") {
				t.Errorf("got %d %q, want 403", code, body)
			}
		})
	}
	t.Run("a certificate of the CA is served", func(t *testing.T) {
		code, body := post(t, ca.client(t, "another-apiserver", x509.ExtKeyUsageClientAuth))
		if code != http.StatusOK || !strings.Contains(body, `"allowed":true`) {
			t.Errorf("got %d %q, want 200 allowed", code, body)
		}
	})
}
