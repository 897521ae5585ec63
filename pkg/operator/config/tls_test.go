package config

import (
	"slices"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestResolveTLSProfile(t *testing.T) {
	intermediate := TLSProfile{MinVersion: "VersionTLS12", CipherSuites: []string{
		"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
		"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
		"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
	}}
	apiServer := func(adherence configv1.TLSAdherencePolicy, p *configv1.TLSSecurityProfile) *configv1.APIServer {
		return &configv1.APIServer{ObjectMeta: metav1.ObjectMeta{Name: ClusterConfigName},
			Spec: configv1.APIServerSpec{TLSAdherence: adherence, TLSSecurityProfile: p}}
	}
	modern := &configv1.TLSSecurityProfile{Type: configv1.TLSProfileModernType}
	custom := &configv1.TLSSecurityProfile{Type: configv1.TLSProfileCustomType, Custom: &configv1.CustomTLSProfile{
		TLSProfileSpec: configv1.TLSProfileSpec{
			Ciphers:       []string{"TLS_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA-AES128-GCM-SHA256", "NOT-A-CIPHER"},
			MinTLSVersion: configv1.VersionTLS11,
		}}}
	tests := []struct {
		name string
		in   *configv1.APIServer
		want TLSProfile
	}{
		{"no APIServer (vanilla Kubernetes): Intermediate", nil, intermediate},
		{"no profile: Intermediate", apiServer(configv1.TLSAdherencePolicyStrictAllComponents, nil), intermediate},
		{"Modern without adherence: not honored", apiServer("", modern), intermediate},
		{"Modern with legacy adherence: not honored", apiServer(configv1.TLSAdherencePolicyLegacyAdheringComponentsOnly, modern), intermediate},
		{"Modern, strict: TLS 1.3 only, no configurable suite", apiServer(configv1.TLSAdherencePolicyStrictAllComponents, modern), TLSProfile{MinVersion: "VersionTLS13"}},
		{"an unknown adherence is strict", apiServer("FutureValue", modern), TLSProfile{MinVersion: "VersionTLS13"}},
		{"custom: OpenSSL and IANA names, deduplicated, unknown dropped", apiServer(configv1.TLSAdherencePolicyStrictAllComponents, custom),
			TLSProfile{MinVersion: "VersionTLS11", CipherSuites: []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"}}},
		{"custom without spec: Intermediate", apiServer(configv1.TLSAdherencePolicyStrictAllComponents,
			&configv1.TLSSecurityProfile{Type: configv1.TLSProfileCustomType}), intermediate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ResolveTLSProfile(tt.in)
			if got.MinVersion != tt.want.MinVersion || !slices.Equal(got.CipherSuites, tt.want.CipherSuites) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}

	t.Run("Old: every suite Go implements, none it does not", func(t *testing.T) {
		got := ResolveTLSProfile(apiServer(configv1.TLSAdherencePolicyStrictAllComponents, &configv1.TLSSecurityProfile{Type: configv1.TLSProfileOldType}))
		if got.MinVersion != "VersionTLS10" {
			t.Errorf("min version %q", got.MinVersion)
		}
		for _, want := range []string{"TLS_RSA_WITH_3DES_EDE_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "TLS_RSA_WITH_AES_256_CBC_SHA"} {
			if !slices.Contains(got.CipherSuites, want) {
				t.Errorf("%s missing from %v", want, got.CipherSuites)
			}
		}
		for _, absent := range []string{"TLS_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384", "TLS_RSA_WITH_AES_256_CBC_SHA256"} {
			if slices.Contains(got.CipherSuites, absent) {
				t.Errorf("%s is not configurable in Go but listed", absent)
			}
		}
	})
}

func TestProviderFeatureGates(t *testing.T) {
	fg := &configv1.FeatureGate{Status: configv1.FeatureGateStatus{FeatureGates: []configv1.FeatureGateDetails{{
		Version:  "4.22.0",
		Enabled:  []configv1.FeatureGateAttributes{{Name: "AzureWorkloadIdentity"}, {Name: "SomethingElse"}},
		Disabled: []configv1.FeatureGateAttributes{{Name: "MachineAPIMigration"}},
	}}}}
	got := providerFeatureGates(ResolveFeatureGates(fg, "4.22.0"))
	want := map[string]bool{"AWSDedicatedHosts": false, "AzureWorkloadIdentity": true, "MachineAPIMigration": false, "VSphereHostVMGroupZonal": false}
	if len(got) != len(want) {
		t.Fatalf("got %v, want exactly %v", got, want)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if got := providerFeatureGates(ResolveFeatureGates(nil, "")); len(got) != 4 || got["AzureWorkloadIdentity"] {
		t.Errorf("without a FeatureGate: %v, want the four gates false", got)
	}
}
