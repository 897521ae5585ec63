package operator

import (
	"context"
	"fmt"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/status"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// createWorkers creates a MachineSet of n replicas and its n Machines (no
// machine controller runs here: the test sets their phases).
func createWorkers(t *testing.T, ns string, n int) []*machinev1beta1.Machine {
	t.Helper()
	ctx := context.Background()
	sel := map[string]string{"machine.openshift.io/cluster-api-machineset": "worker"}
	ms := &machinev1beta1.MachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "worker"}}
	ms.Spec.Replicas = ptr.To(int32(n))
	ms.Spec.Selector.MatchLabels = sel
	ms.Spec.Template.Labels = sel
	if err := env.Client.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	var machines []*machinev1beta1.Machine
	for i := range n {
		m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("worker-%d", i), Labels: sel}}
		if err := env.Client.Create(ctx, m); err != nil {
			t.Fatal(err)
		}
		machines = append(machines, m)
	}
	return machines
}

func setPhase(t *testing.T, m *machinev1beta1.Machine, phase string) {
	t.Helper()
	m.Status.Phase = ptr.To(phase)
	if err := env.Client.Status().Update(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

// TestInstallGate: on a fresh install Available waits until 2 worker
// Machines are Running, as on OpenShift; a cluster that already reported a
// version (an upgrade) is not gated.
func TestInstallGate(t *testing.T) {
	t.Run("fresh install", func(t *testing.T) {
		ns := newNamespace(t)
		setInfrastructure(t, configv1.AWSPlatformType, "")
		machines := createWorkers(t, ns, 3)
		startOperator(t, writeImages(t, testImages), harnessOptions{ns: ns})
		waitDeployment(t, ns)
		setTerminationHandlerRolledOut(t, ns)
		setDeploymentAvailable(t, ns, true)
		waitCondition(t, configv1.OperatorAvailable, configv1.ConditionFalse, status.ReasonInitializing,
			"minimum worker replica count (2) not yet met: current running replicas 0, waiting for [worker-0 worker-1 worker-2]")
		waitCondition(t, configv1.OperatorProgressing, configv1.ConditionTrue, status.ReasonSyncing, "waiting for worker Machines")
		waitCondition(t, configv1.OperatorDegraded, configv1.ConditionFalse, "", "")

		setPhase(t, machines[0], machinev1beta1.PhaseRunning)
		waitCondition(t, configv1.OperatorAvailable, configv1.ConditionFalse, status.ReasonInitializing, "current running replicas 1, waiting for [worker-1 worker-2]")
		setPhase(t, machines[1], machinev1beta1.PhaseRunning)
		waitCondition(t, configv1.OperatorAvailable, configv1.ConditionTrue, status.ReasonAsExpected, "available at operator: "+testRelease)

	})

	t.Run("upgrade", func(t *testing.T) {
		ns := newNamespace(t)
		setInfrastructure(t, configv1.AWSPlatformType, "")
		createWorkers(t, ns, 3)
		// The previous release was rolled out: its version is reported.
		ctx := context.Background()
		co := &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: "machine-api"}}
		if err := env.Client.Create(ctx, co); err != nil {
			t.Fatal(err)
		}
		co.Status.Versions = []configv1.OperandVersion{{Name: status.OperatorVersionName, Version: "4.21.0"}}
		co.Status.Conditions = []configv1.ClusterOperatorStatusCondition{{Type: configv1.OperatorAvailable, Status: configv1.ConditionTrue,
			Reason: status.ReasonAsExpected, LastTransitionTime: metav1.Now()}}
		if err := env.Client.Status().Update(ctx, co); err != nil {
			t.Fatal(err)
		}
		startOperator(t, writeImages(t, testImages), harnessOptions{ns: ns})
		waitDeployment(t, ns)
		setTerminationHandlerRolledOut(t, ns)
		setDeploymentAvailable(t, ns, true)
		waitCondition(t, configv1.OperatorAvailable, configv1.ConditionTrue, status.ReasonAsExpected, "available at operator: "+testRelease)
	})
}

// setTerminationHandlerRolledOut plays the DaemonSet controller for the
// termination handler (AWS).
func setTerminationHandlerRolledOut(t *testing.T, ns string) {
	t.Helper()
	poll.Eventually(t, 20*time.Second, "termination handler status", func(ctx context.Context) (bool, error) {
		ds := &appsv1.DaemonSet{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "machine-api-termination-handler"}, ds); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		ds.Status = appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation}
		return true, env.Client.Status().Update(ctx, ds)
	})
}
