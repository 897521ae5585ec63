package nodemaintenance

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nmv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/nodeutil"
)

var foreignTaint = corev1.Taint{Key: "example.com/foreign", Effect: corev1.TaintEffectNoSchedule}

func TestMaintenanceLifecycle(t *testing.T) {
	const node = "lifecycle-node"
	createNode(t, node, func(n *corev1.Node) {
		n.Labels = map[string]string{"example.com/keep": "yes"}
		n.Spec.Taints = []corev1.Taint{foreignTaint}
	})
	ns := createNamespace(t, "")
	web := map[string]string{"app": "web"}
	p1 := createPod(t, ns, "web-1", node, web)
	p2 := createPod(t, ns, "web-2", node, web)
	other := createPod(t, ns, "elsewhere", "", nil) // not on the node
	createPDB(t, ns, "web", web, 2)

	createNM(t, "lifecycle", node)
	nm := waitPhase(t, "lifecycle", nmv1beta1.MaintenanceSucceeded, nil)
	st := nm.Status
	if st.TotalPods != 2 || st.EvictionPods != 2 || st.DrainProgress != 100 || len(st.PendingPods) != 0 ||
		st.LastError != "" || st.LastUpdate == nil || st.ErrorOnLeaseCount != 0 || st.DrainStartTime == nil {
		t.Errorf("status = %+v", st)
	}
	if !slices.Contains(nm.Finalizers, Finalizer) {
		t.Errorf("finalizers = %v, want %s", nm.Finalizers, Finalizer)
	}
	for _, p := range []*corev1.Pod{p1, p2} {
		if err := podGone(p); err != nil {
			t.Errorf("pod not evicted: %v", err)
		}
	}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(other), &corev1.Pod{}); err != nil {
		t.Errorf("pod on another node: %v", err)
	}
	n := getNode(t, node)
	if !n.Spec.Unschedulable || !hasTaint(n.Spec.Taints, DrainTaintKey, corev1.TaintEffectNoSchedule) ||
		!hasTaint(n.Spec.Taints, UnschedulableTaintKey, corev1.TaintEffectNoSchedule) ||
		!hasTaint(n.Spec.Taints, foreignTaint.Key, foreignTaint.Effect) ||
		n.Labels[ExcludeFromRemediationLabel] != "true" || n.Annotations[OwnerAnnotation] != "lifecycle" {
		t.Fatalf("node not in maintenance: unschedulable=%v taints=%v labels=%v annotations=%v", n.Spec.Unschedulable, taintKeys(n), n.Labels, n.Annotations)
	}
	// medik8s's order. Breaks if: the maintenance taints are appended after the node's own.
	if got, want := strings.Join(taintKeys(n), ","), UnschedulableTaintKey+","+DrainTaintKey+","+foreignTaint.Key; got != want {
		t.Errorf("taints in maintenance = %s, want %s", got, want)
	}
	// medik8s's NodeMaintenance keeps no ownerReference either (docs/openshift.md). Breaks if: one to the
	// Node is added, and deleting the Node garbage-collects the NodeMaintenance.
	if len(nm.OwnerReferences) != 0 {
		t.Errorf("ownerReferences = %+v, want none", nm.OwnerReferences)
	}
	if n.Annotations[AddedAnnotation] != "cordon,taint,unschedulable-taint,label" {
		t.Errorf("added annotation = %q", n.Annotations[AddedAnnotation])
	}
	m := &dto.Metric{}
	if err := PhaseGauge.WithLabelValues("lifecycle", string(nmv1beta1.MaintenanceSucceeded)).Write(m); err != nil {
		t.Fatal(err)
	}
	if v := m.GetGauge().GetValue(); v != 1 {
		t.Errorf("%s{phase=Succeeded} = %v, want 1", "machine_api_nodemaintenance_phase", v)
	}
	// medik8s's events, exactly. Breaks if: a note or type differs from medik8s's.
	rec.waitExact(t, "lifecycle Normal BeginMaintenance: Begin a node maintenance",
		"lifecycle Normal SucceedMaintenance: Node maintenance was succeeded")

	// Someone adds a taint while in maintenance: it must stay.
	n = getNode(t, node)
	late := corev1.Taint{Key: "example.com/late", Effect: corev1.TaintEffectNoExecute}
	n.Spec.Taints = append(n.Spec.Taints, late)
	if err := env.Client.Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}

	deleteNM(t, "lifecycle", true)
	n = getNode(t, node)
	if n.Spec.Unschedulable {
		t.Error("node still unschedulable")
	}
	if got := strings.Join(taintKeys(n), ","); got != "example.com/foreign,example.com/late" {
		t.Errorf("taints = %s, want the foreign ones only", got)
	}
	if _, ok := n.Labels[ExcludeFromRemediationLabel]; ok || n.Labels["example.com/keep"] != "yes" {
		t.Errorf("labels = %v", n.Labels)
	}
	if _, ok := n.Annotations[OwnerAnnotation]; ok {
		t.Errorf("annotations = %v", n.Annotations)
	}
	// Breaks if: UncordonNode is recorded on the NodeMaintenance (medik8s records it on the Node).
	rec.waitExact(t, node+" Normal UncordonNode: Uncordon a node", "lifecycle Normal RemovedMaintenance: Removed a node maintenance")
	if rec.has("lifecycle", EventUncordonNode) {
		t.Error("UncordonNode recorded on the NodeMaintenance")
	}
}

