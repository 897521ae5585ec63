//go:build e2e

// Package e2e is the black-box suite run by `make test-e2e` against the cluster
// in $KUBECONFIG. It never assumes it created that cluster: everything it makes
// lives in namespaces or objects with generated names and is removed afterwards.
package e2e

import (
	"fmt"
	"os"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
)

// cluster is the client for $KUBECONFIG, set up by TestMain. It can also
// watch, for tests that must see every event rather than sample state.
var cluster client.WithWatch

func TestMain(m *testing.M) {
	path := os.Getenv("KUBECONFIG")
	if path == "" {
		fmt.Fprintln(os.Stderr, "e2e: KUBECONFIG is not set: point it at the cluster to test (make cluster-up writes .local/kubeconfig)")
		os.Exit(1)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: loading KUBECONFIG %s: %v\n", path, err)
		os.Exit(1)
	}
	cluster, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: creating client: %v\n", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
