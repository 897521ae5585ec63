package vsphere

import (
	"context"
	"errors"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestParseCloudConfig(t *testing.T) {
	cases := []struct {
		name, text, server string
		want               cloudConfig
	}{
		{name: "empty", text: "", server: "vc", want: cloudConfig{}},
		{name: "INI global", text: "[Global]\nsecret-name = \"vsphere-creds\"\nport = \"8443\"\ninsecure-flag = \"1\"\n", server: "vc", want: cloudConfig{port: "8443", insecure: true}},
		{name: "INI per vCenter overrides global", text: "[Global]\nport = 443\ninsecure-flag = 1\n\n[VirtualCenter \"vc.example\"]\nport = 9443\ninsecure-flag = 0\n", server: "vc.example", want: cloudConfig{port: "9443"}},
		{name: "INI other vCenter keeps global", text: "[Global]\nport = 443\n[VirtualCenter \"other\"]\nport = 9443\n", server: "vc", want: cloudConfig{port: "443"}},
		{name: "YAML", text: "global:\n  port: 8443\n  insecureFlag: true\nvcenter:\n  main:\n    server: vc.example\n    port: 7443\n", server: "vc.example", want: cloudConfig{port: "7443", insecure: true}},
		// The tag categories of region and zone (OpenShift's vSphere config Labels.Region/Zone).
		// Breaks if: the [Labels] section is read as [Global] keys, or not at all.
		{name: "INI labels", text: "[Global]\nport = 443\n[Labels]\nregion = \"openshift-region\"\nzone = openshift-zone\n", server: "vc",
			want: cloudConfig{port: "443", regionCategory: "openshift-region", zoneCategory: "openshift-zone"}},
		{name: "YAML labels", text: "global:\n  insecureFlag: true\nlabels:\n  region: k8s-region\n  zone: k8s-zone\n", server: "vc",
			want: cloudConfig{insecure: true, regionCategory: "k8s-region", zoneCategory: "k8s-zone"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cloudConfigFor(tc.text, tc.server)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if _, err := cloudConfigFor("[Global\nport = 1\n", "vc"); err == nil {
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

// The cloud provider config is read where OpenShift reads it, openshift-config-managed/kube-cloud-config key
// cloud.conf, and from the Infrastructure's spec.cloudConfig in openshift-config when that copy is not there (no
// ConfigMap, no key, or no read allowed there).
// Breaks if: the old location is read first, or the fallback is dropped.
func TestClusterSettingsCloudConfigLocation(t *testing.T) {
	infra := &configv1.Infrastructure{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
		Spec:       configv1.InfrastructureSpec{CloudConfig: configv1.ConfigMapFileReference{Name: "cloud-provider-config", Key: "config"}},
	}
	managed := func(data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ManagedCloudConfigNamespace, Name: ManagedCloudConfigName}, Data: data}
	}
	old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-config", Name: "cloud-provider-config"},
		Data: map[string]string{"config": "[Global]\nport = 1111\n"}}
	forbidden := interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if key.Namespace == ManagedCloudConfigNamespace {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, key.Name, errors.New("no RBAC"))
		}
		return c.Get(ctx, key, obj, opts...)
	}}
	cases := []struct {
		name         string
		objs         []client.Object
		intercept    *interceptor.Funcs
		port         string
		region, zone string
		wantErr      string
	}{
		{name: "OpenShift's location wins", objs: []client.Object{infra, old, managed(map[string]string{"cloud.conf": "[Global]\nport = 2222\n[Labels]\nregion = openshift-region\nzone = openshift-zone\n"})},
			port: "2222", region: "openshift-region", zone: "openshift-zone"},
		{name: "YAML in OpenShift's location", objs: []client.Object{infra, managed(map[string]string{"cloud.conf": "global:\n  port: 3333\n"})}, port: "3333"},
		{name: "no copy: the Infrastructure's", objs: []client.Object{infra, old}, port: "1111"},
		{name: "copy without cloud.conf: the Infrastructure's", objs: []client.Object{infra, old, managed(map[string]string{"config": "[Global]\nport = 2222\n"})}, port: "1111"},
		{name: "not allowed to read the copy: the Infrastructure's", objs: []client.Object{infra, old, managed(map[string]string{"cloud.conf": "[Global]\nport = 2222\n"})}, intercept: &forbidden, port: "1111"},
		{name: "neither: defaults", objs: []client.Object{infra}, port: ""},
		{name: "a broken copy is an error naming it", objs: []client.Object{infra, old, managed(map[string]string{"cloud.conf": "[Global\n"})},
			wantErr: `ConfigMap openshift-config-managed/kube-cloud-config key "cloud.conf": line 1`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(tc.objs...)
			if tc.intercept != nil {
				b = b.WithInterceptorFuncs(*tc.intercept)
			}
			s, err := ClusterSettings{Reader: b.Build()}.Settings(context.Background(), "vc")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Port != tc.port || s.RegionCategory != tc.region || s.ZoneCategory != tc.zone || s.HasCloudConfig != (tc.port != "") {
				t.Errorf("got %+v, want port %q, [Labels] %q/%q, a cloud config read: %v", s, tc.port, tc.region, tc.zone, tc.port != "")
			}
		})
	}
}
