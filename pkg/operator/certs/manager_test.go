package certs

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// writeCounter counts the requests that are not reads.
type writeCounter struct {
	next http.RoundTripper
	mu   sync.Mutex
	reqs []string
}

func (w *writeCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		w.mu.Lock()
		w.reqs = append(w.reqs, req.Method+" "+req.URL.Path)
		w.mu.Unlock()
	}
	return w.next.RoundTrip(req)
}

// take returns the writes so far and forgets them.
func (w *writeCounter) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.reqs
	w.reqs = nil
	return r
}

type fixture struct {
	ns      string
	client  client.Client
	writes  *writeCounter
	clock   *testenv.Clock
	options Options
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "certs-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })

	wc := &writeCounter{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { wc.next = rt; return wc })
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	clk := testenv.StoppedClock(t0)
	return &fixture{
		ns: ns.Name, client: c, writes: wc, clock: clk,
		options: Options{Client: c, Reader: c, Namespace: ns.Name, Now: clk.Now},
	}
}

func (f *fixture) manager(t *testing.T) *Manager {
	t.Helper()
	m, err := NewManager(f.options)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (f *fixture) secret(t *testing.T, name string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: name}, s); err != nil {
		t.Fatalf("reading Secret %s: %v", name, err)
	}
	return s
}

// checkSecrets verifies the layout of the three Secrets and that both serving
// certificates verify against bundle at the clock's time.
func (f *fixture) checkSecrets(t *testing.T, bundle []byte) {
	t.Helper()
	now := f.clock.Now()
	caSecret := f.secret(t, CASecretName)
	checkMeta(t, caSecret)
	if !bytes.Equal(caSecret.Data[KeyCABundle], bundle) {
		t.Fatalf("CA Secret ca.crt differs from the returned bundle")
	}
	if !bytes.HasPrefix(bundle, caSecret.Data[KeyTLSCert]) {
		t.Fatalf("bundle does not start with the current CA")
	}
	for _, s := range servingSecrets {
		sec := f.secret(t, s.secret)
		checkMeta(t, sec)
		if !bytes.Equal(sec.Data[KeyCABundle], bundle) {
			t.Fatalf("Secret %s ca.crt differs from the returned bundle", s.secret)
		}
		if _, _, err := keyPairOf(sec).Parse(); err != nil {
			t.Fatalf("Secret %s: %v", s.secret, err)
		}
		verifyServing(t, bundle, sec.Data[KeyTLSCert], ServiceDNSNames(s.service, f.ns), now)
	}
}

func checkMeta(t *testing.T, s *corev1.Secret) {
	t.Helper()
	if s.Type != corev1.SecretTypeTLS {
		t.Fatalf("Secret %s has type %s, want %s", s.Name, s.Type, corev1.SecretTypeTLS)
	}
	if s.Labels[config.ManagedByLabel] != config.ManagedByValue {
		t.Fatalf("Secret %s labels %v lack %s=%s", s.Name, s.Labels, config.ManagedByLabel, config.ManagedByValue)
	}
	managers := map[string]bool{}
	for _, mf := range s.ManagedFields {
		managers[mf.Manager] = true
	}
	if !managers[config.FieldManager] {
		t.Fatalf("Secret %s field managers %v lack %s", s.Name, managers, config.FieldManager)
	}
}

func (f *fixture) ensure(t *testing.T, m *Manager) ([]byte, time.Time, []string) {
	t.Helper()
	f.writes.take()
	bundle, next, err := m.Ensure(context.Background())
	if err != nil {
		t.Fatalf("Ensure at %s: %v", f.clock.Now(), err)
	}
	if !next.After(f.clock.Now()) {
		t.Fatalf("Ensure at %s returned nextCheck %s, not in the future", f.clock.Now(), next)
	}
	return bundle, next, f.writes.take()
}

