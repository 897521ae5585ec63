package machine

import (
	"fmt"
	"sync"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machine/machinetest"
)

// A PodDisruptionBudget that allows no disruption blocks the drain: the
// reason (pod and PDB) is persisted on Drained=False. An invalid
// node-drain-timeout annotation is reported without resetting the clock; a
// valid one ends the drain by deleting the remaining pods, and the deletion
// proceeds to the instance, the Node and the finalizer.
func TestDrainBlockedByPDBThenTimeout(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m, node := f.runningMachine("pdb")
	web := map[string]string{"app": "web"}
	f.pod("web-1", node.Name, web, 0)
	f.pod("free-1", node.Name, nil, 0) // no PDB, no owner: evicted (Force)
	f.blockingPDB("web", web, 1)
	f.act.Set(func(a *machinetest.Actuator) { a.DeleteRemovesInstance = false })
	timeoutsBefore := metricValue(t, DrainTimeoutsTotal)
	durationsBefore := metricValue(t, DrainDurationSeconds)
	f.deleteMachine(m)

	res := f.mustReconcile(m)
	if res.RequeueAfter <= 0 {
		t.Errorf("a blocked drain is retried with backoff: %+v", res)
	}
	got := f.mustGet(m)
	wantPhase(t, got, machinev1beta1.PhaseDeleting)
	blocked := wantCondition(t, got, DrainedCondition, corev1.ConditionFalse, ReasonDrainInProgress,
		fmt.Sprintf("evicting %s/web-1: blocked by PodDisruptionBudget %[1]s/web (0 disruptions allowed)", f.ns), "1 pod(s) remaining")
	t.Logf("blocked: Drained=False %s: %s", blocked.Reason, blocked.Message)
	if blocked.Severity != machinev1beta1.ConditionSeverityWarning {
		t.Errorf("severity = %q", blocked.Severity)
	}
	if f.getPod("free-1") != nil {
		t.Error("the unprotected pod was not evicted")
	}
	if f.getPod("web-1") == nil {
		t.Fatal("the PDB-protected pod was evicted")
	}
	n := f.getNode(node.Name)
	if !n.Spec.Unschedulable || n.Annotations[DrainingAnnotation] == "" {
		t.Errorf("node not cordoned by the controller: %v %v", n.Spec.Unschedulable, n.Annotations)
	}
	wantCalls(t, f.act, map[string]int{})

	// An invalid timeout annotation is reported; the clock is not reset.
	f.patchMachine(m, func(m *machinev1beta1.Machine) {
		m.Annotations = map[string]string{NodeDrainTimeoutAnnotation: "soon"}
	})
	f.mustReconcile(m)
	got = f.mustGet(m)
	c := wantCondition(t, got, DrainedCondition, corev1.ConditionFalse, ReasonDrainInProgress,
		NodeDrainTimeoutAnnotation+` annotation "soon"`, "blocked by PodDisruptionBudget")
	t.Logf("invalid annotation: %s", c.Message)
	if !c.LastTransitionTime.Equal(&blocked.LastTransitionTime) {
		t.Errorf("drain start moved: %v → %v", blocked.LastTransitionTime, c.LastTransitionTime)
	}

	// A 2s timeout, measured from the persisted drain start: once it has
	// passed the remaining pods are deleted without eviction.
	f.patchMachine(m, func(m *machinev1beta1.Machine) {
		m.Annotations = map[string]string{NodeDrainTimeoutAnnotation: "2s"}
	})
	f.clock.Advance(3 * time.Second)
	res = f.mustReconcile(m)
	got = f.mustGet(m)
	c = wantCondition(t, got, DrainedCondition, corev1.ConditionTrue, ReasonDrainTimedOut,
		fmt.Sprintf("deleted 1 remaining pod(s) without eviction: %s/web-1", f.ns))
	t.Logf("timed out: %s", c.Message)
	if f.getPod("web-1") != nil {
		t.Error("the blocking pod was not deleted after the timeout")
	}
	wantCalls(t, f.act, map[string]int{machinetest.Delete: 1, machinetest.Exists: 1})
	if res.RequeueAfter <= 0 {
		t.Errorf("instance still terminating: want a requeue, got %+v", res)
	}
	if d := metricValue(t, DrainTimeoutsTotal) - timeoutsBefore; d < 1 {
		t.Errorf("machine_api_drain_timeouts_total grew by %v", d)
	}
	if d := metricValue(t, DrainDurationSeconds) - durationsBefore; d < 1 {
		t.Errorf("machine_api_drain_duration_seconds observed %v drains", d)
	}
	if f.rec.count(EventDrainTimedOut) != 1 {
		t.Errorf("events:\n%s", f.rec)
	}

	f.act.Set(func(a *machinetest.Actuator) { a.ExistsValue = false })
	f.mustReconcile(m)
	if f.get(m) != nil || f.getNode(node.Name) != nil {
		t.Error("machine and node must be gone")
	}
}

