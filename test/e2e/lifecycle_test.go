//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machine"
)

func drainedCondition(m *machinev1beta1.Machine) *machinev1beta1.Condition {
	for i := range m.Status.Conditions {
		if m.Status.Conditions[i].Type == machine.DrainedCondition {
			return &m.Status.Conditions[i]
		}
	}
	return nil
}

// updateMachine applies mutate to the live Machine, retrying on conflicts
// (the controllers write the Machine concurrently).
func updateMachine(ctx context.Context, t *testing.T, m *machinev1beta1.Machine, mutate func(*machinev1beta1.Machine)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
			return err
		}
		mutate(m)
		return cluster.Update(ctx, m)
	})
	if err != nil {
		t.Fatalf("updating machine %s: %v", m.Name, err)
	}
}

// deleteAndWaitGone deletes obj (already gone is fine) and waits until it is.
func deleteAndWaitGone(ctx context.Context, t *testing.T, what string, obj client.Object) {
	t.Helper()
	if err := cluster.Delete(ctx, obj.DeepCopyObject().(client.Object)); client.IgnoreNotFound(err) != nil {
		t.Errorf("deleting %s: %v", what, err)
	}
	waitGone(ctx, t, what, obj.DeepCopyObject().(client.Object))
}

func waitGone(ctx context.Context, t *testing.T, what string, obj client.Object) {
	t.Helper()
	waitFor(ctx, t, what+" removed", func(ctx context.Context) (bool, error) {
		err := cluster.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// TestPreDrainHookBlocksDeletion: a preDrain hook holds a deleted Machine in
// Deleting with Drained=False DrainBlocked; new hooks are refused while it is
// deleting; removing the hook lets the deletion finish.
func TestPreDrainHookBlocksDeletion(t *testing.T) {
	ctx := kubemarkTest(t, 2*time.Minute)
	m := newKubemarkMachine("e2e-hook-"+rand.String(5), "hook")
	m.Spec.LifecycleHooks.PreDrain = []machinev1beta1.LifecycleHook{{Name: "e2e-hold", Owner: "e2e-suite"}}
	createMachine(ctx, t, m)
	node, _ := waitRunning(ctx, t, m)

	if err := cluster.Delete(ctx, m); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "Drained=False DrainBlocked naming the hook", func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
			return false, err
		}
		c := drainedCondition(m)
		return m.Status.Phase != nil && *m.Status.Phase == "Deleting" && c != nil &&
			c.Status == corev1.ConditionFalse && c.Reason == machine.ReasonDrainBlocked && strings.Contains(c.Message, "e2e-hold"), nil
	})

	// Adding a hook during deletion is refused by the admission policy.
	m.Spec.LifecycleHooks.PreTerminate = append(m.Spec.LifecycleHooks.PreTerminate, machinev1beta1.LifecycleHook{Name: "e2e-late", Owner: "e2e-suite"})
	err := cluster.Update(ctx, m)
	if err == nil || !strings.Contains(err.Error(), "lifecycle hooks") {
		t.Fatalf("adding a hook during deletion: err %v, want a rejection about lifecycle hooks", err)
	}

	// Removing the hook is allowed and the deletion proceeds.
	updateMachine(ctx, t, m, func(m *machinev1beta1.Machine) { m.Spec.LifecycleHooks.PreDrain = nil })
	waitGone(ctx, t, "node "+node, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})
	waitGone(ctx, t, "machine "+m.Name, m)
}

// TestDrainBlockedByPDBThenTimeout: a PodDisruptionBudget that allows no
// disruption blocks the drain, and Drained=False says which pod and PDB;
// the annotation machine.openshift.io/node-drain-timeout bounds the wait,
// after which the pods are deleted and the Machine goes away.
func TestDrainBlockedByPDBThenTimeout(t *testing.T) {
	ctx := kubemarkTest(t, 3*time.Minute)
	pool := "pdb-" + rand.String(5)
	m := newKubemarkMachine("e2e-"+pool, pool)
	createMachine(ctx, t, m)
	node, _ := waitRunning(ctx, t, m)

	w := newGuardedWorkload(ctx, t, "db", pool, 1, 0)
	waitFor(ctx, t, "the pod Running on "+node, func(ctx context.Context) (bool, error) {
		n, err := w.runningOn(ctx, node)
		return n == 1, err
	})

	if err := cluster.Delete(ctx, m); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "Drained=False naming the PodDisruptionBudget", func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
			return false, err
		}
		c := drainedCondition(m)
		return c != nil && c.Status == corev1.ConditionFalse && c.Reason == machine.ReasonDrainInProgress &&
			strings.Contains(c.Message, w.ns+"/db"), nil
	})
	t.Logf("blocked: %s", drainedCondition(m).Message)

	// Bound the drain: the remaining pod is deleted and deletion proceeds.
	updateMachine(ctx, t, m, func(m *machinev1beta1.Machine) {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[machine.NodeDrainTimeoutAnnotation] = "1s"
	})
	waitGone(ctx, t, "node "+node, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})
	waitGone(ctx, t, "machine "+m.Name, m)
}
