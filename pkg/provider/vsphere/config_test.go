package vsphere

import (
	"context"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestParseCloudConfig(t *testing.T) {
	cases := []struct {
		name, text, server string
		port               string
		insecure           bool
	}{
		{name: "empty", text: "", server: "vc", port: "", insecure: false},
		{name: "INI global", text: "[Global]\nsecret-name = \"vsphere-creds\"\nport = \"8443\"\ninsecure-flag = \"1\"\n", server: "vc", port: "8443", insecure: true},
		{name: "INI per vCenter overrides global", text: "[Global]\nport = 443\ninsecure-flag = 1\n\n[VirtualCenter \"vc.example\"]\nport = 9443\ninsecure-flag = 0\n", server: "vc.example", port: "9443", insecure: false},
		{name: "INI other vCenter keeps global", text: "[Global]\nport = 443\n[VirtualCenter \"other\"]\nport = 9443\n", server: "vc", port: "443", insecure: false},
		{name: "YAML", text: "global:\n  port: 8443\n  insecureFlag: true\nvcenter:\n  main:\n    server: vc.example\n    port: 7443\n", server: "vc.example", port: "7443", insecure: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			port, insecure, err := cloudConfigFor(tc.text, tc.server)
			if err != nil {
				t.Fatal(err)
			}
			if port != tc.port || insecure != tc.insecure {
				t.Errorf("got port %q insecure %v, want %q %v", port, insecure, tc.port, tc.insecure)
			}
		})
	}
	if _, _, err := cloudConfigFor("[Global\nport = 1\n", "vc"); err == nil {
		t.Error("an unclosed section header parsed without error")
	}
}

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, configv1.Install} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// ClusterSettings reads the port and TLS flag from the cloud-provider-config
// the Infrastructure names, lets the Infrastructure's vCenter port win, and
// passes the failure domains on.
func TestClusterSettings(t *testing.T) {
	infra := &configv1.Infrastructure{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
		Spec: configv1.InfrastructureSpec{
			CloudConfig: configv1.ConfigMapFileReference{Name: "cloud-provider-config", Key: "config"},
			PlatformSpec: configv1.PlatformSpec{Type: configv1.VSpherePlatformType, VSphere: &configv1.VSpherePlatformSpec{
				VCenters:       []configv1.VSpherePlatformVCenterSpec{{Server: "vc.example", Port: 8443}},
				FailureDomains: []configv1.VSpherePlatformFailureDomainSpec{{Name: "fd", Region: "r1", Zone: "z1", Server: "vc.example"}},
			}},
		},
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-config", Name: "cloud-provider-config"},
		Data:       map[string]string{"config": "[Global]\nport = 443\ninsecure-flag = 1\n"},
	}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(infra, cm).Build()
	s, err := ClusterSettings{Reader: c}.Settings(context.Background(), "vc.example")
	if err != nil {
		t.Fatal(err)
	}
	if s.Port != "8443" || !s.Insecure || len(s.FailureDomains) != 1 || s.FailureDomains[0].Zone != "z1" {
		t.Errorf("got %+v, want port 8443 (from the Infrastructure), insecure, failure domain fd", s)
	}
	// Without an Infrastructure: defaults, no error.
	empty := fake.NewClientBuilder().WithScheme(testScheme(t)).Build()
	if s, err := (ClusterSettings{Reader: empty}).Settings(context.Background(), "vc"); err != nil || s.Port != "" || s.Insecure {
		t.Errorf("without Infrastructure: got %+v, %v; want defaults", s, err)
	}
	var _ client.Reader = c
}
