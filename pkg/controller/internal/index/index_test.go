package index

import (
	"context"
	"net/http"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// newCache builds a cache over all namespaces that is never started, so no
// API server is needed: registering indexes only creates informers.
func newCache(t *testing.T) cache.Cache {
	t.Helper()
	s := runtime.NewScheme()
	if err := machinev1beta1.Install(s); err != nil {
		t.Fatal(err)
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(machinev1beta1.GroupVersion.WithKind("Machine"), meta.RESTScopeNamespace)
	c, err := cache.New(&rest.Config{Host: "https://127.0.0.1:1"}, cache.Options{Scheme: s, Mapper: mapper, HTTPClient: http.DefaultClient})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func nodeRef(o client.Object) []string {
	if m, ok := o.(*machinev1beta1.Machine); ok && m.Status.NodeRef != nil {
		return []string{m.Status.NodeRef.Name}
	}
	return nil
}

// A second registration of a name (another controller of the same manager)
// is recognised by the name and leaves the first one in place; the cache
// itself would refuse it.
func TestRegisterTwice(t *testing.T) {
	ctx := context.Background()
	c := newCache(t)
	idx := Index{Object: &machinev1beta1.Machine{}, Name: "status.nodeRef.name", Extract: nodeRef}
	if ok, err := Registered(ctx, c, idx.Object, idx.Name); err != nil || ok {
		t.Fatalf("before: Registered = %v, %v", ok, err)
	}
	if err := Register(ctx, c, idx); err != nil {
		t.Fatal(err)
	}
	if ok, err := Registered(ctx, c, idx.Object, idx.Name); err != nil || !ok {
		t.Fatalf("after: Registered = %v, %v (controller-runtime changed how it names field indexes?)", ok, err)
	}
	if err := Register(ctx, c, idx); err != nil {
		t.Errorf("second registration: %v", err)
	}
	if err := c.IndexField(ctx, idx.Object, idx.Name, idx.Extract); err == nil {
		t.Error("the cache accepted the same index twice: Register's check would be unnecessary")
	}
	other := Index{Object: &machinev1beta1.Machine{}, Name: "spec.providerID", Extract: nodeRef}
	if err := Register(ctx, c, other); err != nil {
		t.Fatal(err)
	}
	if ok, _ := Registered(ctx, c, other.Object, other.Name); !ok {
		t.Error("a second index name was not registered")
	}
}
