//go:build pins

// Package pins keeps the dependencies pinned by DESIGN.md §5 in go.mod until
// the code that uses them lands (go mod tidy drops unused requirements). It is
// never built: the "pins" build tag is not set anywhere. Remove an import once
// real code imports the module.
package pins

import (
	_ "github.com/openshift/client-go/config/clientset/versioned"
	_ "k8s.io/kubectl/pkg/drain"
	_ "sigs.k8s.io/kustomize/api/krusty"
)