// On an unreachable node (Ready=Unknown) pods are evicted with a 1s grace
// period and not waited for: a pod with a 30s grace period (no kubelet will
// ever confirm it) does not hold the drain.
func TestDrainUnreachableNode(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.r.attemptTimeout = 3 * time.Second // long enough to outlast the 1s grace period
	node := f.node(f.nodeName("unreachable"), corev1.ConditionUnknown, nil)
	m := f.machineOnNode("unreachable", node)
	f.pod("slow-1", node.Name, nil, 30)
	f.act.Set(func(a *machinetest.Actuator) { a.DeleteRemovesInstance = false })
	f.deleteMachine(m)

	start := time.Now()
	eventually(t, 20*time.Second, "Drained=True", func() bool {
		res := f.mustReconcile(m)
		if isConditionTrue(f.mustGet(m).Status.Conditions, DrainedCondition) {
			return true
		}
		time.Sleep(res.RequeueAfter)
		return false
	})
	wantCondition(t, f.mustGet(m), DrainedCondition, corev1.ConditionTrue, ReasonDrained)
	// Far below the pod's 30s grace period, which a reachable node honours.
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("drain took %s", took)
	}
	p := f.getPod("slow-1")
	if p == nil {
		t.Fatal("pod gone: envtest has no kubelet, the evicted pod should still be terminating")
	}
	if p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != 1 {
		t.Errorf("deletion grace period = %v, want 1", p.DeletionGracePeriodSeconds)
	}
}

// heldDeletingMachine creates a Machine that is being deleted and stays (a
// foreign finalizer holds it), as a Machine whose drain is in progress.
func (f *fixture) heldDeletingMachine(name string) *machinev1beta1.Machine {
	f.t.Helper()
	m := f.machine(name, func(m *machinev1beta1.Machine) { m.Finalizers = []string{"test.example.com/hold"} })
	f.deleteMachine(m)
	f.t.Cleanup(func() {
		f.patchMachine(m, func(m *machinev1beta1.Machine) { m.Finalizers = nil })
	})
	return m
}

// setDrainState cordons (or uncordons) a node and sets (or, when owner is
// empty, removes) its DrainingAnnotation.
func (f *fixture) setDrainState(n *corev1.Node, unschedulable bool, owner string) {
	f.t.Helper()
	cur := f.getNode(n.Name)
	base := cur.DeepCopy()
	cur.Spec.Unschedulable = unschedulable
	if owner == "" {
		delete(cur.Annotations, DrainingAnnotation)
	} else {
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[DrainingAnnotation] = owner
	}
	if err := env.Client.Patch(f.ctx, cur, client.MergeFrom(base)); err != nil {
		f.t.Fatal(err)
	}
}

// Only one control-plane node is drained at a time, counting only nodes the
// controller cordoned itself for a Machine that is still being deleted.
func TestDrainOneControlPlaneNodeAtATime(t *testing.T) {
	t.Parallel()
	serializeControlPlaneTest(t)
	f := newFixture(t)
	cp := map[string]string{ControlPlaneNodeRoleLabel: ""}
	busy := f.node(f.nodeName("cp-a"), corev1.ConditionTrue, cp)
	node := f.node(f.nodeName("cp-b"), corev1.ConditionTrue, cp)
	m := f.machineOnNode("cp-b", node)
	f.act.Set(func(a *machinetest.Actuator) { a.DeleteRemovesInstance = false })

	// cp-a is being drained by the controller for Machine cp-a (deleting).
	f.heldDeletingMachine("cp-a")
	f.setDrainState(busy, true, f.ns+"/cp-a")
	f.deleteMachine(m)
	res := f.mustReconcile(m)
	if res.RequeueAfter <= 0 {
		t.Errorf("want a requeue while another control-plane node drains: %+v", res)
	}
	got := f.mustGet(m)
	wantCondition(t, got, DrainedCondition, corev1.ConditionFalse, ReasonDrainBlocked,
		"waiting for control-plane node "+busy.Name, "only one control-plane node")
	if !waitingForControlPlaneDrain(got) {
		t.Error("the waiting Machine is not recognised as waiting (the Node watch would not wake it)")
	}
	if f.getNode(node.Name).Spec.Unschedulable {
		t.Error("second control-plane node cordoned")
	}

	// cp-a stays cordoned, but not by us (e.g. an upgrade): no longer blocks.
	f.setDrainState(busy, true, "")
	f.mustReconcile(m)
	wantCondition(t, f.mustGet(m), DrainedCondition, corev1.ConditionTrue, ReasonDrained)
}

