// Package certs issues and rotates the webhook serving certificates on
// clusters without OpenShift's service-ca operator.
//
// On OpenShift the service-ca operator issues the serving certificates (the
// webhook Services carry its annotation) and injects the CA bundle into the
// webhook configurations; the operator tells the two cases apart at every
// sync, and when service-ca appears the Manager's Retire deletes what it
// issued. On vanilla Kubernetes the operator runs a Manager whose Ensure
// keeps three Secrets in the operator namespace up to date and returns the CA
// bundle to put in the ValidatingWebhookConfiguration and
// MutatingWebhookConfiguration.
//
// # Secret layout
//
// One CA signs both serving certificates, so both webhook configurations carry
// the same caBundle:
//
//   - CASecretName ("machine-api-operator-webhook-ca"), type kubernetes.io/tls:
//     tls.crt is the current CA certificate, tls.key its private key, ca.crt the
//     CA bundle (the current CA first, then every earlier CA that has not yet
//     expired). No pod mounts this Secret.
//   - config.WebhookCertSecretName and config.MachineWebhookCertSecretName,
//     type kubernetes.io/tls: tls.crt is the serving certificate for the
//     Service (DNS names <svc>.<ns>.svc and <svc>.<ns>.svc.cluster.local), tls.key
//     its private key, ca.crt a copy of the CA bundle. The webhook servers mount
//     these.
//
// All three carry config.ManagedByLabel=config.ManagedByValue.
//
// The CA private key is kept in the cluster (in its own Secret, readable by
// whoever can read Secrets in the operator namespace) so that a restarted
// operator keeps issuing serving certificates from the same CA and the
// webhook configurations' caBundle does not change on every restart. Keeping
// it out of the serving Secrets means the webhook server pods, which mount
// those, never see it.
//
// # Validity and rotation
//
// By default the CA is valid for DefaultCAValidity (365 days) and a serving
// certificate for DefaultCertValidity (90 days, never beyond its CA). A
// certificate is rotated once less than DefaultRefreshFraction (1/3) of its
// validity is left: the serving certificates after about 60 days, the CA after
// about 243 days. When the CA is rotated the previous CA stays in the bundle
// until it expires, so webhook servers still presenting a certificate from
// the old CA (the kubelet updates mounted Secrets with a delay) keep being
// trusted; the serving certificates are re-issued from the new CA in the same
// Ensure. Certificates are backdated by ClockSkewAllowance.
//
// Kept instead of github.com/open-policy-agent/cert-controller: it keeps the
// CA key in the serving Secret the webhook pods mount, gives each Secret its
// own CA, drops the old CA from caBundle at once on a CA rotation, and updates
// the webhook configurations on every reconcile (writes at rest).
package certs

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"
)

// CACommonName is the subject common name of every CA the operator creates.
const CACommonName = "machine-api-operator-webhook-ca"

// ClockSkewAllowance is how far NotBefore is set before the issuing time, so
// that an API server whose clock is slightly behind accepts new certificates.
const ClockSkewAllowance = 5 * time.Minute

const (
	pemTypeCertificate = "CERTIFICATE"
	pemTypePrivateKey  = "PRIVATE KEY"
)

// KeyPair is a PEM certificate and its PEM (PKCS #8) private key.
type KeyPair struct {
	CertPEM []byte
	KeyPEM  []byte
}

// ServiceDNSNames are the DNS names a serving certificate for Service svc in
// namespace ns is issued for.
func ServiceDNSNames(svc, ns string) []string {
	return []string{svc + "." + ns + ".svc", svc + "." + ns + ".svc.cluster.local"}
}

// NewCA creates a self-signed ECDSA P-256 CA valid from now (less
// ClockSkewAllowance) for validity.
func NewCA(now time.Time, validity time.Duration) (*KeyPair, error) {
	if validity <= 0 {
		return nil, fmt.Errorf("CA validity must be positive, got %s", validity)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating CA key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: CACommonName},
		NotBefore:             notBefore(now),
		NotAfter:              notAfter(now, validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("creating CA certificate: %w", err)
	}
	return newKeyPair(der, key)
}