// TestSuccessClearsPendingPodsAndLastError: a pod evicted with a grace period is pending (lastError
// says so) until it is gone; then the maintenance succeeds with medik8s's status: no pending pods, no
// lastError, drainProgress 100, the counts from the start. Breaks if: the success keeps the pending
// pods or lastError of the pass before (a status diffed against a cache behind the last write did).
func TestSuccessClearsPendingPodsAndLastError(t *testing.T) {
	const node = "clears-node"
	createNode(t, node)
	ns := createNamespace(t, "")
	// A grace period keeps the evicted pod terminating (envtest has no kubelet).
	p := createPod(t, ns, "slow-0", node, nil, func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](3600) })

	createNM(t, "clears", node)
	waitPhase(t, "clears", nmv1beta1.MaintenanceRunning, func(st nmv1beta1.NodeMaintenanceStatus) bool {
		return st.LastError == "waiting for 1 pod(s) to terminate" && slices.Equal(st.PendingPods, []string{"slow-0"}) &&
			len(st.PendingPodsRefs) == 1 && st.PendingPodsRefs[0] == nmv1beta1.PodReference{Namespace: ns, Name: "slow-0"}
	})
	// The pod terminates; the Node is touched at once so a reconcile follows the last write closely.
	if err := env.Client.Delete(context.Background(), p, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	wakeNode(t, node)
	nm := waitPhase(t, "clears", nmv1beta1.MaintenanceSucceeded, nil)
	want := nmv1beta1.NodeMaintenanceStatus{Phase: nmv1beta1.MaintenanceSucceeded, DrainProgress: 100, TotalPods: 1, EvictionPods: 1,
		LastUpdate: nm.Status.LastUpdate, DrainStartTime: nm.Status.DrainStartTime}
	if !equality.Semantic.DeepEqual(nm.Status, want) || nm.Status.PendingPods != nil || nm.Status.PendingPodsRefs != nil {
		t.Errorf("status = %+v\nwant     %+v", nm.Status, want)
	}
}

func TestPreexistingCordonAndLabelAreKept(t *testing.T) {
	const node = "precordoned-node"
	createNode(t, node, func(n *corev1.Node) {
		n.Labels = map[string]string{ExcludeFromRemediationLabel: "true"}
		n.Spec.Unschedulable = true
	})
	createNM(t, "precordoned", node)
	waitPhase(t, "precordoned", nmv1beta1.MaintenanceSucceeded, func(st nmv1beta1.NodeMaintenanceStatus) bool {
		return st.TotalPods == 0 && st.DrainProgress == 100
	})
	deleteNM(t, "precordoned", true)
	n := getNode(t, node)
	if !n.Spec.Unschedulable || n.Labels[ExcludeFromRemediationLabel] != "true" {
		t.Errorf("pre-existing cordon or label removed: unschedulable=%v labels=%v", n.Spec.Unschedulable, n.Labels)
	}
	if hasTaint(n.Spec.Taints, DrainTaintKey, corev1.TaintEffectNoSchedule) {
		t.Errorf("drain taint left: %v", taintKeys(n))
	}
}

func TestMissingNodeFailsThenRecovers(t *testing.T) {
	const node = "late-node"
	createNM(t, "late", node)
	waitPhase(t, "late", nmv1beta1.MaintenanceFailed, func(st nmv1beta1.NodeMaintenanceStatus) bool {
		return st.LastError == `nodes "late-node" not found` && // medik8s's text
			st.TotalPods == 0 && st.EvictionPods == 0
	})
	createNode(t, node)
	waitPhase(t, "late", nmv1beta1.MaintenanceSucceeded, func(st nmv1beta1.NodeMaintenanceStatus) bool { return st.LastError == "" })
	if n := getNode(t, node); !n.Spec.Unschedulable {
		t.Error("node not cordoned")
	}
	rec.waitExact(t, "late Warning FailedMaintenance: Failed a node maintenance")
}

