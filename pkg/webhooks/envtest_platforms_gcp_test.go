package webhooks

import (
	"context"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestGCPProvisioningModelThroughAPIServer: on a cluster switched to GCP, a
// Machine with an unknown provisioningModel is refused by the validating
// webhook with OpenShift's message, and a Spot Machine is admitted.
// Breaks if: validateGCP stops calling validateGCPProvisioningModel.
func TestGCPProvisioningModelThroughAPIServer(t *testing.T) {
	const ns = "openshift-machine-api"
	c, reader := startWithMachineNamespace(t, ns, apiServerOptions{})
	ctx := context.Background()
	setPlatform(t, c, reader, configv1.GCPPlatformType, func(ps *configv1.PlatformStatus) {
		ps.GCP = &configv1.GCPPlatformStatus{ProjectID: "project-1", Region: "us-central1"}
	})
	createSecret(t, c, reader, ns, "gcp-cloud-credentials")
	spec := `{"apiVersion":"machine.openshift.io/v1beta1","kind":"GCPMachineProviderSpec","region":"us-central1","zone":"us-central1-a",` +
		`"serviceAccounts":[{"email":"w@project-1.iam.gserviceaccount.com","scopes":["https://www.googleapis.com/auth/cloud-platform"]}]}`
	create := func(name, patch string) error {
		m := machine(name, value(with(t, spec, patch)))
		m.Namespace = ns
		return c.Create(ctx, m, client.DryRunAll)
	}

	if err := create("spot", `{"provisioningModel":"Spot"}`); err != nil {
		t.Errorf("creating a Spot Machine: %v, want it admitted", err)
	}
	err := create("reserved", `{"provisioningModel":"Reserved"}`)
	want := `providerSpec.provisioningModel: Invalid value: "Reserved": provisioningModel must be "Spot" or omit for standard provisioning`
	if err == nil || !strings.Contains(err.Error(), `admission webhook "validation.machine.machine.openshift.io" denied the request`) ||
		!strings.Contains(err.Error(), want) {
		t.Errorf("creating a Machine with provisioningModel Reserved: %v, want refused with %q", err, want)
	}
}