func servingCerts(t *testing.T, f *fixture) map[string][]byte {
	out := map[string][]byte{}
	for _, s := range servingSecrets {
		out[s.secret] = f.secret(t, s.secret).Data[KeyTLSCert]
	}
	return out
}

func TestEnsureLifecycle(t *testing.T) {
	f := newFixture(t)
	m := f.manager(t)

	// Empty namespace: the CA Secret and both serving Secrets are created.
	bundle, next, writes := f.ensure(t, m)
	if len(writes) != 3 {
		t.Fatalf("first Ensure wrote %v, want 3 creates", writes)
	}
	f.checkSecrets(t, bundle)
	caCert := mustCert(t, f.secret(t, CASecretName).Data[KeyTLSCert])
	if caCert.Subject.CommonName != CACommonName {
		t.Fatalf("CA common name %q", caCert.Subject.CommonName)
	}
	if want := RefreshTime(mustCert(t, f.secret(t, config.WebhookCertSecretName).Data[KeyTLSCert]), DefaultRefreshFraction); !next.Equal(want) {
		t.Fatalf("nextCheck %s, want the serving refresh time %s", next, want)
	}
	if d := next.Sub(t0); d < 59*day || d > 60*day {
		t.Fatalf("nextCheck in %s, want about 60 days", d)
	}

	// Steady state: no writes, the same bytes, also from a restarted operator.
	for i, mgr := range []*Manager{m, f.manager(t)} {
		f.clock.Set(t0.Add(time.Duration(i+1) * day))
		b, n, writes := f.ensure(t, mgr)
		if len(writes) != 0 {
			t.Fatalf("steady-state Ensure %d wrote %v", i, writes)
		}
		if !bytes.Equal(b, bundle) || !n.Equal(next) {
			t.Fatalf("steady-state Ensure %d changed the bundle or nextCheck (%s → %s)", i, next, n)
		}
	}

	// Past the refresh point the serving certificates are re-issued from the
	// same CA: the bundle does not change.
	before := servingCerts(t, f)
	f.clock.Set(next.Add(time.Second))
	b, n, writes := f.ensure(t, m)
	if len(writes) != 2 {
		t.Fatalf("rotation wrote %v, want 2 updates", writes)
	}
	if !bytes.Equal(b, bundle) {
		t.Fatal("rotating the serving certificates changed the CA bundle")
	}
	for name, old := range servingCerts(t, f) {
		if bytes.Equal(old, before[name]) {
			t.Fatalf("Secret %s was not re-issued", name)
		}
	}
	f.checkSecrets(t, bundle)
	if !n.After(next.Add(59 * day)) {
		t.Fatalf("nextCheck after rotation %s, want about 60 days after %s", n, next)
	}
	if _, _, writes := f.ensure(t, f.manager(t)); len(writes) != 0 {
		t.Fatalf("Ensure after rotation wrote %v", writes)
	}

	// A deleted Secret is recreated; nothing else changes.
	if err := env.Client.Delete(context.Background(), f.secret(t, config.MachineWebhookCertSecretName)); err != nil {
		t.Fatal(err)
	}
	kept := f.secret(t, config.WebhookCertSecretName).Data[KeyTLSCert]
	b, _, writes = f.ensure(t, m)
	if len(writes) != 1 || !bytes.Equal(b, bundle) {
		t.Fatalf("recreating wrote %v (want 1 create), bundle changed: %v", writes, !bytes.Equal(b, bundle))
	}
	if !bytes.Equal(f.secret(t, config.WebhookCertSecretName).Data[KeyTLSCert], kept) {
		t.Fatal("recreating one Secret re-issued the other")
	}
	f.checkSecrets(t, bundle)
	if _, _, writes := f.ensure(t, m); len(writes) != 0 {
		t.Fatalf("Ensure after recreating wrote %v", writes)
	}
}

