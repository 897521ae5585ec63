package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var allImages = Images{
	MachineAPIOperator:            "mao",
	KubeRBACProxy:                 "rbac",
	ClusterAPIControllerAWS:       "aws",
	ClusterAPIControllerOpenStack: "openstack",
	ClusterAPIControllerBareMetal: "baremetal",
	ClusterAPIControllerAzure:     "azure",
	ClusterAPIControllerGCP:       "gcp",
	ClusterAPIControllerVSphere:   "vsphere",
	ClusterAPIControllerIBMCloud:  "ibmcloud",
	ClusterAPIControllerPowerVS:   "powervs",
	ClusterAPIControllerNutanix:   "nutanix",
	ClusterAPIControllerKubemark:  "kubemark",
}

func infra(t configv1.PlatformType, external string) *configv1.Infrastructure {
	i := &configv1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	i.Spec.PlatformSpec.Type = t
	if external != "" {
		i.Spec.PlatformSpec.External = &configv1.ExternalPlatformSpec{PlatformName: external}
	}
	i.Status.PlatformStatus = &configv1.PlatformStatus{Type: t}
	return i
}

func TestBuildPlatformTable(t *testing.T) {
	tests := []struct {
		platform    configv1.PlatformType
		external    string
		provider    string
		termination string
		maxConc     int
		noop        bool
	}{
		{platform: configv1.AWSPlatformType, provider: "aws", termination: "aws"},
		{platform: configv1.AzurePlatformType, provider: "azure", termination: "azure", maxConc: 10},
		{platform: configv1.GCPPlatformType, provider: "gcp", termination: "gcp", maxConc: 10},
		{platform: configv1.OpenStackPlatformType, provider: "openstack"},
		{platform: configv1.BareMetalPlatformType, provider: "baremetal"},
		{platform: configv1.IBMCloudPlatformType, provider: "ibmcloud"},
		{platform: configv1.PowerVSPlatformType, provider: "powervs"},
		{platform: configv1.NutanixPlatformType, provider: "nutanix"},
		{platform: configv1.ExternalPlatformType, external: "kubemark", provider: "kubemark"},
		{platform: configv1.ExternalPlatformType, external: "somecloud", noop: true},
		{platform: configv1.ExternalPlatformType, noop: true},
		{platform: configv1.NonePlatformType, noop: true},
		{platform: configv1.LibvirtPlatformType, noop: true},
		{platform: "bad-platform", noop: true},
	}
	for _, tt := range tests {
		t.Run(string(tt.platform)+"/"+tt.external, func(t *testing.T) {
			cfg, err := Build(Inputs{Images: allImages, Infrastructure: infra(tt.platform, tt.external), ReleaseVersion: "4.22.0"})
			if err != nil {
				t.Fatal(err)
			}
			if cfg.NoOp != tt.noop {
				t.Fatalf("NoOp = %v (%s), want %v", cfg.NoOp, cfg.NoOpReason, tt.noop)
			}
			if tt.noop && cfg.NoOpReason == "" {
				t.Errorf("NoOp without a reason")
			}
			if cfg.ProviderImage != tt.provider || cfg.TerminationHandlerImage != tt.termination || cfg.MaxConcurrentReconciles != tt.maxConc {
				t.Errorf("provider %q termination %q maxConc %d, want %q %q %d",
					cfg.ProviderImage, cfg.TerminationHandlerImage, cfg.MaxConcurrentReconciles, tt.provider, tt.termination, tt.maxConc)
			}
			if cfg.Namespace != DefaultNamespace || !cfg.MachineHealthCheckEnabled {
				t.Errorf("namespace %q, MHC enabled %v", cfg.Namespace, cfg.MachineHealthCheckEnabled)
			}
		})
	}
}

