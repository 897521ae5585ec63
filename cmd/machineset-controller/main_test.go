package main

import (
	"testing"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/render/rendertest"
)

// TestRenderedCommandLinesStart: every container the operator renders (on
// every platform of the golden renders) or install/ ships with this binary
// has a command line the binary accepts, so the pod would start.
func TestRenderedCommandLinesStart(t *testing.T) {
	for _, c := range rendertest.Containers(t, "/machineset-controller") {
		if _, _, err := parse(c.Args); err != nil {
			t.Errorf("%s container %s: %v (args %q)", c.Source, c.Name, err, c.Args)
		}
	}
}

// TestBadCommandLineRefused: the check above can fail.
func TestBadCommandLineRefused(t *testing.T) {
	for _, args := range [][]string{{"--no-such-flag"}, {"positional"}, {"--namespace="}} {
		if _, _, err := parse(args); err == nil {
			t.Errorf("parse(%q) accepted", args)
		}
	}
}