func TestSecondMaintenanceOfANodeFails(t *testing.T) {
	const node = "dup-node"
	createNode(t, node)
	createNM(t, "dup-first", node)
	waitPhase(t, "dup-first", nmv1beta1.MaintenanceSucceeded, nil)
	createNM(t, "dup-second", node)
	waitPhase(t, "dup-second", nmv1beta1.MaintenanceFailed, func(st nmv1beta1.NodeMaintenanceStatus) bool {
		return strings.Contains(st.LastError, "dup-first")
	})
	if n := getNode(t, node); n.Annotations[OwnerAnnotation] != "dup-first" {
		t.Errorf("owner annotation = %q", n.Annotations[OwnerAnnotation])
	}
	if ok := getNM(t, "dup-first").Status.Phase == nmv1beta1.MaintenanceSucceeded; !ok {
		t.Error("the first maintenance was disturbed")
	}

	lease := getLease(t, DefaultLeaseNamespace, node)
	if leaseHolder(lease) != LeaseHolderIdentity {
		t.Fatalf("lease not held: %+v", lease)
	}

	// Once the first is gone, the second takes the node over, and the lease
	// with it (the first does not release it while the second remains).
	deleteNM(t, "dup-first", true)
	waitPhase(t, "dup-second", nmv1beta1.MaintenanceSucceeded, func(st nmv1beta1.NodeMaintenanceStatus) bool { return st.LastError == "" })
	if n := getNode(t, node); !n.Spec.Unschedulable || n.Annotations[OwnerAnnotation] != "dup-second" {
		t.Errorf("node not held by the second maintenance: unschedulable=%v annotations=%v", n.Spec.Unschedulable, n.Annotations)
	}
	if l := getLease(t, DefaultLeaseNamespace, node); l == nil || l.UID != lease.UID || leaseHolder(l) != LeaseHolderIdentity {
		t.Errorf("lease released during the hand-over: %+v", l)
	}
	deleteNM(t, "dup-second", true)
	if n := getNode(t, node); n.Spec.Unschedulable || len(taintKeys(n)) != 0 {
		t.Errorf("node not released: unschedulable=%v taints=%v", n.Spec.Unschedulable, taintKeys(n))
	}
	if l := getLease(t, DefaultLeaseNamespace, node); l != nil {
		t.Errorf("lease not released: %+v", l.Spec)
	}
}

func TestValidation(t *testing.T) {
	ctx := context.Background()
	const node = "validation-node"
	createNode(t, node)
	nm := createNM(t, "validation", node)

	// Merge patches (no resourceVersion): the controller writes concurrently.
	nm = getNM(t, nm.Name)
	base := nm.DeepCopy()
	nm.Spec.NodeName = "another-node"
	err := env.Client.Patch(ctx, nm, client.MergeFrom(base))
	// medik8s's webhook message, from the CRD's CEL rule.
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "updating spec.NodeName isn't allowed") {
		t.Errorf("changing nodeName: err = %v, want Invalid: updating spec.NodeName isn't allowed", err)
	}

	nm = getNM(t, "validation")
	base = nm.DeepCopy()
	nm.Spec.Reason = "changed"
	if err := env.Client.Patch(ctx, nm, client.MergeFrom(base)); err != nil {
		t.Errorf("changing the reason: %v", err)
	}

	empty := &nmv1beta1.NodeMaintenance{ObjectMeta: metav1.ObjectMeta{Name: "validation-empty"}}
	if err := env.Client.Create(ctx, empty); !apierrors.IsInvalid(err) {
		t.Errorf("empty nodeName: err = %v, want Invalid", err)
	}
	negative := &nmv1beta1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: "validation-negative"},
		Spec:       nmv1beta1.NodeMaintenanceSpec{NodeName: node, DrainTimeout: &metav1.Duration{Duration: -time.Second}},
	}
	if err := env.Client.Create(ctx, negative); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "must not be negative") {
		t.Errorf("negative drainTimeout: err = %v, want Invalid", err)
	}
}