// TestBuildVSphere: vSphere is served from clusterAPIControllerVSphere (on
// OpenShift, the operator's own image), like every platform with a provider;
// without that key images.json is bad input. Breaks if: VSphere were left
// out of the platform table (NoOp) or mapped to another key.
func TestBuildVSphere(t *testing.T) {
	cfg, err := Build(Inputs{Images: allImages, Infrastructure: infra(configv1.VSpherePlatformType, "")})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.RendersOperand() || cfg.NoOp || cfg.ProviderImage != "vsphere" {
		t.Errorf("renders operand %v, NoOp %v, provider %q; want the operand with image vsphere", cfg.RendersOperand(), cfg.NoOp, cfg.ProviderImage)
	}
	_, err = Build(Inputs{Images: Images{MachineAPIOperator: "mao"}, Infrastructure: infra(configv1.VSpherePlatformType, "")})
	var ie *InputError
	if !errors.As(err, &ie) || ie.Reason != ReasonInvalidImagesJSON || !strings.Contains(err.Error(), "clusterAPIControllerVSphere") {
		t.Errorf("without clusterAPIControllerVSphere: %v, want %s naming the key", err, ReasonInvalidImagesJSON)
	}
}

func TestBuildMissingProviderImageIsBadInput(t *testing.T) {
	for _, tc := range []struct {
		platform configv1.PlatformType
		external string
		key      string
	}{
		{configv1.AWSPlatformType, "", "clusterAPIControllerAWS"},
		{configv1.ExternalPlatformType, "kubemark", "clusterAPIControllerKubemark"},
	} {
		_, err := Build(Inputs{Images: Images{MachineAPIOperator: "mao"}, Infrastructure: infra(tc.platform, tc.external)})
		if ReasonOf(err) != ReasonInvalidImagesJSON || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: error %v, want %s naming %s (never NoOp, which would prune the operand)", tc.platform, err, ReasonInvalidImagesJSON, tc.key)
		}
	}
}

func TestBuildInputErrors(t *testing.T) {
	noPlatform := infra(configv1.AWSPlatformType, "")
	noPlatform.Status.PlatformStatus = nil
	emptyType := infra("", "")
	tests := []struct {
		name   string
		in     Inputs
		reason string
	}{
		{name: "no infrastructure", in: Inputs{Images: allImages}, reason: ReasonInfrastructureNotFound},
		{name: "no platform status", in: Inputs{Images: allImages, Infrastructure: noPlatform}, reason: ReasonInvalidInfrastructure},
		{name: "empty platform type", in: Inputs{Images: allImages, Infrastructure: emptyType}, reason: ReasonInvalidInfrastructure},
		{name: "images error without reason", in: Inputs{ImagesErr: errors.New("boom"), Infrastructure: infra(configv1.AWSPlatformType, "")}, reason: ReasonInvalidImagesJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Build(tt.in)
			if got := ReasonOf(err); got != tt.reason {
				t.Fatalf("reason %q (%v), want %q", got, err, tt.reason)
			}
		})
	}
}

