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
		{name: "status type wins over spec", infra: infrastructure(configv1.AWSPlatformType, configv1.ExternalPlatformType, "kubemark", "x"), want: ClusterInfo{InfrastructureName: "x"}},
		{name: "another External platform", infra: infrastructure(configv1.ExternalPlatformType, configv1.ExternalPlatformType, "oci", "x"), want: ClusterInfo{InfrastructureName: "x"}},
		{name: "External without a name", infra: infrastructure(configv1.ExternalPlatformType, configv1.ExternalPlatformType, "", "x"), want: ClusterInfo{InfrastructureName: "x"}},
		{name: "AWS", infra: infrastructure(configv1.AWSPlatformType, configv1.AWSPlatformType, "", "x"), want: ClusterInfo{InfrastructureName: "x"}},
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

func TestLookupClusterInfo(t *testing.T) {
	kubemarkInfra := infrastructure(configv1.ExternalPlatformType, configv1.ExternalPlatformType, "kubemark", testInfraName)
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
