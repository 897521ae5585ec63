package operator

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/render"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
	"github.com/machine-api-operator/machine-api-operator/pkg/tlsflags"
)

// TestMetricsFollowTLSProfile: the operator's own metrics server follows
// the cluster's TLS profile while it runs, as the operand's servers do.
func TestMetricsFollowTLSProfile(t *testing.T) {
	ns := newNamespace(t)
	setInfrastructure(t, configv1.AWSPlatformType, "")
	intermediate := config.ResolveTLSProfile(nil)
	live, err := tlsflags.NewLive(tlsflags.Options{MinVersion: intermediate.MinVersion, CipherSuites: intermediate.CipherSuites})
	if err != nil {
		t.Fatal(err)
	}
	startOperator(t, writeImages(t, testImages), harnessOptions{ns: ns, metricsTLS: live})
	waitDeployment(t, ns)

	ctx := context.Background()
	apiServer := &configv1.APIServer{}
	apiServer.Name = config.ClusterConfigName
	apiServer.Spec.TLSSecurityProfile = &configv1.TLSSecurityProfile{Type: configv1.TLSProfileModernType, Modern: &configv1.ModernTLSProfile{}}
	// Only an APIServer that asks every component to adhere sets our profile.
	apiServer.Spec.TLSAdherence = configv1.TLSAdherencePolicyStrictAllComponents
	if err := env.Client.Create(ctx, apiServer); err != nil {
		t.Fatal(err)
	}
	modern := config.ResolveTLSProfile(apiServer)
	if modern.MinVersion == intermediate.MinVersion {
		t.Fatalf("test needs profiles that differ; both have %s", modern.MinVersion)
	}
	waitMetricsTLS(t, live, modern)
	waitOperandArg(t, ns, "--tls-min-version="+modern.MinVersion)

	// Removing the profile goes back to the default (Intermediate).
	if err := env.Client.Delete(ctx, apiServer); err != nil {
		t.Fatal(err)
	}
	waitMetricsTLS(t, live, intermediate)
}

func waitMetricsTLS(t *testing.T, live *tlsflags.Live, want config.TLSProfile) {
	t.Helper()
	poll.Eventually(t, 30*time.Second, "metrics server TLS "+want.MinVersion, func(context.Context) (bool, error) {
		got := live.Current()
		if got.MinVersion != want.MinVersion || !slices.Equal(got.CipherSuites, want.CipherSuites) {
			return false, fmt.Errorf("metrics server TLS is %+v", got)
		}
		return true, nil
	})
}

// waitOperandArg waits until every container of the operand Deployment that takes TLS arguments (this
// project's image and the kube-rbac-proxy sidecar; the AWS provider image takes none) has arg.
func waitOperandArg(t *testing.T, ns, arg string) {
	t.Helper()
	poll.Eventually(t, 30*time.Second, "operand argument "+arg, func(ctx context.Context) (bool, error) {
		d, err := getDeployment(ctx, ns)
		if err != nil || d == nil {
			return false, err
		}
		takesTLS := 0
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Image != testImages.MachineAPIOperator && c.Name != render.ProviderMetricsProxyContainer {
				continue
			}
			takesTLS++
			if !slices.Contains(c.Args, arg) {
				return false, fmt.Errorf("container %s of %s has no %s", c.Name, client.ObjectKeyFromObject(d), arg)
			}
		}
		// machineset, nodelink and machine-healthcheck controllers, and the sidecar.
		if takesTLS != 4 {
			return false, fmt.Errorf("%s has %d containers taking TLS arguments, want 4", client.ObjectKeyFromObject(d), takesTLS)
		}
		return true, nil
	})
}
