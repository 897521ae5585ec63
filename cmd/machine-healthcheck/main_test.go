package main

import (
	"testing"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machinehealthcheck"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand/operandtest"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/render/rendertest"
)

// TestRenderedCommandLinesStart: every container the operator renders (on
// every platform of the golden renders) with this binary has a command line
// the binary accepts, so the pod would start.
func TestRenderedCommandLinesStart(t *testing.T) {
	for _, c := range rendertest.Containers(t, "/machine-healthcheck") {
		if _, _, err := parse(c.Args, ""); err != nil {
			t.Errorf("%s container %s: %v (args %q)", c.Source, c.Name, err, c.Args)
		}
	}
}

// TestBadCommandLineRefused: the check above can fail.
func TestBadCommandLineRefused(t *testing.T) {
	for _, args := range [][]string{{"--no-such-flag"}, {"positional"}, {"--namespace="}, {"--remediation-burst=-1"}, {"--lease-namespace="}} {
		if _, _, err := parse(args, ""); err == nil {
			t.Errorf("parse(%q) accepted", args)
		}
	}
}

// TestLeaseNamespace: --lease-namespace, else $LEASE_NAMESPACE, else
// medik8s-leases.
func TestLeaseNamespace(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{nil, "", "medik8s-leases"},
		{nil, "from-env", "from-env"},
		{[]string{"--lease-namespace=from-flag"}, "from-env", "from-flag"},
	} {
		_, f, err := parse(tc.args, tc.env)
		if err != nil || f.leaseNamespace != tc.want {
			t.Errorf("parse(%q, env %q): lease namespace %q (err %v), want %q", tc.args, tc.env, f.leaseNamespace, err, tc.want)
		}
	}
}

// TestOpenShiftCommandLine: the binary starts with the command line
// OpenShift's machine-api-operator renders for its machine-healthcheck-controller container: the common args), with the flags
// OpenShift's own binary defines under their OpenShift names.
func TestOpenShiftCommandLine(t *testing.T) {
	args := append(operandtest.CommonArgs(), operandtest.UpstreamFlags(":9442", ":8083", false)...)
	opts, _, err := parse(args, "")
	if err != nil {
		t.Fatalf("OpenShift's command line refused: %v", err)
	}
	operandtest.Check(t, opts, operandtest.Want{HealthAddr: ":9442", MetricsAddr: ":8083"})
}

// TestHealthCheckSemanticsFlags: by default the MachineHealthCheck paces
// nothing beyond maxUnhealthy (as OpenShift) and times startup from
// creation; the flags turn the pacing on and restore OpenShift's startup
// clock.
func TestHealthCheckSemanticsFlags(t *testing.T) {
	for _, tc := range []struct {
		args        []string
		burst       int
		backoff     bool
		startupFrom machinehealthcheck.StartupClock
	}{
		{nil, 0, false, machinehealthcheck.StartupFromCreation},
		{[]string{"--remediation-burst=10", "--remediation-backoff"}, 10, true, machinehealthcheck.StartupFromCreation},
		{[]string{"--node-startup-timeout-from=lastUpdated"}, 0, false, machinehealthcheck.StartupFromLastUpdated},
		{[]string{"--node-startup-timeout-from=creation"}, 0, false, machinehealthcheck.StartupFromCreation},
	} {
		_, f, err := parse(tc.args, "")
		if err != nil {
			t.Errorf("parse(%q): %v", tc.args, err)
			continue
		}
		if f.mhc.RemediationBurst != tc.burst || f.mhc.RemediationBackoff != tc.backoff || f.mhc.NodeStartupTimeoutFrom != tc.startupFrom {
			t.Errorf("parse(%q): burst %d backoff %v startup from %q, want %d %v %q", tc.args,
				f.mhc.RemediationBurst, f.mhc.RemediationBackoff, f.mhc.NodeStartupTimeoutFrom, tc.burst, tc.backoff, tc.startupFrom)
		}
	}
	if _, _, err := parse([]string{"--node-startup-timeout-from=lastupdated"}, ""); err == nil {
		t.Error("--node-startup-timeout-from=lastupdated (wrong case) accepted")
	}
}