func TestDrainTimeoutDeletesPodsHeldByAPDB(t *testing.T) {
	const node = "timeout-node"
	createNode(t, node)
	ns := createNamespace(t, "")
	db := map[string]string{"app": "db"}
	p := createPod(t, ns, "db-0", node, db)
	createPDB(t, ns, "db", db, 0)

	createNM(t, "timeout", node, func(nm *nmv1beta1.NodeMaintenance) {
		nm.Spec.DrainTimeout = &metav1.Duration{Duration: 3 * time.Second}
	})
	waitPhase(t, "timeout", nmv1beta1.MaintenanceRunning, func(st nmv1beta1.NodeMaintenanceStatus) bool {
		return strings.Contains(st.LastError, "PodDisruptionBudget") && slices.Equal(st.PendingPods, []string{"db-0"}) &&
			st.EvictionPods == 1 && st.DrainProgress == 0
	})
	if podGone(p) == nil {
		t.Fatal("the PDB did not hold the pod")
	}
	nm := waitPhase(t, "timeout", nmv1beta1.MaintenanceSucceeded, nil)
	if !strings.Contains(nm.Status.LastError, "drain timeout") || !strings.Contains(nm.Status.LastError, ns+"/db-0") {
		t.Errorf("lastError = %q", nm.Status.LastError)
	}
	if err := podGone(p); err != nil {
		t.Error(err)
	}
	rec.wait(t, "timeout", EventDrainTimedOut)
}

func TestControlPlaneWaitsForEtcdQuorumGuard(t *testing.T) {
	const node = "cp-node"
	createNode(t, node, func(n *corev1.Node) { n.Labels = map[string]string{nodeutil.ControlPlaneNodeRoleLabel: ""} })
	createNamespace(t, nodeutil.EtcdNamespace)
	guardLabels := map[string]string{"app": "guard"}
	guard := createPod(t, nodeutil.EtcdNamespace, "etcd-guard-cp-node", node, guardLabels)
	setPodReady(t, guard, corev1.ConditionTrue)
	pdb := createPDB(t, nodeutil.EtcdNamespace, "etcd-guard-pdb", guardLabels, 0)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pdb) })

	createNM(t, "cp", node)
	waitPhase(t, "cp", nmv1beta1.MaintenanceRunning, func(st nmv1beta1.NodeMaintenanceStatus) bool {
		return strings.Contains(st.LastError, "etcd quorum guard")
	})
	if n := getNode(t, node); n.Spec.Unschedulable || len(taintKeys(n)) != 0 {
		t.Errorf("node touched while waiting for the quorum guard: unschedulable=%v taints=%v", n.Spec.Unschedulable, taintKeys(n))
	}
	if podGone(guard) == nil {
		t.Fatal("guard pod evicted")
	}

	setPDBAllowed(t, pdb, 1)
	waitPhase(t, "cp", nmv1beta1.MaintenanceSucceeded, nil)
	if err := podGone(guard); err != nil {
		t.Error(err)
	}
	if n := getNode(t, node); !n.Spec.Unschedulable {
		t.Error("node not cordoned")
	}
}

// TestControlPlaneWithUnreadyGuardPodIsDrained: a guard pod without a Ready condition is medik8s's
// disrupted node, so the maintenance goes ahead (the eviction API still holds the pod for the budget).
// Breaks if: etcdGuardBlock counts a guard pod without a Ready condition as Ready.
func TestControlPlaneWithUnreadyGuardPodIsDrained(t *testing.T) {
	const node = "cp-unready-node"
	createNode(t, node, func(n *corev1.Node) { n.Labels = map[string]string{nodeutil.MasterNodeRoleLabel: ""} })
	createNamespace(t, nodeutil.EtcdNamespace)
	guardLabels := map[string]string{"app": "unready-guard"}
	guard := createPod(t, nodeutil.EtcdNamespace, "etcd-guard-cp-unready-node", node, guardLabels)
	pdb := createPDB(t, nodeutil.EtcdNamespace, "etcd-unready-guard-pdb", guardLabels, 0)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pdb) })

	createNM(t, "cp-unready", node)
	nm := waitPhase(t, "cp-unready", nmv1beta1.MaintenanceRunning, func(st nmv1beta1.NodeMaintenanceStatus) bool {
		return strings.HasPrefix(st.LastError, "eviction blocked by a PodDisruptionBudget")
	})
	if strings.Contains(nm.Status.LastError, "etcd quorum guard") {
		t.Errorf("lastError = %q, want no wait for the quorum guard", nm.Status.LastError)
	}
	if n := getNode(t, node); !n.Spec.Unschedulable || !hasTaint(n.Spec.Taints, DrainTaintKey, corev1.TaintEffectNoSchedule) {
		t.Errorf("node not cordoned: unschedulable=%v taints=%v", n.Spec.Unschedulable, taintKeys(n))
	}
	setPDBAllowed(t, pdb, 1)
	waitPhase(t, "cp-unready", nmv1beta1.MaintenanceSucceeded, nil)
	if err := podGone(guard); err != nil {
		t.Error(err)
	}
}
