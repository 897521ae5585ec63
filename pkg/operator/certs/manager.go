package certs

import (
	"bytes"
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// CASecretName holds the CA that signs both webhook serving certificates.
const CASecretName = "machine-api-operator-webhook-ca"

// servingSecrets pairs each webhook Service with its serving-cert Secret.
var servingSecrets = []struct{ service, secret string }{
	{config.WebhookServiceName, config.WebhookCertSecretName},
	{config.MachineWebhookServiceName, config.MachineWebhookCertSecretName},
}

// SecretNames are the Secrets a Manager owns in its namespace (never pruned
// while certificates are self-managed).
func SecretNames() []string {
	names := []string{CASecretName}
	for _, s := range servingSecrets {
		names = append(names, s.secret)
	}
	return names
}

// Options configure a Manager (Decide and DecideCA use only the validity fields).
type Options struct {
	// Client writes the Secrets. Required.
	Client client.Client
	// Reader reads the Secrets; defaults to Client (a stale read only fails the write).
	Reader client.Reader
	// Namespace holds the Secrets. Required.
	Namespace string
	// Clock tells the time; defaults to the real clock.
	Clock clock.PassiveClock
	// Zero: DefaultCAValidity, DefaultCertValidity, DefaultRefreshFraction.
	CAValidity, CertValidity time.Duration
	RefreshFraction          float64
}

// Manager keeps the webhook serving certificates issued and fresh. It is
// stateless: a restarted operator carries on with the same CA and bundle.
type Manager struct {
	opts Options
}

// NewManager checks opts and fills in the defaults.
func NewManager(opts Options) (*Manager, error) {
	if opts.Client == nil {
		return nil, errors.New("certs: Options.Client is required")
	}
	if opts.Namespace == "" {
		return nil, errors.New("certs: Options.Namespace is required")
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	opts.Reader = cmp.Or(opts.Reader, client.Reader(opts.Client))
	return &Manager{opts: opts}, nil
}

// Ensure issues or rotates the certificates as needed (at rest it only reads) and
// returns the CA bundle to inject and when anything next needs rotating.
func (m *Manager) Ensure(ctx context.Context) (caBundle []byte, nextCheck time.Time, err error) {
	now := m.opts.Clock.Now()
	ca, caCert, bundle, next, err := m.ensureCA(ctx, now)
	if err != nil {
		return nil, time.Time{}, err
	}
	for _, s := range servingSecrets {
		dnsNames := ServiceDNSNames(s.service, m.opts.Namespace)
		n, err := m.ensureServing(ctx, s.secret, dnsNames, ca, caCert, bundle, now)
		if err != nil {
			return nil, time.Time{}, err
		}
		if n.Before(next) {
			next = n
		}
	}
	return bytes.Clone(bundle), next, nil
}

// ensureCA returns the current CA, the bundle and when the CA Secret next
// needs attention.
func (m *Manager) ensureCA(ctx context.Context, now time.Time) (*KeyPair, *x509.Certificate, []byte, time.Time, error) {
	existing, err := m.get(ctx, CASecretName)
	if err != nil {
		return nil, nil, nil, time.Time{}, err
	}
	action, reason := DecideCA(existing, now, m.opts)

	var (
		ca       *KeyPair
		previous []*x509.Certificate
	)
	if existing != nil {
		// Earlier CAs may have signed certificates still in use.
		if cert, err := keyPairOf(existing).Certificate(); err == nil {
			previous = append(previous, cert)
		}
		if certs, err := ParseCertsPEM(existing.Data[KeyCABundle]); err == nil {
			previous = append(previous, certs...)
		}
	}
	if action == Keep {
		ca = keyPairOf(existing)
	} else {
		if ca, err = NewCA(now, m.opts.CAValidity); err != nil {
			return nil, nil, nil, time.Time{}, err
		}
		log.FromContext(ctx).Info("issuing webhook CA", "secret", CASecretName, "action", action, "reason", reason)
	}
	caCert, err := ca.Certificate()
	if err != nil {
		return nil, nil, nil, time.Time{}, err
	}

	certs := []*x509.Certificate{caCert}
	next := RefreshTime(caCert, m.opts.RefreshFraction)
	for _, c := range previous {
		if !c.IsCA || !now.Before(c.NotAfter) || slices.ContainsFunc(certs, c.Equal) {
			continue
		}
		certs = append(certs, c)
		if c.NotAfter.Before(next) {
			next = c.NotAfter
		}
	}
	bundle := EncodeCertsPEM(certs...)
	if err := m.write(ctx, existing, CASecretName, ca, bundle); err != nil {
		return nil, nil, nil, time.Time{}, err
	}
	return ca, caCert, bundle, next, nil
}

// ensureServing returns when the serving certificate is due for rotation.
func (m *Manager) ensureServing(ctx context.Context, name string, dnsNames []string, ca *KeyPair, caCert *x509.Certificate, bundle []byte, now time.Time) (time.Time, error) {
	existing, err := m.get(ctx, name)
	if err != nil {
		return time.Time{}, err
	}
	action, reason := Decide(existing, caCert, dnsNames, now, m.opts)
	var kp *KeyPair
	if action == Keep {
		kp = keyPairOf(existing)
	} else {
		if kp, err = NewServingCert(ca, dnsNames, now, m.opts.CertValidity); err != nil {
			return time.Time{}, fmt.Errorf("issuing serving certificate for Secret %s/%s: %w", m.opts.Namespace, name, err)
		}
		log.FromContext(ctx).Info("issuing webhook serving certificate", "secret", name, "action", action, "reason", reason)
	}
	cert, err := kp.Certificate()
	if err != nil {
		return time.Time{}, err
	}
	if err := m.write(ctx, existing, name, kp, bundle); err != nil {
		return time.Time{}, err
	}
	return RefreshTime(cert, m.opts.RefreshFraction), nil
}

func (m *Manager) get(ctx context.Context, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	err := m.opts.Reader.Get(ctx, client.ObjectKey{Namespace: m.opts.Namespace, Name: name}, s)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", m.opts.Namespace, name, err)
	}
	return s, nil
}

// write stores kp and bundle unless existing holds them, keeping its other keys;
// a Secret of another type (immutable) is deleted and recreated.
func (m *Manager) write(ctx context.Context, existing *corev1.Secret, name string, kp *KeyPair, bundle []byte) error {
	data := map[string][]byte{KeyTLSCert: kp.CertPEM, KeyTLSKey: kp.KeyPEM, KeyCABundle: bundle}
	if existing != nil && existing.Type == corev1.SecretTypeTLS && existing.Labels[config.ManagedByLabel] == config.ManagedByValue &&
		maps.EqualFunc(data, map[string][]byte{KeyTLSCert: existing.Data[KeyTLSCert], KeyTLSKey: existing.Data[KeyTLSKey], KeyCABundle: existing.Data[KeyCABundle]}, bytes.Equal) {
		return nil
	}
	owner := client.FieldOwner(config.FieldManager)
	if existing != nil && existing.Type != corev1.SecretTypeTLS {
		uid, rv := existing.UID, existing.ResourceVersion
		err := m.opts.Client.Delete(ctx, existing, client.Preconditions{UID: &uid, ResourceVersion: &rv})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting Secret %s/%s of type %s to recreate it as %s: %w",
				m.opts.Namespace, name, existing.Type, corev1.SecretTypeTLS, err)
		}
		existing = nil
	}
	if existing == nil {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: m.opts.Namespace,
				Name:      name,
				Labels:    map[string]string{config.ManagedByLabel: config.ManagedByValue},
			},
			Type: corev1.SecretTypeTLS,
			Data: data,
		}
		err := m.opts.Client.Create(ctx, s, owner)
		if apierrors.IsAlreadyExists(err) {
			return m.adopt(ctx, name, err)
		}
		if err != nil {
			return fmt.Errorf("creating Secret %s/%s: %w", m.opts.Namespace, name, err)
		}
		return nil
	}
	s := existing.DeepCopy()
	metav1.SetMetaDataLabel(&s.ObjectMeta, config.ManagedByLabel, config.ManagedByValue)
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	maps.Copy(s.Data, data)
	s.StringData = nil
	if err := m.opts.Client.Update(ctx, s, owner); err != nil {
		return fmt.Errorf("updating Secret %s/%s: %w", m.opts.Namespace, name, err)
	}
	return nil
}