func TestLoadImages(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"machineAPIOperator":"mao","clusterAPIControllerKubemark":"km","clusterAPIControllerLibvirt":"ignored"}`)
	img, err := LoadImages(good)
	if err != nil || img.MachineAPIOperator != "mao" || img.ClusterAPIControllerKubemark != "km" {
		t.Fatalf("LoadImages = %+v, %v", img, err)
	}
	for name, path := range map[string]string{
		"missing":   filepath.Join(dir, "nope.json"),
		"directory": dir,
		"malformed": write("bad.json", `{"machineAPIOperator":`),
		"no mao":    write("nomao.json", `{"kubeRBACProxy":"x"}`),
		"empty mao": write("emptymao.json", `{"machineAPIOperator":""}`),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := LoadImages(path)
			if ReasonOf(err) != ReasonInvalidImagesJSON || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v: want reason %s and the path %s", err, ReasonInvalidImagesJSON, path)
			}
		})
	}
}

func TestProxyFromStatus(t *testing.T) {
	p := &configv1.Proxy{
		Spec:   configv1.ProxySpec{HTTPProxy: "http://spec:3128", HTTPSProxy: "http://spec:3129"},
		Status: configv1.ProxyStatus{HTTPProxy: "http://status:3128", NoProxy: "localhost,.svc"},
	}
	cfg, err := Build(Inputs{Images: allImages, Infrastructure: infra(configv1.AWSPlatformType, ""), Proxy: p})
	if err != nil {
		t.Fatal(err)
	}
	want := ProxyEnv{HTTPProxy: "http://status:3128", NoProxy: "localhost,.svc"}
	if cfg.Proxy != want {
		t.Fatalf("proxy = %+v, want %+v (values from status only)", cfg.Proxy, want)
	}
}

func TestResolveFeatureGates(t *testing.T) {
	gate := func(names ...string) []configv1.FeatureGateAttributes {
		var out []configv1.FeatureGateAttributes
		for _, n := range names {
			out = append(out, configv1.FeatureGateAttributes{Name: configv1.FeatureGateName(n)})
		}
		return out
	}
	tests := []struct {
		name       string
		fg         *configv1.FeatureGate
		release    string
		mhcEnabled bool
	}{
		{name: "no featuregate", mhcEnabled: true},
		{name: "matching version enables the disable gate", release: "4.22.0", mhcEnabled: false,
			fg: &configv1.FeatureGate{Status: configv1.FeatureGateStatus{FeatureGates: []configv1.FeatureGateDetails{
				{Version: "4.21.0", Disabled: gate(FeatureGateDisableMachineHealthCheck)},
				{Version: "4.22.0", Enabled: gate(FeatureGateDisableMachineHealthCheck)},
			}}}},
		{name: "other version only: the single entry is used", release: "4.23.0", mhcEnabled: false,
			fg: &configv1.FeatureGate{Status: configv1.FeatureGateStatus{FeatureGates: []configv1.FeatureGateDetails{
				{Version: "4.22.0", Enabled: gate(FeatureGateDisableMachineHealthCheck)},
			}}}},
		{name: "several versions, none matching: nothing enabled", release: "4.23.0", mhcEnabled: true,
			fg: &configv1.FeatureGate{Status: configv1.FeatureGateStatus{FeatureGates: []configv1.FeatureGateDetails{
				{Version: "4.21.0", Enabled: gate(FeatureGateDisableMachineHealthCheck)},
				{Version: "4.22.0", Enabled: gate(FeatureGateDisableMachineHealthCheck)},
			}}}},
		{name: "vanilla: spec customNoUpgrade", mhcEnabled: false,
			fg: &configv1.FeatureGate{Spec: configv1.FeatureGateSpec{FeatureGateSelection: configv1.FeatureGateSelection{
				FeatureSet:      configv1.CustomNoUpgrade,
				CustomNoUpgrade: &configv1.CustomFeatureGates{Enabled: []configv1.FeatureGateName{FeatureGateDisableMachineHealthCheck}},
			}}}},
		{name: "unknown gates only", release: "4.22.0", mhcEnabled: true,
			fg: &configv1.FeatureGate{Status: configv1.FeatureGateStatus{FeatureGates: []configv1.FeatureGateDetails{
				{Version: "4.22.0", Enabled: gate("SomethingNew"), Disabled: gate("SomethingOld")},
			}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Build(Inputs{Images: allImages, Infrastructure: infra(configv1.AWSPlatformType, ""), FeatureGate: tt.fg, ReleaseVersion: tt.release})
			if err != nil {
				t.Fatal(err)
			}
			if cfg.MachineHealthCheckEnabled != tt.mhcEnabled {
				t.Fatalf("MHC enabled = %v, want %v (gates %v)", cfg.MachineHealthCheckEnabled, tt.mhcEnabled, cfg.FeatureGates)
			}
			if cfg.FeatureGates["NeverHeardOfIt"] {
				t.Fatal("unknown gate reported enabled")
			}
		})
	}
}