// Running Ensure daily over two CA lifetimes: nothing is written before the
// returned nextCheck, both serving certificates always verify against the
// bundle, and around a CA rotation the bundle holds the old and the new CA.
func TestEnsureCARotation(t *testing.T) {
	f := newFixture(t)
	f.options.CAValidity = 30 * day
	f.options.CertValidity = 9 * day
	m := f.manager(t)

	bundle, next, _ := f.ensure(t, m)
	firstCA := f.secret(t, CASecretName).Data[KeyTLSCert]
	sawTwoCAs, sawPrune := false, false
	for now := t0.Add(day); now.Before(t0.Add(65 * day)); now = now.Add(day) {
		f.clock.Set(now)
		oldServing := servingCerts(t, f)
		oldCA := f.secret(t, CASecretName).Data[KeyTLSCert]
		b, n, writes := f.ensure(t, m)
		if now.Before(next) {
			if len(writes) != 0 || !bytes.Equal(b, bundle) {
				t.Fatalf("day %v: Ensure before nextCheck %s wrote %v", now.Sub(t0)/day, next, writes)
			}
		} else if len(writes) == 0 {
			t.Fatalf("day %v: nextCheck %s passed but nothing was written", now.Sub(t0)/day, next)
		}
		f.checkSecrets(t, b)
		certs, err := ParseCertsPEM(b)
		if err != nil {
			t.Fatal(err)
		}
		newCA := f.secret(t, CASecretName).Data[KeyTLSCert]
		if !bytes.Equal(newCA, oldCA) {
			// CA rotated: certificates from the previous CA still in use
			// must keep verifying while the kubelet catches up.
			if len(certs) != 2 || !bytes.Equal(EncodeCertsPEM(certs[1]), oldCA) {
				t.Fatalf("day %v: after a CA rotation the bundle has %d certificates, want the new and the previous CA", now.Sub(t0)/day, len(certs))
			}
			for _, s := range servingSecrets {
				verifyServing(t, b, oldServing[s.secret], ServiceDNSNames(s.service, f.ns), now)
			}
			sawTwoCAs = true
		}
		if len(certs) == 1 && len(bundle) > len(b) {
			sawPrune = true
		}
		bundle, next = b, n
	}
	if !sawTwoCAs || !sawPrune {
		t.Fatalf("over 65 days saw a two-CA bundle: %v, an expired CA dropped: %v", sawTwoCAs, sawPrune)
	}
	if bytes.Equal(f.secret(t, CASecretName).Data[KeyTLSCert], firstCA) {
		t.Fatal("the CA was never rotated")
	}
}

// labeledReader sees only Secrets with the managed-by label, like the
// operator's label-filtered informer cache.
type labeledReader struct{ client.Reader }

