package certs

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
)

const day = 24 * time.Hour

// t0 has sub-second precision on purpose: certificates carry whole seconds.
var t0 = time.Date(2030, 3, 14, 15, 9, 26, 535897932, time.UTC)

func mustCA(t *testing.T, now time.Time, validity time.Duration) *KeyPair {
	t.Helper()
	ca, err := NewCA(now, validity)
	if err != nil {
		t.Fatalf("NewCA: %v", err)
	}
	return ca
}

func mustServing(t *testing.T, ca *KeyPair, names []string, now time.Time, validity time.Duration) *KeyPair {
	t.Helper()
	kp, err := NewServingCert(ca, names, now, validity)
	if err != nil {
		t.Fatalf("NewServingCert: %v", err)
	}
	return kp
}

func mustCert(t *testing.T, pemBytes []byte) *x509.Certificate {
	t.Helper()
	certs, err := ParseCertsPEM(pemBytes)
	if err != nil {
		t.Fatalf("parsing certificate: %v", err)
	}
	return certs[0]
}

// verifyServing checks that the serving certificate in certPEM chains to the
// bundle for every DNS name at time at, as the API server's webhook client does.
func verifyServing(t *testing.T, bundle, certPEM []byte, names []string, at time.Time) {
	t.Helper()
	if err := verifyErr(bundle, certPEM, names, at); err != nil {
		t.Fatal(err)
	}
}

