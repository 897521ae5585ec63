package certs

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// TestRetire: when service-ca takes over, the Secrets the Manager issued are
// deleted (service-ca refuses to write into a Secret it did not create), a
// Secret service-ca issued is kept, and a second Retire writes nothing.
func TestRetire(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	m := f.manager(t)
	f.ensure(t, m)

	// service-ca already re-issued one of them (its annotation, no label
	// removal: a Secret it adopted keeps the labels it had).
	byServiceCA := f.secret(t, config.MachineWebhookCertSecretName)
	byServiceCA.Annotations = map[string]string{serviceCAOriginAnnotation: "5d0c3a1e-uid"}
	if err := env.Client.Update(ctx, byServiceCA); err != nil {
		t.Fatal(err)
	}

	f.writes.take()
	if err := m.Retire(ctx); err != nil {
		t.Fatal(err)
	}
	if w := f.writes.take(); len(w) != 2 {
		t.Errorf("Retire wrote %v, want 2 deletes (the CA and one serving Secret)", w)
	}
	for _, name := range []string{CASecretName, config.WebhookCertSecretName} {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: name}, &corev1.Secret{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("Secret %s not deleted (err %v)", name, err)
		}
	}
	f.secret(t, config.MachineWebhookCertSecretName) // kept

	if err := m.Retire(ctx); err != nil {
		t.Fatal(err)
	}
	if w := f.writes.take(); len(w) != 0 {
		t.Errorf("second Retire wrote %v, want nothing", w)
	}
}