// NewServingCert creates an ECDSA P-256 server certificate for dnsNames signed
// by ca, valid from now (less ClockSkewAllowance) for validity but never
// beyond the CA's own expiry.
func NewServingCert(ca *KeyPair, dnsNames []string, now time.Time, validity time.Duration) (*KeyPair, error) {
	if len(dnsNames) == 0 {
		return nil, errors.New("a serving certificate needs at least one DNS name")
	}
	if validity <= 0 {
		return nil, fmt.Errorf("serving certificate validity must be positive, got %s", validity)
	}
	if ca == nil {
		return nil, errors.New("no CA to sign the serving certificate")
	}
	caCert, caKey, err := ca.Parse()
	if err != nil {
		return nil, fmt.Errorf("CA: %w", err)
	}
	if !caCert.IsCA {
		return nil, errors.New("CA: certificate is not a CA")
	}
	end := notAfter(now, validity)
	if end.After(caCert.NotAfter) {
		end = caCert.NotAfter
	}
	start := notBefore(now)
	if !end.After(start) {
		return nil, fmt.Errorf("CA expired at %s", caCert.NotAfter.Format(time.RFC3339))
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating serving key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: dnsNames[0]},
		DNSNames:              slices.Clone(dnsNames),
		NotBefore:             start,
		NotAfter:              end,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, key.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("creating serving certificate: %w", err)
	}
	return newKeyPair(der, key)
}

// Certificate parses the (first) certificate of CertPEM.
func (k *KeyPair) Certificate() (*x509.Certificate, error) {
	certs, err := ParseCertsPEM(k.CertPEM)
	if err != nil {
		return nil, err
	}
	return certs[0], nil
}

// PrivateKey parses KeyPEM (PKCS #8, SEC 1 "EC PRIVATE KEY" or PKCS #1).
func (k *KeyPair) PrivateKey() (crypto.Signer, error) {
	return ParsePrivateKeyPEM(k.KeyPEM)
}

// Parse parses both halves and checks that the key belongs to the certificate.
func (k *KeyPair) Parse() (*x509.Certificate, crypto.Signer, error) {
	cert, err := k.Certificate()
	if err != nil {
		return nil, nil, err
	}
	key, err := k.PrivateKey()
	if err != nil {
		return nil, nil, err
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return nil, nil, errors.New("private key does not match the certificate")
	}
	return cert, key, nil
}

// ParseCertsPEM parses every CERTIFICATE block of data; other block types are
// an error, and so is data without any certificate.
func ParseCertsPEM(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != pemTypeCertificate {
			return nil, fmt.Errorf("unexpected PEM block %q, want %q", block.Type, pemTypeCertificate)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parsing certificate: %w", err)
		}
		certs = append(certs, cert)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, errors.New("trailing data after the PEM certificates")
	}
	return certs, nil
}

// ParsePrivateKeyPEM parses one PEM private key.
func ParsePrivateKeyPEM(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM private key found")
	}
	var (
		key any
		err error
	)
	switch block.Type {
	case pemTypePrivateKey:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("unexpected PEM block %q for a private key", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("parsing private key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("private key of type %T cannot sign", key)
	}
	return signer, nil
}

// EncodeCertsPEM encodes certs as concatenated CERTIFICATE blocks. The result
// depends only on the certificates, so re-encoding a parsed bundle is stable.
func EncodeCertsPEM(certs ...*x509.Certificate) []byte {
	var buf bytes.Buffer
	for _, c := range certs {
		_ = pem.Encode(&buf, &pem.Block{Type: pemTypeCertificate, Bytes: c.Raw})
	}
	return buf.Bytes()
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

func newKeyPair(der []byte, key *ecdsa.PrivateKey) (*KeyPair, error) {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding private key: %w", err)
	}
	return &KeyPair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: pemTypeCertificate, Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: pemTypePrivateKey, Bytes: keyDER}),
	}, nil
}

func randomSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	return serial.Add(serial, big.NewInt(1)), nil // never zero
}

// Certificates carry whole seconds; truncate so callers can compare exactly.
func notBefore(now time.Time) time.Time {
	return now.Add(-ClockSkewAllowance).UTC().Truncate(time.Second)
}

func notAfter(now time.Time, validity time.Duration) time.Time {
	return now.Add(validity).UTC().Truncate(time.Second)
}
