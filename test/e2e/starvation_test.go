//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machine"
)

// blockedDrains is how many Machines are deleted with drains a
// PodDisruptionBudget blocks, and provisionBound how soon a new Machine must
// be Running meanwhile (issue: 15 Machines, 15 s, default flags).
const (
	blockedDrains  = 15
	provisionBound = 15 * time.Second
)

// TestBlockedDrainsDoNotDelayProvisioning: while 15 deleted Machines' drains
// are blocked by a PodDisruptionBudget (one guarded pod on each node), a new
// Machine is Running within 15 s. A drain that held a worker until its pods
// were gone would take every worker of the machine controller.
func TestBlockedDrainsDoNotDelayProvisioning(t *testing.T) {
	ctx := kubemarkTest(t, 5*time.Minute)
	pool := "starve-" + rand.String(5)

	machines := make([]*machinev1beta1.Machine, blockedDrains)
	for i := range machines {
		machines[i] = newKubemarkMachine(fmt.Sprintf("e2e-%s-%d", pool, i), pool)
		createMachine(ctx, t, machines[i])
	}
	for _, m := range machines {
		waitRunning(ctx, t, m)
	}
	// Registered after the Machines' cleanup, so it runs first: without
	// the PodDisruptionBudget their drains finish.
	ns := guardEveryNode(ctx, t, "starve", pool, blockedDrains)

	for _, m := range machines {
		if err := cluster.Delete(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range machines {
		waitFor(ctx, t, "machine "+m.Name+" Drained=False naming the PodDisruptionBudget", func(ctx context.Context) (bool, error) {
			if err := cluster.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
				return false, err
			}
			c := drainedCondition(m)
			return c != nil && c.Status == corev1.ConditionFalse && c.Reason == machine.ReasonDrainInProgress &&
				strings.Contains(c.Message, ns+"/starve"), nil
		})
	}

	fresh := newKubemarkMachine("e2e-"+pool+"-new", pool+"-new")
	createMachine(ctx, t, fresh)
	boundCtx, cancelBound := context.WithTimeout(ctx, provisionBound)
	defer cancelBound()
	_, took := waitRunning(boundCtx, t, fresh)
	t.Logf("FIGURE new Machine Running %s after its creation, while %d drains were blocked", took.Round(100*time.Millisecond), blockedDrains)

	// Every drain is still blocked: the new Machine did not wait for them.
	for _, m := range machines {
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
			t.Fatalf("machine %s: %v (its drain should still be blocked)", m.Name, err)
		}
		if c := drainedCondition(m); c == nil || c.Status != corev1.ConditionFalse {
			t.Errorf("machine %s: Drained %+v, want False (blocked)", m.Name, c)
		}
	}
}

// guardEveryNode runs one pause pod on each of the pool's n nodes (required
// anti-affinity by hostname), guarded by a PodDisruptionBudget that allows
// no disruption (newGuardedWorkload), and returns its namespace.
func guardEveryNode(ctx context.Context, t *testing.T, name, pool string, n int32) string {
	t.Helper()
	w := newGuardedWorkload(ctx, t, name, pool, n, 0, func(spec *corev1.PodSpec) {
		spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "e2e-" + name}},
				TopologyKey:   corev1.LabelHostname,
			}},
		}}
	})
	waitFor(ctx, t, fmt.Sprintf("%d guarded pods Running, one per node", n), func(ctx context.Context) (bool, error) {
		pods, err := w.pods(ctx)
		if err != nil {
			return false, err
		}
		nodes := map[string]bool{}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				nodes[p.Spec.NodeName] = true
			}
		}
		return int32(len(nodes)) == n, nil
	})
	pdb := &policyv1.PodDisruptionBudget{}
	waitFor(ctx, t, "the PodDisruptionBudget counts every pod", func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, pdb); err != nil {
			return false, err
		}
		return pdb.Status.CurrentHealthy == n && pdb.Status.DisruptionsAllowed == 0, nil
	})
	return w.ns
}
