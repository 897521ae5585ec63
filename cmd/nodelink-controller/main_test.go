package main

import (
	"testing"

	"github.com/machine-api-operator/machine-api-operator/pkg/operand/operandtest"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/render/rendertest"
)

// TestRenderedCommandLinesStart: every container the operator renders (on
// every platform of the golden renders) or install/ ships with this binary
// has a command line the binary accepts, so the pod would start.
func TestRenderedCommandLinesStart(t *testing.T) {
	for _, c := range rendertest.Containers(t, "/nodelink-controller") {
		if _, err := parse(c.Args); err != nil {
			t.Errorf("%s container %s: %v (args %q)", c.Source, c.Name, err, c.Args)
		}
	}
}

// TestBadCommandLineRefused: the check above can fail.
func TestBadCommandLineRefused(t *testing.T) {
	for _, args := range [][]string{{"--no-such-flag"}, {"positional"}, {"--namespace="}} {
		if _, err := parse(args); err == nil {
			t.Errorf("parse(%q) accepted", args)
		}
	}
}

// TestOpenShiftCommandLine: the binary starts with the command line
// OpenShift's machine-api-operator renders for its nodelink-controller container: the common args), with the flags
// OpenShift's own binary defines under their OpenShift names.
func TestOpenShiftCommandLine(t *testing.T) {
	args := append(operandtest.CommonArgs(), operandtest.UpstreamFlags(":9444", ":8084", false)...)
	opts, err := parse(args)
	if err != nil {
		t.Fatalf("OpenShift's command line refused: %v", err)
	}
	operandtest.Check(t, opts, operandtest.Want{HealthAddr: ":9444", MetricsAddr: ":8084"})
}
