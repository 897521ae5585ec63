package machine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/apply/applytest"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// evictions returns how many eviction requests the fixture's clients sent
// for each pod (by name) since the counter was last reset.
func (f *fixture) evictions() map[string]int {
	out := map[string]int{}
	prefix := "/api/v1/namespaces/" + f.ns + "/pods/"
	for req, n := range f.counter.Snapshot() {
		if req.Verb == applytest.VerbPost && strings.HasPrefix(req.Path, prefix) && strings.HasSuffix(req.Path, "/eviction") {
			out[strings.TrimSuffix(strings.TrimPrefix(req.Path, prefix), "/eviction")] += n
		}
	}
	return out
}

// A PodDisruptionBudget that allows no disruption blocks the drain. Each
// reconcile is one eviction pass: every pod is evicted once, the refused
// eviction is not retried within the reconcile, and the Machine is requeued.
// The reason (pod and PDB) is persisted on Drained=False; a pass that finds
// the same state writes nothing. An invalid node-drain-timeout annotation is
// reported without resetting the drain start; a valid one ends the drain by
// deleting the remaining pods, and the deletion proceeds to the instance, the
// Node and the finalizer.
func TestDrainBlockedByPDBThenTimeout(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m, node := f.runningMachine("pdb")
	web := map[string]string{"app": "web"}
	f.pod("web-1", node.Name, web, 0)
	f.pod("free-1", node.Name, nil, 0) // no PDB, no owner: evicted (Force)
	f.blockingPDB("web", web, 1)
	f.act.Set(func(a *fakeActuator) { a.DeleteRemovesInstance = false })
	timeoutsBefore := metricValue(t, DrainTimeoutsTotal)
	durationsBefore := metricValue(t, DrainDurationSeconds)
	f.deleteMachine(m)

	f.counter.Reset()
	res := f.mustReconcile(m)
	if res.RequeueAfter <= 0 || res.RequeueAfter > defaultDrainBackoffMax {
		t.Errorf("a blocked drain is requeued within %s: %+v", defaultDrainBackoffMax, res)
	}
	if got := f.evictions(); got["web-1"] != 1 || got["free-1"] != 1 || len(got) != 2 {
		t.Errorf("one pass evicts each pod once, got %v", got)
	}
	got := f.mustGet(m)
	wantPhase(t, got, machinev1beta1.PhaseDeleting)
	blocked := wantCondition(t, got, DrainedCondition, corev1.ConditionFalse, ReasonDrainInProgress,
		"1 pod(s) remaining (1 blocked by a PodDisruptionBudget)",
		fmt.Sprintf("evicting %s/web-1: blocked by PodDisruptionBudget %[1]s/web (0 disruptions allowed)", f.ns))
	t.Logf("blocked: Drained=False %s: %s", blocked.Reason, blocked.Message)
	if blocked.Severity != machinev1beta1.ConditionSeverityWarning {
		t.Errorf("severity = %q", blocked.Severity)
	}
	start := got.Annotations[DrainStartedAnnotation]
	if _, err := time.Parse(time.RFC3339, start); err != nil {
		t.Errorf("drain start annotation %s = %q: %v", DrainStartedAnnotation, start, err)
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

	// The next pass: the blocked pod is evicted once more; nothing else is
	// written (same message, same start).
	f.counter.Reset()
	f.mustReconcile(m)
	if got := f.evictions(); got["web-1"] != 1 || len(got) != 1 {
		t.Errorf("second pass evictions %v", got)
	}
	if w := f.counter.Writes(); w != 1 {
		t.Errorf("a pass that finds the same state writes only the eviction, got %v", f.counter.WriteRequests())
	}

	// An invalid timeout annotation is reported; the start is kept.
	f.patchMachine(m, func(m *machinev1beta1.Machine) {
		m.Annotations[NodeDrainTimeoutAnnotation] = "soon"
	})
	f.mustReconcile(m)
	got = f.mustGet(m)
	c := wantCondition(t, got, DrainedCondition, corev1.ConditionFalse, ReasonDrainInProgress,
		NodeDrainTimeoutAnnotation+` annotation "soon"`, "blocked by PodDisruptionBudget")
	t.Logf("invalid annotation: %s", c.Message)
	if got.Annotations[DrainStartedAnnotation] != start {
		t.Errorf("drain start moved: %s → %s", start, got.Annotations[DrainStartedAnnotation])
	}
	if !c.LastTransitionTime.Equal(&blocked.LastTransitionTime) {
		t.Errorf("a message change moved lastTransitionTime: %v → %v", blocked.LastTransitionTime, c.LastTransitionTime)
	}

	// A 2s timeout, measured from the persisted drain start: once it has
	// passed the remaining pods are deleted without eviction.
	f.patchMachine(m, func(m *machinev1beta1.Machine) {
		m.Annotations[NodeDrainTimeoutAnnotation] = "2s"
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
	wantCalls(t, f.act, map[string]int{opDelete: 1, opExists: 1})
	if res.RequeueAfter <= 0 {
		t.Errorf("instance still terminating: want a requeue, got %+v", res)
	}
	if d := metricValue(t, DrainTimeoutsTotal) - timeoutsBefore; d < 1 {
		t.Errorf("machine_api_drain_timeouts_total grew by %v", d)
	}
	if d := metricValue(t, DrainDurationSeconds) - durationsBefore; d < 1 {
		t.Errorf("machine_api_drain_duration_seconds observed %v drains", d)
	}
	if f.rec.count(EventDrainTimedOut) != 1 || f.rec.count(EventDrainProceeds) != 1 {
		t.Errorf("events:\n%s", f.rec)
	}

	f.act.Set(func(a *fakeActuator) { a.ExistsValue = false })
	f.mustReconcile(m)
	if f.get(m) != nil || f.getNode(node.Name) != nil {
		t.Error("machine and node must be gone")
	}
}

// A pod that is already terminating is not evicted again (on a reachable
// node) and is reported as terminating until it is gone; then the node is
// drained.
func TestDrainWaitsForTerminatingPodsWithoutHoldingTheReconcile(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m, node := f.runningMachine("terminating")
	f.pod("slow-1", node.Name, nil, 30) // no kubelet: terminates until deleted with grace 0
	f.act.Set(func(a *fakeActuator) { a.DeleteRemovesInstance = false })
	f.deleteMachine(m)

	if res := f.mustReconcile(m); res.RequeueAfter <= 0 {
		t.Errorf("want a requeue while the pod terminates: %+v", res)
	}
	wantCondition(t, f.mustGet(m), DrainedCondition, corev1.ConditionFalse, ReasonDrainInProgress,
		"1 pod(s) remaining (1 terminating)", f.ns+"/slow-1: terminating")
	f.counter.Reset()
	f.mustReconcile(m)
	if got := f.evictions(); len(got) != 0 {
		t.Errorf("a terminating pod was evicted again: %v", got)
	}
	c := wantCondition(t, f.mustGet(m), DrainedCondition, corev1.ConditionFalse, ReasonDrainInProgress, f.ns+"/slow-1: terminating")
	if c.Severity != machinev1beta1.ConditionSeverityInfo {
		t.Errorf("pods that only terminate are no warning: %q", c.Severity)
	}

	// The pod goes (its kubelet would confirm it; here: force-delete it).
	if err := env.Client.Delete(f.ctx, f.getPod("slow-1"), client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	f.mustReconcile(m)
	wantCondition(t, f.mustGet(m), DrainedCondition, corev1.ConditionTrue, ReasonDrained)
}

// On an unreachable node (Ready=Unknown) pods are evicted with a 1s grace
// period and not waited for: a pod with a 30s grace period (no kubelet will
// ever confirm it) does not hold the drain.
func TestDrainUnreachableNode(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	node := f.node(f.nodeName("unreachable"), corev1.ConditionUnknown, nil)
	m := f.machineOnNode("unreachable", node)
	f.pod("slow-1", node.Name, nil, 30)
	f.act.Set(func(a *fakeActuator) { a.DeleteRemovesInstance = false })
	f.deleteMachine(m)

	// Each reconcile is one pass; the requeue is left to the poll.
	poll.Eventually(t, 20*time.Second, "Drained=True", func(context.Context) (bool, error) {
		f.mustReconcile(m)
		return conditions.IsTrue(f.mustGet(m).Status.Conditions, DrainedCondition), nil
	})
	wantCondition(t, f.mustGet(m), DrainedCondition, corev1.ConditionTrue, ReasonDrained)
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
	f.act.Set(func(a *fakeActuator) { a.DeleteRemovesInstance = false })

	// cp-a is being drained by the controller for Machine cp-a (deleting).
	f.heldDeletingMachine("cp-a")
	f.setDrainState(busy, true, f.ns+"/cp-a")
	f.deleteMachine(m)
	res := f.mustReconcile(m)
	if res.RequeueAfter <= 0 {
		t.Errorf("want a requeue while another control-plane node drains: %+v", res)
	}
	got := f.mustGet(m)
	wantCondition(t, got, DrainedCondition, corev1.ConditionFalse, ReasonWaitingForControlPlaneDrain,
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
	f.act.Set(func(a *fakeActuator) { a.DeleteRemovesInstance = false })
	f.deleteMachine(m)

	f.mustReconcile(m)
	wantCondition(t, f.mustGet(m), DrainedCondition, corev1.ConditionTrue, ReasonDrained)
	if n := f.getNode(node.Name); !n.Spec.Unschedulable || n.Annotations[DrainingAnnotation] != f.ns+"/cp-b" {
		t.Errorf("node not cordoned for the Machine: %v %v", n.Spec.Unschedulable, n.Annotations)
	}
}

// Uncordoning a node mid-drain, and waiting for another control-plane drain
// meanwhile, do not restart the drain timeout: it is measured from the drain
// start annotation. The wait has its own reason; Drained stays False
// throughout, so its lastTransitionTime does not move either.
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
	f.act.Set(func(a *fakeActuator) { a.DeleteRemovesInstance = false })
	f.deleteMachine(m)

	f.mustReconcile(m)
	got := f.mustGet(m)
	first := wantCondition(t, got, DrainedCondition, corev1.ConditionFalse, ReasonDrainInProgress, "blocked by PodDisruptionBudget").LastTransitionTime
	start := got.Annotations[DrainStartedAnnotation]
	if start == "" {
		t.Fatalf("no %s annotation: %v", DrainStartedAnnotation, got.Annotations)
	}
	sameStart := func(when string) {
		t.Helper()
		got := f.mustGet(m)
		if s := got.Annotations[DrainStartedAnnotation]; s != start {
			t.Errorf("%s: drain start moved: %s → %s", when, start, s)
		}
		if c := conditions.Get(got.Status.Conditions, DrainedCondition); !c.LastTransitionTime.Equal(&first) {
			t.Errorf("%s: Drained lastTransitionTime moved without a status change: %v → %v", when, first, c.LastTransitionTime)
		}
	}

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
	got = f.mustGet(m)
	wantCondition(t, got, DrainedCondition, corev1.ConditionFalse, ReasonWaitingForControlPlaneDrain, "waiting for control-plane node "+other.Name)
	sameStart("waiting")
	if !waitingForControlPlaneDrain(got) {
		t.Error("the waiting Machine is not recognised as waiting")
	}
	if f.getNode(node.Name).Spec.Unschedulable {
		t.Error("cp-b re-cordoned while cp-a drains")
	}
	f.mustReconcile(m)
	if n := f.rec.count(EventDrainBlocked) - before; n != 1 {
		t.Errorf("DrainBlocked recorded %d times, want once:\n%s", n, f.rec)
	}

	// cp-a is done: cp-b is cordoned again and the drain goes on, same start.
	f.clock.Advance(10 * time.Second)
	f.setDrainState(other, false, "")
	f.mustReconcile(m)
	wantCondition(t, f.mustGet(m), DrainedCondition, corev1.ConditionFalse, ReasonDrainInProgress, "blocked by PodDisruptionBudget")
	sameStart("after the wait")
	if !f.getNode(node.Name).Spec.Unschedulable {
		t.Error("cp-b not cordoned again")
	}

	// 35s after the start (15s after the wait ended) the 30s timeout has
	// expired.
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
