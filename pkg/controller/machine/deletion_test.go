package machine

import (
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// preDrain hooks block the drain (Drained=False/DrainBlocked, persisted);
// removing them lets the drain run; preTerminate hooks then hold the
// instance until removed; finally the instance, the Node and the finalizer
// go.
func TestDeletionWithLifecycleHooks(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m, node := f.runningMachine("hooks", func(m *machinev1beta1.Machine) {
		m.Spec.LifecycleHooks.PreDrain = []machinev1beta1.LifecycleHook{{Name: "etcd-quorum", Owner: "clusteroperator/etcd"}}
		m.Spec.LifecycleHooks.PreTerminate = []machinev1beta1.LifecycleHook{{Name: "backup", Owner: "backup-operator"}}
	})
	f.deleteMachine(m)

	if res := f.mustReconcile(m); res.RequeueAfter != 0 {
		t.Errorf("a hook is removed by an update that wakes the controller; no requeue expected: %+v", res)
	}
	got := f.mustGet(m)
	wantPhase(t, got, machinev1beta1.PhaseDeleting)
	wantCondition(t, got, DrainedCondition, corev1.ConditionFalse, ReasonDrainBlocked, "blocked by pre-drain hook(s): etcd-quorum (owner clusteroperator/etcd)")
	wantCondition(t, got, DrainableCondition, corev1.ConditionFalse, ReasonHookPresent, "etcd-quorum")
	wantCondition(t, got, TerminableCondition, corev1.ConditionFalse, ReasonHookPresent, "backup")
	wantCalls(t, f.act, map[string]int{})
	if n := f.getNode(node.Name); n.Spec.Unschedulable {
		t.Error("node cordoned although a pre-drain hook blocks the drain")
	}

	// Blocked steady state: no writes, the event was recorded once.
	f.counter.Reset()
	f.mustReconcile(m)
	if w := f.counter.Writes(); w != 0 {
		t.Errorf("blocked Machine written again: %v", f.counter.WriteRequests())
	}
	if n := f.rec.count(EventDrainBlocked); n != 1 {
		t.Errorf("DrainBlocked recorded %d times:\n%s", n, f.rec)
	}

	// Remove the preDrain hook: the (empty) node drains; preTerminate holds.
	f.patchMachine(m, func(m *machinev1beta1.Machine) { m.Spec.LifecycleHooks.PreDrain = nil })
	f.mustReconcile(m)
	got = f.mustGet(m)
	wantCondition(t, got, DrainedCondition, corev1.ConditionTrue, ReasonDrained)
	wantCondition(t, got, DrainableCondition, corev1.ConditionTrue, ReasonNoHooks)
	wantCalls(t, f.act, map[string]int{})
	n := f.getNode(node.Name)
	if !n.Spec.Unschedulable || n.Annotations[DrainingAnnotation] != f.ns+"/hooks" {
		t.Errorf("node not cordoned and marked: unschedulable=%v annotations=%v", n.Spec.Unschedulable, n.Annotations)
	}
	// Drained in its first pass: no DrainProceeds event and no
	// DrainStartedAnnotation write (breaks if drain() recorded the start
	// before the pass again).
	if f.rec.count(EventDrainProceeds) != 0 || f.rec.count(EventDrainSucceeded) != 1 {
		t.Errorf("events:\n%s", f.rec)
	}
	if _, ok := got.Annotations[DrainStartedAnnotation]; ok {
		t.Errorf("%s written for a drain done in one pass", DrainStartedAnnotation)
	}

	// Remove the preTerminate hook: Delete, Exists=false, Node and finalizer
	// go: one Node DELETE, the final status (Terminable=True shows before
	// the Machine goes) and the finalizer PATCH. Breaks if the final status
	// write is skipped (the e2e TestMachineDeletionDrains then never sees
	// Drained=True).
	f.patchMachine(m, func(m *machinev1beta1.Machine) { m.Spec.LifecycleHooks.PreTerminate = nil })
	f.counter.Reset()
	f.mustReconcile(m)
	if w := f.counter.Writes(); w != 3 {
		t.Errorf("final pass wrote %d times, want 3 (Node DELETE, status PATCH, finalizer PATCH): %v", w, f.counter.WriteRequests())
	}
	wantCalls(t, f.act, map[string]int{opDelete: 1, opExists: 1})
	if f.get(m) != nil {
		t.Error("machine still exists after its finalizer should have been removed")
	}
	if f.getNode(node.Name) != nil {
		t.Error("node not deleted")
	}
	if f.rec.count(EventDeleted) != 1 {
		t.Errorf("events:\n%s", f.rec)
	}
}

// The exclude-node-draining annotation skips the drain: the node is not
// cordoned and its pods stay until the Node is deleted.
func TestDeletionExcludeNodeDraining(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m, node := f.runningMachine("nodrain", func(m *machinev1beta1.Machine) {
		m.Annotations = map[string]string{ExcludeNodeDrainingAnnotation: ""}
	})
	f.pod("app-1", node.Name, nil, 0)
	f.act.Set(func(a *fakeActuator) { a.DeleteRemovesInstance = false })
	f.deleteMachine(m)

	res := f.mustReconcile(m)
	if res.RequeueAfter <= 0 {
		t.Errorf("instance still terminating: want a requeue, got %+v", res)
	}
	got := f.mustGet(m)
	wantCondition(t, got, DrainedCondition, corev1.ConditionTrue, ReasonDrainSkipped, ExcludeNodeDrainingAnnotation)
	wantCalls(t, f.act, map[string]int{opDelete: 1, opExists: 1})
	if n := f.getNode(node.Name); n.Spec.Unschedulable {
		t.Error("node cordoned although draining is excluded")
	}
	if f.getPod("app-1") == nil {
		t.Error("pod evicted although draining is excluded")
	}
	if f.rec.count(EventDrainSkipped) != 1 {
		t.Errorf("events:\n%s", f.rec)
	}

	f.act.Set(func(a *fakeActuator) { a.ExistsValue = false })
	f.mustReconcile(m)
	if f.get(m) != nil || f.getNode(node.Name) != nil {
		t.Error("machine and node must be gone")
	}
}

// A Node that is already gone is not drained; the deletion waits until the
// provider reports the instance gone (backoff requeues), then finishes.
func TestDeletionNodeAlreadyGone(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m, node := f.runningMachine("nonode")
	if err := env.Client.Delete(f.ctx, node); err != nil {
		t.Fatal(err)
	}
	f.act.Set(func(a *fakeActuator) { a.DeleteRemovesInstance = false })
	f.deleteMachine(m)

	var last time.Duration
	for i := range 3 {
		res := f.mustReconcile(m)
		if res.RequeueAfter <= 0 || (i > 0 && res.RequeueAfter < last) {
			t.Errorf("pass %d: want a growing backoff requeue while the instance terminates, got %s after %s", i, res.RequeueAfter, last)
		}
		last = res.RequeueAfter
	}
	got := f.mustGet(m)
	wantCondition(t, got, DrainedCondition, corev1.ConditionTrue, ReasonDrainSkipped, "no longer exists")
	wantCalls(t, f.act, map[string]int{opDelete: 3, opExists: 3})

	f.act.Set(func(a *fakeActuator) { a.ExistsValue = false })
	if res := f.mustReconcile(m); res.RequeueAfter != 0 {
		t.Errorf("done: %+v", res)
	}
	if f.get(m) != nil {
		t.Error("machine must be gone")
	}
}

// A Machine whose providerSpec is invalid and that never got addresses is
// deletable even though Delete/Exists report InvalidConfiguration; with
// addresses the error blocks (an instance may exist).
func TestDeletionInvalidConfiguration(t *testing.T) {
	t.Parallel()
	t.Run("never got addresses", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.act.Set(func(a *fakeActuator) {
			a.DeleteErr = provider.InvalidConfiguration("spec.providerSpec.value: cannot be decoded")
			a.ExistsErr = provider.InvalidConfiguration("spec.providerSpec.value: cannot be decoded")
		})
		m := f.machine("invalid", func(m *machinev1beta1.Machine) {
			m.Finalizers = []string{machinev1beta1.MachineFinalizer}
			m.Status.Phase = ptr.To(machinev1beta1.PhaseFailed)
		})
		f.deleteMachine(m)
		f.mustReconcile(m)
		if f.get(m) != nil {
			t.Error("machine must be deletable")
		}
	})
	t.Run("with addresses", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.act.Set(func(a *fakeActuator) {
			a.DeleteErr = provider.InvalidConfiguration("spec.providerSpec.value: cannot be decoded")
		})
		m := f.machine("invalid", func(m *machinev1beta1.Machine) {
			m.Finalizers = []string{machinev1beta1.MachineFinalizer}
			m.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.1.1.1"}}
		})
		f.deleteMachine(m)
		if _, err := f.reconcile(m); err == nil || !strings.Contains(err.Error(), "cannot be decoded") {
			t.Errorf("want the Delete error, got %v", err)
		}
		if got := f.mustGet(m); !hasFinalizer(got) {
			t.Error("finalizer removed although an instance may exist")
		}
		if f.rec.count(EventFailedDelete) != 1 {
			t.Errorf("events:\n%s", f.rec)
		}
	})
}
