// Package certs issues and rotates the webhook serving certificates where
// OpenShift's service-ca does not (Manager.Ensure); Retire hands over to it.
// One CA (CASecretName, kept out of the Secrets the pods mount) signs both;
// ca.crt keeps every unexpired earlier CA.
// Not open-policy-agent/cert-controller: it puts the CA key in the mounted
// Secret, drops an old CA from caBundle at once and writes at rest.
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

	"k8s.io/client-go/util/keyutil"
)

// CACommonName is the subject common name of every CA the operator creates.
const CACommonName = "machine-api-operator-webhook-ca"

// ClockSkewAllowance backdates NotBefore for API servers whose clock is behind.
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

// ServiceDNSNames are the DNS names of a serving certificate for Service svc.
func ServiceDNSNames(svc, ns string) []string {
	return []string{svc + "." + ns + ".svc", svc + "." + ns + ".svc.cluster.local"}
}

// NewCA creates a self-signed ECDSA P-256 CA valid for validity.
func NewCA(now time.Time, validity time.Duration) (*KeyPair, error) {
	if validity <= 0 {
		return nil, fmt.Errorf("CA validity must be positive, got %s", validity)
	}
	return issue("CA", &x509.Certificate{
		Subject:               pkix.Name{CommonName: CACommonName},
		NotBefore:             notBefore(now),
		NotAfter:              notAfter(now, validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}, nil, nil)
}

// NewServingCert creates an ECDSA P-256 server certificate for dnsNames signed
// by ca, valid for validity but never beyond the CA.
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
	return issue("serving", &x509.Certificate{
		Subject:               pkix.Name{CommonName: dnsNames[0]},
		DNSNames:              slices.Clone(dnsNames),
		NotBefore:             start,
		NotAfter:              end,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}, caCert, caKey)
}

// issue signs tmpl for a new ECDSA P-256 key with a random serial; a nil
// parent makes it self-signed.
func issue(what string, tmpl, parent *x509.Certificate, parentKey crypto.Signer) (*KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating %s key: %w", what, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	tmpl.SerialNumber = serial.Add(serial, big.NewInt(1)) // never zero
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		return nil, fmt.Errorf("creating %s certificate: %w", what, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding private key: %w", err)
	}
	return &KeyPair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: pemTypeCertificate, Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: pemTypePrivateKey, Bytes: keyDER}),
	}, nil
}

// Certificate parses the (first) certificate of CertPEM.
func (k *KeyPair) Certificate() (*x509.Certificate, error) {
	certs, err := ParseCertsPEM(k.CertPEM)
	if err != nil {
		return nil, err
	}
	return certs[0], nil
}

// Parse parses both halves and checks that the key belongs to the certificate.
func (k *KeyPair) Parse() (*x509.Certificate, crypto.Signer, error) {
	cert, err := k.Certificate()
	if err != nil {
		return nil, nil, err
	}
	key, err := ParsePrivateKeyPEM(k.KeyPEM)
	if err != nil {
		return nil, nil, err
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return nil, nil, errors.New("private key does not match the certificate")
	}
	return cert, key, nil
}

// ParseCertsPEM parses every CERTIFICATE block of data; anything else, or no
// certificate, is an error.
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

// ParsePrivateKeyPEM parses a PEM private key (PKCS #8, SEC 1 or PKCS #1).
func ParsePrivateKeyPEM(data []byte) (crypto.Signer, error) {
	key, err := keyutil.ParsePrivateKeyPEM(data)
	if err != nil {
		return nil, fmt.Errorf("parsing private key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("private key of type %T cannot sign", key)
	}
	return signer, nil
}

// EncodeCertsPEM encodes certs as concatenated CERTIFICATE blocks (stable).
func EncodeCertsPEM(certs ...*x509.Certificate) []byte {
	var buf bytes.Buffer
	for _, c := range certs {
		_ = pem.Encode(&buf, &pem.Block{Type: pemTypeCertificate, Bytes: c.Raw})
	}
	return buf.Bytes()
}

// Certificates carry whole seconds: truncated for exact comparisons.
func notBefore(now time.Time) time.Time {
	return now.Add(-ClockSkewAllowance).UTC().Truncate(time.Second)
}

func notAfter(now time.Time, validity time.Duration) time.Time {
	return now.Add(validity).UTC().Truncate(time.Second)
}
