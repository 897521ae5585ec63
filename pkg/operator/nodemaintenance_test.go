package operator

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/machine-api-operator/machine-api-operator/manifests"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/render"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// olmManager is the field manager OLM's catalog operator writes CRDs with.
const olmManager = "catalog"

// TestNodeMaintenanceCRDOfAnotherOperator: a NodeMaintenance CRD that
// another field manager created before the operator started (OLM installing
// the node-maintenance-operator) is left alone: never written, its
// managedFields unchanged; the machine-healthcheck container runs without
// the NodeMaintenance controller, and the ClusterOperator and an event say
// so.
func TestNodeMaintenanceCRDOfAnotherOperator(t *testing.T) {
	ctx := context.Background()
	b := startBareCluster(t)
	b.installCRDs(t, "kubectl", crdSet(t, manifests.ConfigCRDs)...)
	b.installCRDs(t, olmManager, crdSet(t, manifests.NodeMaintenanceCRDs)...)
	before, err := b.crd(ctx, config.NodeMaintenanceCRDName)
	if err != nil || before == nil {
		t.Fatalf("NodeMaintenance CRD: %v", err)
	}
	setInfrastructureIn(t, b.c, configv1.ExternalPlatformType, config.KubemarkPlatformName)
	ns := b.namespace(t)
	startOperator(t, writeImages(t, testImages), harnessOptions{ns: ns, restConfig: b.cfg})

	d := waitDeploymentIn(t, b.c, ns)
	var args []string
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == render.MachineHealthCheckContainer {
			args = c.Args
		}
	}
	if !slices.Contains(args, "--node-maintenance=false") {
		t.Errorf("machine-healthcheck args %q lack --node-maintenance=false", args)
	}
	setDeploymentAvailableIn(t, b.c, ns, true)
	waitConditionIn(t, b.c, configv1.OperatorAvailable, configv1.ConditionTrue, "", "NodeMaintenance CRD was installed by another component (field managers: "+olmManager+")")
	poll.Eventually(t, 30*time.Second, "NodeMaintenanceForeign event", func(ctx context.Context) (bool, error) {
		events := &corev1.EventList{}
		if err := b.c.List(ctx, events); err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Reason == ReasonNodeMaintenanceForeign && strings.Contains(e.Message, olmManager) {
				return true, nil
			}
		}
		return false, nil
	})

	// Available=True came after several syncs: the CRD is untouched.
	after, err := b.crd(ctx, config.NodeMaintenanceCRDName)
	if err != nil || after == nil {
		t.Fatalf("NodeMaintenance CRD: %v", err)
	}
	if after.ResourceVersion != before.ResourceVersion || !equality.Semantic.DeepEqual(after.ManagedFields, before.ManagedFields) {
		t.Errorf("the operator wrote the node-maintenance-operator's CRD: resourceVersion %s -> %s, managers %v -> %v",
			before.ResourceVersion, after.ResourceVersion, managers(before), managers(after))
	}
}
