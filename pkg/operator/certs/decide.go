package certs

import (
	"cmp"
	"crypto/x509"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

// Defaults for Options.
const (
	DefaultCAValidity   = 365 * 24 * time.Hour
	DefaultCertValidity = 90 * 24 * time.Hour // never beyond its CA
	// DefaultRefreshFraction: rotate once less than this fraction is left.
	DefaultRefreshFraction = 1.0 / 3
)

// Secret data keys.
const (
	KeyTLSCert  = corev1.TLSCertKey
	KeyTLSKey   = corev1.TLSPrivateKeyKey
	KeyCABundle = "ca.crt" // the bundle the webhook configurations carry
)

// Action is what Decide says to do with a certificate Secret.
type Action string

// Actions.
const (
	Keep   Action = "Keep"   // valid and not due
	Issue  Action = "Issue"  // no usable certificate
	Rotate Action = "Rotate" // valid, less than RefreshFraction left
)

// withDefaults fills in zero fields and checks the rest.
func (o Options) withDefaults() (Options, error) {
	o.CAValidity, o.CertValidity = cmp.Or(o.CAValidity, DefaultCAValidity), cmp.Or(o.CertValidity, DefaultCertValidity)
	o.RefreshFraction = cmp.Or(o.RefreshFraction, DefaultRefreshFraction)
	if o.CAValidity < 0 || o.CertValidity < 0 {
		return o, fmt.Errorf("certificate validities must be positive (CA %s, serving %s)", o.CAValidity, o.CertValidity)
	}
	if o.RefreshFraction <= 0 || o.RefreshFraction >= 1 {
		return o, fmt.Errorf("RefreshFraction must be between 0 and 1 exclusive, got %v", o.RefreshFraction)
	}
	o.Clock = cmp.Or[clock.PassiveClock](o.Clock, clock.RealClock{})
	return o, nil
}

func (o Options) fraction() float64 {
	if o.RefreshFraction <= 0 || o.RefreshFraction >= 1 {
		return DefaultRefreshFraction
	}
	return o.RefreshFraction
}

// RefreshTime is when less than fraction of cert's validity is left.
func RefreshTime(cert *x509.Certificate, fraction float64) time.Time {
	total := cert.NotAfter.Sub(cert.NotBefore)
	return cert.NotAfter.Add(-time.Duration(float64(total) * fraction))
}

// DecideCA says what to do with the CA Secret existing (nil if absent).
func DecideCA(existing *corev1.Secret, now time.Time, opts Options) (Action, string) {
	if existing == nil {
		return Issue, "CA Secret does not exist"
	}
	cert, _, err := keyPairOf(existing).Parse()
	if err != nil {
		return Issue, fmt.Sprintf("CA Secret holds no usable key pair: %v", err)
	}
	if !cert.IsCA {
		return Issue, "CA Secret certificate is not a CA"
	}
	return decideValidity("CA", cert, now, opts.fraction())
}

// Decide says what to do with the serving-certificate Secret existing (nil if
// absent) given the current CA and the exact DNS names (any order).
func Decide(existing *corev1.Secret, ca *x509.Certificate, dnsNames []string, now time.Time, opts Options) (Action, string) {
	if existing == nil {
		return Issue, "serving certificate Secret does not exist"
	}
	cert, _, err := keyPairOf(existing).Parse()
	if err != nil {
		return Issue, fmt.Sprintf("serving certificate Secret holds no usable key pair: %v", err)
	}
	if !sets.New(cert.DNSNames...).Equal(sets.New(dnsNames...)) {
		return Issue, fmt.Sprintf("serving certificate is for DNS names %v, want %v", cert.DNSNames, dnsNames)
	}
	if ca == nil {
		return Issue, "no CA to check the serving certificate against"
	}
	if err := cert.CheckSignatureFrom(ca); err != nil {
		return Issue, "serving certificate was not issued by the current CA"
	}
	return decideValidity("serving certificate", cert, now, opts.fraction())
}

func decideValidity(what string, cert *x509.Certificate, now time.Time, fraction float64) (Action, string) {
	switch {
	case now.Before(cert.NotBefore):
		return Issue, fmt.Sprintf("%s is not valid before %s", what, cert.NotBefore.Format(time.RFC3339))
	case !now.Before(cert.NotAfter):
		return Issue, fmt.Sprintf("%s expired at %s", what, cert.NotAfter.Format(time.RFC3339))
	case !now.Before(RefreshTime(cert, fraction)):
		return Rotate, fmt.Sprintf("%s expires at %s, less than %.0f%% of its validity left",
			what, cert.NotAfter.Format(time.RFC3339), fraction*100)
	}
	return Keep, fmt.Sprintf("%s valid until %s", what, cert.NotAfter.Format(time.RFC3339))
}

func keyPairOf(s *corev1.Secret) *KeyPair {
	return &KeyPair{CertPEM: s.Data[KeyTLSCert], KeyPEM: s.Data[KeyTLSKey]}
}