// A stale DrainingAnnotation (its Machine is gone, or exists but is not being
// deleted) does not block control-plane drains.
func TestDrainControlPlaneStaleAnnotation(t *testing.T) {
	t.Parallel()
	serializeControlPlaneTest(t)
	f := newFixture(t)
	cp := map[string]string{ControlPlaneNodeRoleLabel: ""}
	gone := f.node(f.nodeName("cp-gone"), corev1.ConditionTrue, cp)
	alive := f.node(f.nodeName("cp-alive"), corev1.ConditionTrue, cp)
	f.machine("cp-alive") // exists, not being deleted
	f.setDrainState(gone, true, f.ns+"/cp-gone")
	f.setDrainState(alive, true, f.ns+"/cp-alive")
	node := f.node(f.nodeName("cp-b"), corev1.ConditionTrue, cp)
	m := f.machineOnNode("cp-b", node)
	f.act.Set(func(a *machinetest.Actuator) { a.DeleteRemovesInstance = false })
	f.deleteMachine(m)

	f.mustReconcile(m)
	wantCondition(t, f.mustGet(m), DrainedCondition, corev1.ConditionTrue, ReasonDrained)
	if n := f.getNode(node.Name); !n.Spec.Unschedulable || n.Annotations[DrainingAnnotation] != f.ns+"/cp-b" {
		t.Errorf("node not cordoned for the Machine: %v %v", n.Spec.Unschedulable, n.Annotations)
	}
}

// Uncordoning a node mid-drain, and waiting for another control-plane drain
// meanwhile, do not restart the drain timeout: it is measured from the first
// start.
func TestDrainStartSurvivesUncordonAndControlPlaneWait(t *testing.T) {
	t.Parallel()
	serializeControlPlaneTest(t)
	f := newFixture(t)
	cp := map[string]string{ControlPlaneNodeRoleLabel: ""}
	other := f.node(f.nodeName("cp-a"), corev1.ConditionTrue, cp)
	node := f.node(f.nodeName("cp-b"), corev1.ConditionTrue, cp)
	m := f.machineOnNode("cp-b", node, func(m *machinev1beta1.Machine) {
		m.Annotations = map[string]string{NodeDrainTimeoutAnnotation: "30s"}
	})
	web := map[string]string{"app": "web"}
	f.pod("web-1", node.Name, web, 0)
	f.blockingPDB("web", web, 1)
	f.act.Set(func(a *machinetest.Actuator) { a.DeleteRemovesInstance = false })
	f.deleteMachine(m)

	f.mustReconcile(m)
	start := wantCondition(t, f.mustGet(m), DrainedCondition, corev1.ConditionFalse, ReasonDrainInProgress, "blocked by PodDisruptionBudget").LastTransitionTime

	// Someone uncordons cp-b (kubectl keeps the annotation) while cp-a starts
	// draining for another Machine: cp-b waits, its drain start is kept.
	f.clock.Advance(10 * time.Second)
	f.setDrainState(node, false, f.ns+"/cp-b")
	f.heldDeletingMachine("cp-a")
	f.setDrainState(other, true, f.ns+"/cp-a")
	before := f.rec.count(EventDrainBlocked)
	if res := f.mustReconcile(m); res.RequeueAfter <= 0 {
		t.Errorf("want a requeue while waiting: %+v", res)
	}
	got := f.mustGet(m)
	c := wantCondition(t, got, DrainedCondition, corev1.ConditionFalse, ReasonDrainInProgress, "waiting for control-plane node "+other.Name)
	if !c.LastTransitionTime.Equal(&start) {
		t.Errorf("drain start moved while waiting: %v → %v", start, c.LastTransitionTime)
	}
	if !waitingForControlPlaneDrain(got) {
		t.Error("the waiting Machine is not recognised as waiting")
	}
	if f.getNode(node.Name).Spec.Unschedulable {
		t.Error("cp-b re-cordoned while cp-a drains")
	}
	if n := f.rec.count(EventDrainBlocked) - before; n != 1 {
		t.Errorf("DrainBlocked recorded %d times, want once:\n%s", n, f.rec)
	}

	// cp-a is done: cp-b is cordoned again and the drain goes on, same start.
	f.clock.Advance(10 * time.Second)
	f.setDrainState(other, false, "")
	f.mustReconcile(m)
	c = wantCondition(t, f.mustGet(m), DrainedCondition, corev1.ConditionFalse, ReasonDrainInProgress, "blocked by PodDisruptionBudget")
	if !c.LastTransitionTime.Equal(&start) {
		t.Errorf("drain start moved on re-cordon: %v → %v", start, c.LastTransitionTime)
	}
	if !f.getNode(node.Name).Spec.Unschedulable {
		t.Error("cp-b not cordoned again")
	}

	// 35s after the first start (15s after the wait ended) the 30s timeout
	// has expired.
	f.clock.Advance(15 * time.Second)
	f.mustReconcile(m)
	wantCondition(t, f.mustGet(m), DrainedCondition, corev1.ConditionTrue, ReasonDrainTimedOut)
}

// controlPlaneTests serializes the tests that create control-plane Nodes:
// the one-control-plane-drain-at-a-time rule looks at every Node in the
// cluster, so a parallel test's draining control-plane Node would block
// another test's drain.
var controlPlaneTests sync.Mutex

// serializeControlPlaneTest holds controlPlaneTests until the test and its
// cleanups (which delete its Nodes) are done.
func serializeControlPlaneTest(t *testing.T) {
	controlPlaneTests.Lock()
	t.Cleanup(controlPlaneTests.Unlock)
}
