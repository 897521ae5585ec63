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

// TestOpenShiftCommandLine: the binary starts with the command line
// OpenShift's machine-api-operator renders for its machineset-controller container: featureGateArgs and tlsArgs), with the flags
// OpenShift's own binary defines under their OpenShift names.
func TestOpenShiftCommandLine(t *testing.T) {
	args := append(operandtest.FeatureGateArgs(), operandtest.TLSArgs()...)
	args = append(args, operandtest.UpstreamFlags(":9441", ":8082", true)...)
	opts, _, err := parse(args)
	if err != nil {
		t.Fatalf("OpenShift's command line refused: %v", err)
	}
	operandtest.Check(t, opts, operandtest.Want{HealthAddr: ":9441", MetricsAddr: ":8082", FeatureGates: true, TLS: true})
}
