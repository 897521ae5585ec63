package certs

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	discoveryfake "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestDetectServiceCA(t *testing.T) {
	operatorV1 := func(names ...string) *metav1.APIResourceList {
		l := &metav1.APIResourceList{GroupVersion: "operator.openshift.io/v1"}
		for _, n := range names {
			l.APIResources = append(l.APIResources, metav1.APIResource{Name: n})
		}
		return l
	}
	tests := []struct {
		name      string
		resources []*metav1.APIResourceList
		want      bool
	}{
		{"vanilla Kubernetes", []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "secrets"}}}}, false},
		{"OpenShift", []*metav1.APIResourceList{operatorV1("networks", "servicecas", "servicecas/status")}, true},
		{"operator.openshift.io without servicecas", []*metav1.APIResourceList{operatorV1("networks")}, false},
		{"servicecas in another version", []*metav1.APIResourceList{{GroupVersion: "operator.openshift.io/v1alpha1", APIResources: []metav1.APIResource{{Name: "servicecas"}}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dc := &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{Resources: tt.resources}}
			got, err := DetectServiceCA(context.Background(), dc)
			if err != nil || got != tt.want {
				t.Fatalf("DetectServiceCA = %v, %v; want %v, nil", got, err, tt.want)
			}
		})
	}

	t.Run("discovery error", func(t *testing.T) {
		boom := errors.New("connection refused")
		fake := &clienttesting.Fake{Resources: []*metav1.APIResourceList{operatorV1("servicecas")}}
		fake.AddReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, boom })
		if got, err := DetectServiceCA(context.Background(), &discoveryfake.FakeDiscovery{Fake: fake}); !errors.Is(err, boom) || got {
			t.Fatalf("DetectServiceCA = %v, %v; want false and the discovery error", got, err)
		}
	})
}

// A real API server without the OpenShift operator API answers 404 for the
// group version, which must read as "no service-ca", not as an error.
func TestDetectServiceCAOnEnvtest(t *testing.T) {
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DetectServiceCA(context.Background(), dc)
	if err != nil || got {
		t.Fatalf("DetectServiceCA = %v, %v; want false, nil", got, err)
	}
}
