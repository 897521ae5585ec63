package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOperatorDependencies: the operator binary links no controller package
// (their dependencies, such as kubectl's drain, have no business in the
// operator) and no kubectl package at all. Names every binary shares are in
// the leaf package pkg/names.
func TestOperatorDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	const module = "github.com/machine-api-operator/machine-api-operator/"
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps printed %d packages; the check would be vacuous:\n%s", len(deps), out)
	}
	for _, dep := range deps {
		switch {
		case strings.HasPrefix(dep, module+"pkg/controller/"):
			t.Errorf("the operator depends on %s", dep)
		case strings.HasPrefix(dep, "k8s.io/kubectl/"):
			t.Errorf("the operator depends on %s", dep)
		}
	}
}