func (r labeledReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := r.Reader.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if obj.GetLabels()[config.ManagedByLabel] != config.ManagedByValue {
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	return nil
}

func TestEnsureRepairsSecrets(t *testing.T) {
	for _, filtered := range []bool{false, true} {
		t.Run(fmt.Sprintf("label-filtered reader %v", filtered), func(t *testing.T) {
			testRepairs(t, filtered)
		})
	}
}

func testRepairs(t *testing.T, filtered bool) {
	f := newFixture(t)
	if filtered {
		f.options.Reader = labeledReader{f.client}
	}
	ctx := context.Background()
	m := f.manager(t)
	// converge runs Ensure; a Secret the filtered reader cannot see makes the
	// first call fail with AlreadyExists after labeling it, the second fixes it.
	converge := func() ([]byte, []string) {
		t.Helper()
		if filtered {
			f.writes.take()
			_, _, err := m.Ensure(ctx)
			if !apierrors.IsAlreadyExists(err) {
				t.Fatalf("Ensure with an unlabeled Secret invisible to the reader: %v, want AlreadyExists", err)
			}
			if w := f.writes.take(); len(w) == 0 || w[len(w)-1][:5] != "PATCH" {
				t.Fatalf("Ensure did not label the invisible Secret: %v", w)
			}
		}
		b, _, w := f.ensure(t, m)
		return b, w
	}

	// A Secret of the wrong type (type is immutable) with garbage and no label.
	if err := env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: config.WebhookCertSecretName},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{KeyTLSCert: []byte("garbage")},
	}); err != nil {
		t.Fatal(err)
	}
	bundle, _ := converge()
	f.checkSecrets(t, bundle)

	// A Secret that lost its label and gained a foreign key.
	s := f.secret(t, config.MachineWebhookCertSecretName)
	delete(s.Labels, config.ManagedByLabel)
	s.Data["extra"] = []byte("kept")
	if err := env.Client.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	cert := s.Data[KeyTLSCert]
	b, writes := converge()
	want := 1 // the update restoring the label
	if filtered {
		want = 0 // the label patch of the failed first call did it
	}
	if len(writes) != want || !bytes.Equal(b, bundle) {
		t.Fatalf("restoring the label wrote %v, want %d writes and the same bundle", writes, want)
	}
	s = f.secret(t, config.MachineWebhookCertSecretName)
	if !bytes.Equal(s.Data[KeyTLSCert], cert) || string(s.Data["extra"]) != "kept" {
		t.Fatal("restoring the label re-issued the certificate or dropped a foreign key")
	}
	f.checkSecrets(t, bundle)
	if _, _, writes := f.ensure(t, m); len(writes) != 0 {
		t.Fatalf("Ensure after repairs wrote %v", writes)
	}

	// The CA key is lost (a kubernetes.io/tls Secret must keep a tls.key
	// entry, so it is garbled): a new CA is issued, the old CA certificate
	// stays in the bundle until it expires, and the serving certificates
	// move over.
	ca := f.secret(t, CASecretName)
	ca.Data[KeyTLSKey] = []byte("lost")
	if err := env.Client.Update(ctx, ca); err != nil {
		t.Fatal(err)
	}
	b, _, _ = f.ensure(t, m)
	certs, err := ParseCertsPEM(b)
	if err != nil || len(certs) != 2 || !bytes.Equal(EncodeCertsPEM(certs[1]), ca.Data[KeyTLSCert]) {
		t.Fatalf("after losing the CA key the bundle has %d certificates (%v), want the new and the old CA", len(certs), err)
	}
	f.checkSecrets(t, b)
}

// staleReader serves snapshots, like an informer cache that lags behind.
type staleReader struct{ secrets map[string]*corev1.Secret }

func (r *staleReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	s, ok := r.secrets[key.Name]
	if !ok {
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	s.DeepCopyInto(obj.(*corev1.Secret))
	return nil
}

func (r *staleReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return fmt.Errorf("not implemented")
}

// A stale read must not overwrite newer certificates: the write conflicts.
func TestEnsureWithStaleReaderConflicts(t *testing.T) {
	f := newFixture(t)
	_, next, _ := f.ensure(t, f.manager(t))
	stale := &staleReader{secrets: map[string]*corev1.Secret{}}
	for _, name := range SecretNames() {
		stale.secrets[name] = f.secret(t, name)
	}
	f.clock.Set(next.Add(time.Second))
	f.ensure(t, f.manager(t))
	current := servingCerts(t, f)

	opts := f.options
	opts.Reader = stale
	m, err := NewManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = m.Ensure(context.Background())
	if !apierrors.IsConflict(err) {
		t.Fatalf("Ensure with a stale reader: %v, want a conflict", err)
	}
	for name, cert := range servingCerts(t, f) {
		if !bytes.Equal(cert, current[name]) {
			t.Fatalf("a stale read overwrote Secret %s", name)
		}
	}
}

func TestSecretNames(t *testing.T) {
	got := fmt.Sprint(SecretNames())
	want := fmt.Sprint([]string{CASecretName, config.WebhookCertSecretName, config.MachineWebhookCertSecretName})
	if got != want {
		t.Fatalf("SecretNames = %s, want %s", got, want)
	}
}
