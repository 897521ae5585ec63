package certs

import (
	"crypto/x509"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func tlsSecret(certPEM, keyPEM []byte) *corev1.Secret {
	return &corev1.Secret{Type: corev1.SecretTypeTLS, Data: map[string][]byte{KeyTLSCert: certPEM, KeyTLSKey: keyPEM}}
}

func TestDecide(t *testing.T) {
	names := ServiceDNSNames("svc", "ns")
	ca := mustCA(t, t0, DefaultCAValidity)
	caCert := mustCert(t, ca.CertPEM)
	kp := mustServing(t, ca, names, t0, DefaultCertValidity)
	otherCA := mustCA(t, t0, DefaultCAValidity)
	foreign := mustServing(t, otherCA, names, t0, DefaultCertValidity)
	wrongName := mustServing(t, ca, ServiceDNSNames("other", "ns"), t0, DefaultCertValidity)
	oneName := mustServing(t, ca, names[:1], t0, DefaultCertValidity)
	reversed := mustServing(t, ca, []string{names[1], names[0]}, t0, DefaultCertValidity)
	fresh := tlsSecret(kp.CertPEM, kp.KeyPEM)

	tests := []struct {
		name   string
		secret *corev1.Secret
		ca     *x509.Certificate
		now    time.Time
		want   Action
		reason string
	}{
		{"missing secret", nil, caCert, t0, Issue, "does not exist"},
		{"garbage data", tlsSecret([]byte("garbage"), []byte("garbage")), caCert, t0, Issue, "no usable key pair"},
		{"no data", &corev1.Secret{}, caCert, t0, Issue, "no usable key pair"},
		{"key of another certificate", tlsSecret(kp.CertPEM, foreign.KeyPEM), caCert, t0, Issue, "does not match"},
		{"wrong DNS name", tlsSecret(wrongName.CertPEM, wrongName.KeyPEM), caCert, t0, Issue, "DNS names"},
		{"missing DNS name", tlsSecret(oneName.CertPEM, oneName.KeyPEM), caCert, t0, Issue, "DNS names"},
		{"DNS names in another order", tlsSecret(reversed.CertPEM, reversed.KeyPEM), caCert, t0, Keep, "valid until"},
		{"issued by another CA", tlsSecret(foreign.CertPEM, foreign.KeyPEM), caCert, t0, Issue, "not issued by the current CA"},
		{"fresh", fresh, caCert, t0, Keep, "valid until"},
		{"before the refresh point", fresh, caCert, t0.Add(59 * day), Keep, "valid until"},
		{"near expiry", fresh, caCert, t0.Add(61 * day), Rotate, "less than 33% of its validity left"},
		{"expired", fresh, caCert, t0.Add(91 * day), Issue, "expired"},
		{"not yet valid", fresh, caCert, t0.Add(-time.Hour), Issue, "not valid before"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := Decide(tt.secret, tt.ca, names, tt.now, Options{})
			if got != tt.want || !strings.Contains(reason, tt.reason) {
				t.Fatalf("Decide = %s (%s), want %s (…%s…)", got, reason, tt.want, tt.reason)
			}
		})
	}
}

func TestDecideCA(t *testing.T) {
	ca := mustCA(t, t0, DefaultCAValidity)
	other := mustCA(t, t0, DefaultCAValidity)
	leaf := mustServing(t, ca, []string{"a.b.svc"}, t0, DefaultCertValidity)
	fresh := tlsSecret(ca.CertPEM, ca.KeyPEM)

	tests := []struct {
		name   string
		secret *corev1.Secret
		now    time.Time
		opts   Options
		want   Action
		reason string
	}{
		{"missing secret", nil, t0, Options{}, Issue, "does not exist"},
		{"garbage data", tlsSecret([]byte("garbage"), ca.KeyPEM), t0, Options{}, Issue, "no usable key pair"},
		{"lost key", tlsSecret(ca.CertPEM, nil), t0, Options{}, Issue, "no usable key pair"},
		{"key of another CA", tlsSecret(ca.CertPEM, other.KeyPEM), t0, Options{}, Issue, "does not match"},
		{"not a CA", tlsSecret(leaf.CertPEM, leaf.KeyPEM), t0, Options{}, Issue, "not a CA"},
		{"fresh", fresh, t0, Options{}, Keep, "valid until"},
		{"before the refresh point", fresh, t0.Add(243 * day), Options{}, Keep, "valid until"},
		{"CA near expiry", fresh, t0.Add(244 * day), Options{}, Rotate, "less than 33%"},
		{"CA near expiry with a smaller fraction", fresh, t0.Add(300 * day), Options{RefreshFraction: 0.1}, Keep, "valid until"},
		{"CA expired", fresh, t0.Add(366 * day), Options{}, Issue, "expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := DecideCA(tt.secret, tt.now, tt.opts)
			if got != tt.want || !strings.Contains(reason, tt.reason) {
				t.Fatalf("DecideCA = %s (%s), want %s (…%s…)", got, reason, tt.want, tt.reason)
			}
		})
	}
}

func TestOptionsDefaults(t *testing.T) {
	o, err := Options{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.CAValidity != DefaultCAValidity || o.CertValidity != DefaultCertValidity || o.RefreshFraction != DefaultRefreshFraction || o.Clock == nil {
		t.Fatalf("defaults not applied: %+v", o)
	}
	for _, bad := range []Options{{RefreshFraction: 1}, {RefreshFraction: -0.5}, {CAValidity: -time.Hour}} {
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("withDefaults(%+v) accepted invalid options", bad)
		}
	}
	if _, err := NewManager(Options{Namespace: "x"}); err == nil {
		t.Error("NewManager accepted no Client")
	}
}