// adopt labels a Secret that exists although Reader did not return it, so the
// next Ensure sees it; the error wraps alreadyExists so the caller retries.
func (m *Manager) adopt(ctx context.Context, name string, alreadyExists error) error {
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, config.ManagedByLabel, config.ManagedByValue)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.opts.Namespace, Name: name}}
	if err := m.opts.Client.Patch(ctx, s, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner(config.FieldManager)); err != nil {
		// Only alreadyExists is wrapped: the caller retries on it, and
		// apierrors.IsAlreadyExists would find the patch's status first.
		return fmt.Errorf("secret %s/%s exists but was not read (labeling it %s=%s failed: %v): %w",
			m.opts.Namespace, name, config.ManagedByLabel, config.ManagedByValue, err, alreadyExists) //nolint:errorlint // see above
	}
	return fmt.Errorf("secret %s/%s exists but was not read (stale cache, or it lacked the %s label, now added); retry: %w",
		m.opts.Namespace, name, config.ManagedByLabel, alreadyExists)
}

// serviceCAOriginAnnotation marks a Secret service-ca issued for a Service.
const serviceCAOriginAnnotation = "service.beta.openshift.io/originating-service-uid"

// Retire deletes the Secrets this Manager issued, as service-ca refuses to
// write into a Secret it did not create.
func (m *Manager) Retire(ctx context.Context) error {
	for _, name := range SecretNames() {
		s, err := m.get(ctx, name)
		if err != nil {
			return err
		}
		if s == nil || s.Labels[config.ManagedByLabel] != config.ManagedByValue || s.Annotations[serviceCAOriginAnnotation] != "" {
			continue
		}
		uid := s.UID
		err = m.opts.Client.Delete(ctx, s, client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting Secret %s/%s: %w", m.opts.Namespace, name, err)
		}
		log.FromContext(ctx).Info("deleted a webhook certificate Secret the operator issued: service-ca issues them now", "secret", name)
	}
	return nil
}
