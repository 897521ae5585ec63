package testenv

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CreateNamespace creates a namespace named prefix and a random suffix, for one test, and returns its name.
func CreateNamespace(t testing.TB, c client.Client, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	return ns.Name
}

// Get reads object namespace/name (namespace "" for a cluster-scoped kind) of kind T, failing the test
// if it cannot: Get[corev1.Node](t, c, "", "n1").
func Get[T any, PT interface {
	*T
	client.Object
}](t testing.TB, c client.Reader, namespace, name string) PT {
	t.Helper()
	o := PT(new(T))
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, o); err != nil {
		t.Fatalf("reading %T %s: %v", o, types.NamespacedName{Namespace: namespace, Name: name}, err)
	}
	return o
}
