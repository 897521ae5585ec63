package main

import (
	"testing"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machinehealthcheck"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand/operandtest"
)

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

// TestCommandLine: the rendered and OpenShift's command lines start the binary (OpenShift's:
// the common args), bad ones do not.
func TestCommandLine(t *testing.T) {
	operandtest.CommandLines(t, operandtest.Binary{
		Command:   "/machine-healthcheck",
		Parse:     func(args []string) (operand.Options, error) { o, _, err := parse(args, ""); return o, err },
		Refused:   [][]string{{"--remediation-burst=-1"}, {"--lease-namespace="}},
		OpenShift: append(operandtest.CommonArgs(), operandtest.UpstreamFlags(":9442", ":8083", false)...),
		Want:      operandtest.Want{HealthAddr: ":9442", MetricsAddr: ":8083"},
	})
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
