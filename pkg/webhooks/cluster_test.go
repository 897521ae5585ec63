package webhooks

import (
	"context"
	"errors"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
)

func infrastructure(statusType, specType configv1.PlatformType, externalName, infraName string) *configv1.Infrastructure {
	infra := &configv1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	infra.Spec.PlatformSpec.Type = specType
	if externalName != "" {
		infra.Spec.PlatformSpec.External = &configv1.ExternalPlatformSpec{PlatformName: externalName}
	}
	if statusType != "" {
		infra.Status.PlatformStatus = &configv1.PlatformStatus{Type: statusType}
	}
	infra.Status.InfrastructureName = infraName
	return infra
}

func TestClusterInfoFromInfrastructure(t *testing.T) {
	tests := []struct {
		name  string
		infra *configv1.Infrastructure
		want  ClusterInfo
	}{
		{name: "no Infrastructure", infra: nil, want: ClusterInfo{}},
		{name: "External kubemark", infra: infrastructure(configv1.ExternalPlatformType, configv1.ExternalPlatformType, "kubemark", testInfraName), want: kubemarkCluster},
		{name: "External kubemark, status not filled in yet", infra: infrastructure("", configv1.ExternalPlatformType, "kubemark", ""), want: ClusterInfo{Provider: ProviderKubemark}},
		{name: "status type wins over spec", infra: infrastructure(configv1.AWSPlatformType, configv1.ExternalPlatformType, "kubemark", "x"), want: ClusterInfo{Provider: ProviderAWS, InfrastructureName: "x"}},
		{name: "another External platform", infra: infrastructure(configv1.ExternalPlatformType, configv1.ExternalPlatformType, "oci", "x"), want: ClusterInfo{InfrastructureName: "x"}},
		{name: "External without a name", infra: infrastructure(configv1.ExternalPlatformType, configv1.ExternalPlatformType, "", "x"), want: ClusterInfo{InfrastructureName: "x"}},
		{name: "AWS", infra: infrastructure(configv1.AWSPlatformType, configv1.AWSPlatformType, "", "x"), want: ClusterInfo{Provider: ProviderAWS, InfrastructureName: "x"}},
		{name: "AWS region", infra: withStatus(infrastructure(configv1.AWSPlatformType, configv1.AWSPlatformType, "", "x"), func(ps *configv1.PlatformStatus) {
			ps.AWS = &configv1.AWSPlatformStatus{Region: "eu-west-1"}
		}), want: ClusterInfo{Provider: ProviderAWS, InfrastructureName: "x", AWSRegion: "eu-west-1"}},
		{name: "Azure public cloud", infra: withStatus(infrastructure(configv1.AzurePlatformType, configv1.AzurePlatformType, "", "x"), func(ps *configv1.PlatformStatus) {
			ps.Azure = &configv1.AzurePlatformStatus{CloudName: configv1.AzurePublicCloud}
		}), want: ClusterInfo{Provider: ProviderAzure, InfrastructureName: "x"}},
		{name: "Azure US government cloud", infra: withStatus(infrastructure(configv1.AzurePlatformType, configv1.AzurePlatformType, "", "x"), func(ps *configv1.PlatformStatus) {
			ps.Azure = &configv1.AzurePlatformStatus{CloudName: configv1.AzureUSGovernmentCloud}
		}), want: ClusterInfo{Provider: ProviderAzure, InfrastructureName: "x", AzureGovCloud: true}},
		{name: "GCP", infra: infrastructure(configv1.GCPPlatformType, "", "", "x"), want: ClusterInfo{Provider: ProviderGCP, InfrastructureName: "x"}},
		{name: "vSphere", infra: infrastructure(configv1.VSpherePlatformType, "", "", "x"), want: ClusterInfo{Provider: ProviderVSphere, InfrastructureName: "x"}},
		{name: "PowerVS", infra: infrastructure(configv1.PowerVSPlatformType, "", "", "x"), want: ClusterInfo{Provider: ProviderPowerVS, InfrastructureName: "x"}},
		{name: "Nutanix", infra: infrastructure(configv1.NutanixPlatformType, "", "", "x"), want: ClusterInfo{Provider: ProviderNutanix, InfrastructureName: "x"}},
		{name: "OpenStack: not admitted here", infra: infrastructure(configv1.OpenStackPlatformType, "", "", "x"), want: ClusterInfo{InfrastructureName: "x"}},
		{name: "None", infra: infrastructure(configv1.NonePlatformType, "", "", ""), want: ClusterInfo{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ClusterInfoFromInfrastructure(tc.infra); got != tc.want {
				t.Errorf("ClusterInfoFromInfrastructure = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func withStatus(infra *configv1.Infrastructure, f func(*configv1.PlatformStatus)) *configv1.Infrastructure {
	f(infra.Status.PlatformStatus)
	return infra
}

func TestLookupClusterInfo(t *testing.T) {
	kubemarkInfra := infrastructure(configv1.ExternalPlatformType, configv1.ExternalPlatformType, "kubemark", testInfraName)
	azureInfra := infrastructure(configv1.AzurePlatformType, configv1.AzurePlatformType, "", testInfraName)
	awsInfra := infrastructure(configv1.AWSPlatformType, configv1.AWSPlatformType, "", testInfraName)
	dns := func(public *configv1.DNSZone) *configv1.DNS {
		return &configv1.DNS{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: configv1.DNSSpec{BaseDomain: "example.com", PublicZone: public}}
	}
	failing := interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return errors.New("connection refused")
	}}
	tests := []struct {
		name    string
		reader  client.Reader
		want    ClusterInfo
		wantErr string
	}{
		{name: "no reader", reader: nil},
		{name: "found", reader: fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(kubemarkInfra).Build(), want: kubemarkCluster},
		{name: "not found", reader: fake.NewClientBuilder().WithScheme(scheme.New()).Build()},
		{name: "Azure, DNS without a public zone: disconnected", reader: fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(azureInfra, dns(nil)).Build(),
			want: ClusterInfo{Provider: ProviderAzure, InfrastructureName: testInfraName, DNSDisconnected: true}},
		{name: "Azure, DNS with a public zone", reader: fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(azureInfra, dns(&configv1.DNSZone{ID: "zone"})).Build(),
			want: ClusterInfo{Provider: ProviderAzure, InfrastructureName: testInfraName}},
		{name: "Azure without a DNS", reader: fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(azureInfra).Build(),
			want: ClusterInfo{Provider: ProviderAzure, InfrastructureName: testInfraName}},
		{name: "AWS: the DNS is not read", reader: fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(awsInfra, dns(nil)).Build(),
			want: ClusterInfo{Provider: ProviderAWS, InfrastructureName: testInfraName}},
		{name: "read error", reader: fake.NewClientBuilder().WithScheme(scheme.New()).WithInterceptorFuncs(failing).Build(),
			wantErr: `reading infrastructures.config.openshift.io "cluster": connection refused`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lookupClusterInfo(context.Background(), tc.reader)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("lookupClusterInfo = %+v, want %+v", got, tc.want)
			}
		})
	}
}
