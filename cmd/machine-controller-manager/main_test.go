package main

import (
	"testing"

	configv1 "github.com/openshift/api/config/v1"

	"github.com/machine-api-operator/machine-api-operator/pkg/operand/operandtest"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/render/rendertest"
)

// TestRenderedCommandLinesStart: every container the operator renders (on
// every platform of the golden renders) or install/ ships with this binary
// has a command line the binary accepts, so the pod would start.
func TestRenderedCommandLinesStart(t *testing.T) {
	for _, c := range rendertest.Containers(t, "/machine-controller-manager") {
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
// OpenShift's machine-api-operator renders for its machine-controller container: featureGateArgs, plus --max-concurrent-reconciles=10 (Azure, GCP) and tlsArgs (BareMetal)), with the flags
// OpenShift's own binary defines under their OpenShift names.
func TestOpenShiftCommandLine(t *testing.T) {
	args := append(operandtest.FeatureGateArgs(), "--max-concurrent-reconciles=10")
	args = append(args, operandtest.TLSArgs()...)
	args = append(args, operandtest.UpstreamFlags(":9440", ":8081", false)...)
	opts, _, err := parse(args)
	if err != nil {
		t.Fatalf("OpenShift's command line refused: %v", err)
	}
	operandtest.Check(t, opts, operandtest.Want{HealthAddr: ":9440", MetricsAddr: ":8081", FeatureGates: true, TLS: true})
}

// TestLeaseFor: on vSphere the binary holds OpenShift's vSphere controller's
// Lease, elsewhere the kubemark one. Breaks if: leaseFor ignored the
// platform (both controllers could lead at once during a switch).
func TestLeaseFor(t *testing.T) {
	for platform, want := range map[configv1.PlatformType]string{
		configv1.VSpherePlatformType:  "cluster-api-provider-vsphere-leader",
		configv1.ExternalPlatformType: "cluster-api-provider-kubemark-leader",
		"":                            "cluster-api-provider-kubemark-leader",
	} {
		if got := leaseFor(platform); got != want {
			t.Errorf("leaseFor(%q) = %q, want %q", platform, got, want)
		}
	}
}
