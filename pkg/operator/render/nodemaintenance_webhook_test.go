package render

import (
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// TestNodeMaintenanceWebhook: the NodeMaintenance webhook (medik8s's name
// and path, cluster-scoped rule, CREATE and UPDATE, the machineset
// controller's Service) is an entry of the machine-api validating
// configuration where this operator runs the NodeMaintenance controller,
// and absent where the node-maintenance-operator owns the API or the
// machine-healthcheck container is not deployed. Breaks if: the
// NodeMaintenanceForeign condition in machineAPIValidatingWebhooks is dropped.
func TestNodeMaintenanceWebhook(t *testing.T) {
	base := config.Config{
		Namespace: config.DefaultNamespace, PlatformType: configv1.ExternalPlatformType, ExternalPlatformName: config.KubemarkPlatformName,
		Images:        config.Images{MachineAPIOperator: "example.com/mao:test", ClusterAPIControllerKubemark: "example.com/mao:test"},
		ProviderImage: "example.com/mao:test", MachineHealthCheckEnabled: true,
	}
	foreign := base
	foreign.NodeMaintenanceForeign = true
	noMHC := base
	noMHC.MachineHealthCheckEnabled = false
	for _, tc := range []struct {
		name string
		cfg  config.Config
		want bool
	}{
		{"ours", base, true},
		{"node-maintenance-operator owns the API", foreign, false},
		{"no machine-healthcheck container", noMHC, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Render(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			vwc := find[*admissionregistrationv1.ValidatingWebhookConfiguration](objs, config.WebhookConfigurationName)
			if vwc == nil {
				t.Fatal("no machine-api ValidatingWebhookConfiguration")
			}
			var got *admissionregistrationv1.ValidatingWebhook
			for i := range vwc.Webhooks {
				if vwc.Webhooks[i].Name == "vnodemaintenance.kb.io" {
					got = &vwc.Webhooks[i]
				}
			}
			if (got != nil) != tc.want {
				t.Fatalf("vnodemaintenance.kb.io rendered = %v, want %v", got != nil, tc.want)
			}
			if got == nil {
				return
			}
			svc := got.ClientConfig.Service
			if svc == nil || svc.Name != config.WebhookServiceName || svc.Path == nil || *svc.Path != "/validate-nodemaintenance-medik8s-io-v1beta1-nodemaintenance" {
				t.Errorf("clientConfig.service = %+v, want %s at /validate-nodemaintenance-medik8s-io-v1beta1-nodemaintenance", svc, config.WebhookServiceName)
			}
			r := got.Rules
			if len(r) != 1 || len(r[0].APIGroups) != 1 || r[0].APIGroups[0] != "nodemaintenance.medik8s.io" || len(r[0].Resources) != 1 || r[0].Resources[0] != "nodemaintenances" ||
				r[0].Scope == nil || *r[0].Scope != admissionregistrationv1.ClusterScope || len(r[0].Operations) != 2 {
				t.Errorf("rules = %+v, want nodemaintenance.medik8s.io nodemaintenances, Cluster scope, CREATE and UPDATE", r)
			}
		})
	}
}
