package operator

import (
	"slices"
	"testing"
)

// TestMissingCRDs: which missing CRDs are reported, and how.
func TestMissingCRDs(t *testing.T) {
	all := servedAPIs{}
	for _, a := range optionalAPIs {
		all[a.kind()] = true
	}
	without := func(kinds ...string) servedAPIs {
		s := servedAPIs{}
		for k, v := range all {
			s[k] = v && !slices.Contains(kinds, k)
		}
		return s
	}
	tests := []struct {
		name       string
		served     servedAPIs
		includeOwn bool
		want       []string
	}{
		{"everything served", all, true, nil},
		{"optional inputs absent (vanilla): nothing to report", without("APIServer", "Proxy", "FeatureGate", "ClusterVersion", "ServiceCA"), true, nil},
		{"vanilla: the operator installs the Machine API CRDs itself", without("Machine", "MachineSet"), false, nil},
		{"OpenShift: the cluster version operator installs them", without("Machine", "MachineSet"), true,
			[]string{"machines.machine.openshift.io", "machinesets.machine.openshift.io"}},
		{"bare API server, vanilla", servedAPIs{}, false,
			[]string{"infrastructures.config.openshift.io", "clusteroperators.config.openshift.io"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.served.missing(tt.includeOwn); !slices.Equal(got, tt.want) {
				t.Errorf("missing(%v) = %v, want %v", tt.includeOwn, got, tt.want)
			}
		})
	}

	if got := missingMessage(nil, true); got != "" {
		t.Errorf("missingMessage(none) = %q, want empty", got)
	}
	want := "CRDs not installed: machines.machine.openshift.io; the cluster version operator installs them from the release payload"
	if got := missingMessage([]string{"machines.machine.openshift.io"}, true); got != want {
		t.Errorf("missingMessage on OpenShift = %q, want %q", got, want)
	}
}