func verifyErr(bundle, certPEM []byte, names []string, at time.Time) error {
	pool, err := NewCertPool(bundle)
	if err != nil {
		return err
	}
	certs, err := ParseCertsPEM(certPEM)
	if err != nil {
		return err
	}
	for _, name := range names {
		_, err := certs[0].Verify(x509.VerifyOptions{
			DNSName:     name,
			Roots:       pool,
			CurrentTime: at,
			KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func TestServiceDNSNames(t *testing.T) {
	got := ServiceDNSNames("svc", "ns")
	want := []string{"svc.ns.svc", "svc.ns.svc.cluster.local"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("ServiceDNSNames = %v, want %v", got, want)
	}
}

func TestCAAndServingCertVerify(t *testing.T) {
	names := ServiceDNSNames("machine-api-operator-webhook", "openshift-machine-api")
	ca := mustCA(t, t0, DefaultCAValidity)
	kp := mustServing(t, ca, names, t0, DefaultCertValidity)

	caCert, caKey, err := ca.Parse()
	if err != nil {
		t.Fatal(err)
	}
	if caCert.Subject.CommonName != CACommonName || !caCert.IsCA || !caCert.BasicConstraintsValid {
		t.Fatalf("CA subject %q IsCA %v: want a CA named %q", caCert.Subject.CommonName, caCert.IsCA, CACommonName)
	}
	if caCert.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Fatal("CA cannot sign certificates")
	}
	if k, ok := caKey.(*ecdsa.PrivateKey); !ok || k.Curve != elliptic.P256() {
		t.Fatalf("CA key is %T, want ECDSA P-256", caKey)
	}
	if err := caCert.CheckSignatureFrom(caCert); err != nil {
		t.Fatalf("CA is not self-signed: %v", err)
	}

	cert, key, err := kp.Parse()
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := key.(*ecdsa.PrivateKey); !ok || k.Curve != elliptic.P256() {
		t.Fatalf("serving key is %T, want ECDSA P-256", key)
	}
	if cert.IsCA {
		t.Fatal("serving certificate is a CA")
	}
	if !sets.New(cert.DNSNames...).Equal(sets.New(names...)) {
		t.Fatalf("DNS names %v, want %v", cert.DNSNames, names)
	}
	verifyServing(t, ca.CertPEM, kp.CertPEM, names, t0)
	verifyServing(t, ca.CertPEM, kp.CertPEM, names, t0.Add(DefaultCertValidity-time.Second))
	if err := verifyErr(ca.CertPEM, kp.CertPEM, []string{"other.openshift-machine-api.svc"}, t0); err == nil {
		t.Fatal("serving certificate verified for a name it was not issued for")
	}
	if err := verifyErr(ca.CertPEM, kp.CertPEM, names, t0.Add(DefaultCertValidity+time.Second)); err == nil {
		t.Fatal("serving certificate verified after it expired")
	}
	other := mustCA(t, t0, DefaultCAValidity)
	if err := verifyErr(other.CertPEM, kp.CertPEM, names, t0); err == nil {
		t.Fatal("serving certificate verified against an unrelated CA")
	}

	// What a Go webhook server (controller-runtime's certwatcher) loads.
	if _, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM); err != nil {
		t.Fatalf("tls.X509KeyPair: %v", err)
	}
}

func TestValidityWindows(t *testing.T) {
	start := t0.Add(-ClockSkewAllowance).Truncate(time.Second)
	ca := mustCA(t, t0, DefaultCAValidity)
	caCert := mustCert(t, ca.CertPEM)
	if !caCert.NotBefore.Equal(start) || !caCert.NotAfter.Equal(t0.Add(DefaultCAValidity).Truncate(time.Second)) {
		t.Fatalf("CA valid %s to %s, want %s to %s", caCert.NotBefore, caCert.NotAfter, start, t0.Add(DefaultCAValidity))
	}
	kp := mustServing(t, ca, []string{"a.b.svc"}, t0, DefaultCertValidity)
	cert := mustCert(t, kp.CertPEM)
	if !cert.NotBefore.Equal(start) || !cert.NotAfter.Equal(t0.Add(DefaultCertValidity).Truncate(time.Second)) {
		t.Fatalf("serving certificate valid %s to %s, want %s to %s", cert.NotBefore, cert.NotAfter, start, t0.Add(DefaultCertValidity))
	}

	// A serving certificate never outlives its CA.
	short := mustCA(t, t0, 10*day)
	clamped := mustCert(t, mustServing(t, short, []string{"a.b.svc"}, t0.Add(5*day), DefaultCertValidity).CertPEM)
	if !clamped.NotAfter.Equal(mustCert(t, short.CertPEM).NotAfter) {
		t.Fatalf("serving certificate expires %s, after its CA", clamped.NotAfter)
	}
	if _, err := NewServingCert(short, []string{"a.b.svc"}, t0.Add(11*day), DefaultCertValidity); err == nil {
		t.Fatal("NewServingCert signed with an expired CA")
	}

	// Default rotation points: serving after 60 days, CA after about 243.
	if got, want := RefreshTime(cert, DefaultRefreshFraction), start.Add(2*(DefaultCertValidity+ClockSkewAllowance)/3); got.Sub(want).Abs() > time.Millisecond {
		t.Fatalf("serving RefreshTime = %s, want %s", got, want)
	}
	if d := RefreshTime(caCert, DefaultRefreshFraction).Sub(t0); d < 243*day || d > 244*day {
		t.Fatalf("CA refresh after %s, want about 243 days", d)
	}
}

func TestParseErrors(t *testing.T) {
	a := mustCA(t, t0, day)
	b := mustCA(t, t0, day)
	if _, _, err := (&KeyPair{CertPEM: a.CertPEM, KeyPEM: b.KeyPEM}).Parse(); err == nil {
		t.Fatal("Parse accepted a key that does not belong to the certificate")
	}
	for name, data := range map[string][]byte{
		"empty":    nil,
		"garbage":  []byte("not PEM"),
		"key":      a.KeyPEM,
		"trailing": append(bytes.Clone(a.CertPEM), "junk"...),
		"bad DER":  []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
	} {
		if _, err := ParseCertsPEM(data); err == nil {
			t.Errorf("ParseCertsPEM(%s) succeeded", name)
		}
	}
	if _, err := ParsePrivateKeyPEM(a.CertPEM); err == nil {
		t.Fatal("ParsePrivateKeyPEM accepted a certificate")
	}
	if _, err := NewCA(t0, 0); err == nil {
		t.Fatal("NewCA accepted a zero validity")
	}
	if _, err := NewServingCert(a, nil, t0, day); err == nil {
		t.Fatal("NewServingCert accepted no DNS names")
	}
	leaf := mustServing(t, a, []string{"a.b.svc"}, t0, day)
	if _, err := NewServingCert(leaf, []string{"a.b.svc"}, t0, day); err == nil {
		t.Fatal("NewServingCert signed with a certificate that is not a CA")
	}
}

func TestBundleEncodingIsStable(t *testing.T) {
	a := mustCA(t, t0, day)
	b := mustCA(t, t0, day)
	bundle := append(bytes.Clone(a.CertPEM), b.CertPEM...)
	certs, err := ParseCertsPEM(bundle)
	if err != nil {
		t.Fatal(err)
	}
	if len(certs) != 2 {
		t.Fatalf("parsed %d certificates, want 2", len(certs))
	}
	again := EncodeCertsPEM(certs...)
	if !bytes.Equal(again, bundle) {
		t.Fatalf("re-encoding a bundle changed it:\n%s\nvs\n%s", again, bundle)
	}
	certs2, _ := ParseCertsPEM(again)
	if !bytes.Equal(EncodeCertsPEM(certs2...), again) {
		t.Fatal("bundle encoding is not stable")
	}
}

// NewCertPool returns a pool of every certificate in the PEM bundle.
func NewCertPool(bundle []byte) (*x509.CertPool, error) {
	certs, err := ParseCertsPEM(bundle)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}
