package operand

import (
	"crypto/tls"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/openshift/api/features"
)

func parseOptions(t *testing.T, args ...string) (Options, error) {
	t.Helper()
	o := Defaults("test-leader", ":8080", ":9440")
	err := o.Parse("test", args, nil)
	return o, err
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{args: nil},
		{args: []string{"--tls-min-version=VersionTLS13", "--health-addr=:9999"}},
		{args: []string{"--tls-min-version=TLS12"}, wantErr: "--tls-min-version: unknown tls version"},
		{args: []string{"--tls-cipher-suites=TLS_RSA_WITH_NOTHING"}, wantErr: "--tls-cipher-suites"},
		{args: []string{"--feature-gates=A=yes"}, wantErr: "feature-gates"},
		{args: []string{"--leader-elect-renew-interval=40s"}, wantErr: "--leader-elect-renew-interval (40s)"},
		// Timing is not checked without an election.
		{args: []string{"--leader-elect=false", "--leader-elect-renew-interval=40s"}},
		{args: []string{"--namespace="}, wantErr: "--namespace must not be empty"},
	}
	for _, tt := range tests {
		_, err := parseOptions(t, tt.args...)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%q: %v", tt.args, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%q: error %v, want one containing %q", tt.args, err, tt.wantErr)
		}
	}
}

func TestTLSOptionsApply(t *testing.T) {
	o, err := parseOptions(t, "--tls-min-version=VersionTLS13", "--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")
	if err != nil {
		t.Fatal(err)
	}
	apply, err := o.TLS.Apply()
	if err != nil {
		t.Fatal(err)
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	apply(c)
	if c.MinVersion != tls.VersionTLS13 || len(c.CipherSuites) != 1 || c.CipherSuites[0] != tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 {
		t.Fatalf("tls.Config min version %x, suites %v", c.MinVersion, c.CipherSuites)
	}
	// The default keeps TLS 1.2 and Go's suites.
	d, _ := parseOptions(t)
	apply, err = d.TLS.Apply()
	if err != nil {
		t.Fatal(err)
	}
	c = &tls.Config{}
	apply(c)
	if c.MinVersion != tls.VersionTLS12 || c.CipherSuites != nil {
		t.Fatalf("default: min version %x, suites %v", c.MinVersion, c.CipherSuites)
	}
}

// TestFeatureGate: OpenShift's --feature-gates turns a gate on only when it
// is listed =true (MachineAPIMigration: the authoritativeAPI rules of the
// machine and machineset controllers; VSphereHostVMGroupZonal: the vSphere
// provider's VM groups).
func TestFeatureGate(t *testing.T) {
	for _, tc := range []struct {
		gates string
		gate  configv1.FeatureGateName
		want  bool
	}{
		{"MachineAPIMigration=true,VSphereMultiVCenters=true", features.FeatureGateMachineAPIMigration, true},
		{"MachineAPIMigration=false,VSphereMultiVCenters=true", features.FeatureGateMachineAPIMigration, false},
		{"", features.FeatureGateMachineAPIMigration, false},
		{"MachineAPIMigration=true,VSphereHostVMGroupZonal=true", features.FeatureGateVSphereHostVMGroupZonal, true},
		{"MachineAPIMigration=true,VSphereHostVMGroupZonal=false", features.FeatureGateVSphereHostVMGroupZonal, false},
		{"", features.FeatureGateVSphereHostVMGroupZonal, false},
	} {
		var args []string
		if tc.gates != "" {
			args = append(args, "--feature-gates="+tc.gates)
		}
		o, err := parseOptions(t, args...)
		if err != nil {
			t.Fatalf("parse(%q): %v", args, err)
		}
		if got := o.FeatureGate(tc.gate); got != tc.want {
			t.Errorf("--feature-gates=%q: %s %v, want %v", tc.gates, tc.gate, got, tc.want)
		}
	}
}
