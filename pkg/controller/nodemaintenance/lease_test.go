package nodemaintenance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nmv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
)

const nhc = "NodeHealthCheck"

// getLease returns the node's lease in ns, nil when there is none.
func getLease(t *testing.T, ns, node string) *coordinationv1.Lease {
	t.Helper()
	l := &coordinationv1.Lease{}
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: LeaseName(node)}, l)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// holdLease makes holder (nil: nobody) the holder of the node's lease in
// ns, renewed at renewed for seconds, creating the lease if needed, as
// another operator (NodeHealthCheck) would.
func holdLease(t *testing.T, ns, node string, holder *string, renewed time.Time, seconds int32) *coordinationv1.Lease {
	t.Helper()
	ctx := context.Background()
	var out *coordinationv1.Lease
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		l := getLease(t, ns, node)
		create := l == nil
		if create {
			l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: LeaseName(node)}}
		}
		if holder != nil && ptr.Deref(l.Spec.HolderIdentity, "") != *holder {
			l.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
			l.Spec.AcquireTime = &metav1.MicroTime{Time: renewed}
		}
		l.Spec.HolderIdentity = holder
		l.Spec.RenewTime = &metav1.MicroTime{Time: renewed}
		l.Spec.LeaseDurationSeconds = ptr.To(seconds)
		out = l
		if create {
			return env.Client.Create(ctx, l)
		}
		return env.Client.Update(ctx, l)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// wakeNode changes an annotation of the node, so that the controller
// reconciles its NodeMaintenances now: the requeue timer runs on the real
// clock, which the test cannot advance.
func wakeNode(t *testing.T, node string) {
	t.Helper()
	n := getNode(t, node)
	base := n.DeepCopy()
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations["test.example.com/wake"] = fmt.Sprint(time.Now().UnixNano())
	if err := env.Client.Patch(context.Background(), n, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
}

func leaseFailures(t *testing.T, reason string) float64 {
	t.Helper()
	m := &dto.Metric{}
	if err := LeaseFailuresTotal.WithLabelValues(reason).Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func inMaintenance(n *corev1.Node, nm string) bool {
	return n.Spec.Unschedulable && hasTaint(n.Spec.Taints, DrainTaintKey, corev1.TaintEffectNoSchedule) &&
		n.Labels[ExcludeFromRemediationLabel] == "true" && n.Annotations[OwnerAnnotation] == nm
}

func untouched(n *corev1.Node) bool {
	_, labelled := n.Labels[ExcludeFromRemediationLabel]
	_, owned := n.Annotations[OwnerAnnotation]
	return !n.Spec.Unschedulable && len(taintKeys(n)) == 0 && !labelled && !owned
}

// TestLeaseReadWrite drives takeLease and releaseLease of a reconciler of
// its own (no manager) against the API server, first in a lease namespace
// that does not exist yet.
func TestLeaseReadWrite(t *testing.T) {
	ctx := context.Background()
	const node = "lease-io-node"
	ns := fmt.Sprintf("nm-leases-%d", time.Now().UnixNano())
	createNode(t, node)
	n := getNode(t, node)
	c := &testenv.Clock{}
	r := NewReconciler(Options{KubeClient: kube, Clock: c, LeaseNamespace: ns})

	// The install creates the lease namespace; the controller may not (its
	// RBAC has no namespaces create) and says what is missing.
	if p, err := r.takeLease(ctx, n); err == nil || p.held || !strings.Contains(err.Error(), "namespace "+ns+" does not exist") {
		t.Fatalf("takeLease without the namespace = %+v, %v; want an error naming the missing namespace", p, err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the lease namespace was created (err %v); the install owns it", err)
	}
	createNamespace(t, ns)

	p, err := r.takeLease(ctx, n)
	if err != nil || !p.held {
		t.Fatalf("takeLease = %+v, %v; want held", p, err)
	}
	l := getLease(t, ns, node)
	if l == nil || leaseHolder(l) != LeaseHolderIdentity || ptr.Deref(l.Spec.LeaseDurationSeconds, 0) != 3600 ||
		l.Spec.AcquireTime == nil || l.Spec.RenewTime == nil || ptr.Deref(l.Spec.LeaseTransitions, -1) != 0 {
		t.Fatalf("lease = %+v", l)
	}
	if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != n.UID || ptr.Deref(l.OwnerReferences[0].Controller, true) {
		t.Errorf("ownerReferences = %+v", l.OwnerReferences)
	}

	// Fresh: no write.
	if p, err := r.takeLease(ctx, n); err != nil || !p.held {
		t.Fatalf("takeLease = %+v, %v", p, err)
	}
	if again := getLease(t, ns, node); again.ResourceVersion != l.ResourceVersion {
		t.Error("a fresh lease was written")
	}

	// Less than half left: renewed.
	c.Advance(31 * time.Minute)
	if p, err := r.takeLease(ctx, n); err != nil || !p.held {
		t.Fatalf("takeLease = %+v, %v", p, err)
	}
	renewed := getLease(t, ns, node)
	if renewed.ResourceVersion == l.ResourceVersion || !renewed.Spec.RenewTime.After(l.Spec.RenewTime.Time) ||
		!renewed.Spec.AcquireTime.Equal(l.Spec.AcquireTime) || ptr.Deref(renewed.Spec.LeaseTransitions, -1) != 0 {
		t.Errorf("not renewed: %+v", renewed.Spec)
	}

	// Another holder with a valid lease: left alone, even by releaseLease.
	foreign := holdLease(t, ns, node, ptr.To(nhc), c.Now(), 600)
	if p, err := r.takeLease(ctx, n); err != nil || p.held || p.holder != nhc {
		t.Fatalf("takeLease = %+v, %v; want held by %s", p, err, nhc)
	}
	if err := r.releaseLease(ctx, node); err != nil {
		t.Fatal(err)
	}
	if l := getLease(t, ns, node); l == nil || l.ResourceVersion != foreign.ResourceVersion {
		t.Fatalf("another holder's lease was changed: %+v", l)
	}

	// Expired: taken over.
	c.Advance(601 * time.Second)
	if p, err := r.takeLease(ctx, n); err != nil || !p.held {
		t.Fatalf("takeLease = %+v, %v", p, err)
	}
	if l := getLease(t, ns, node); leaseHolder(l) != LeaseHolderIdentity || ptr.Deref(l.Spec.LeaseTransitions, -1) != 2 {
		t.Errorf("not taken over: %+v", l.Spec)
	}

	// Released: deleted; releasing again is a no-op.
	for range 2 {
		if err := r.releaseLease(ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	if l := getLease(t, ns, node); l != nil {
		t.Errorf("lease not released: %+v", l)
	}
}

func TestLeaseHeldDuringMaintenanceAndReleasedOnDelete(t *testing.T) {
	const node = "lease-node"
	createNode(t, node)
	n := getNode(t, node)
	createNM(t, "lease", node)
	waitPhase(t, "lease", nmv1beta1.MaintenanceSucceeded, func(st nmv1beta1.NodeMaintenanceStatus) bool { return st.ErrorOnLeaseCount == 0 })
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: DefaultLeaseNamespace}, &corev1.Namespace{}); err != nil {
		t.Fatalf("lease namespace: %v", err)
	}
	l := getLease(t, DefaultLeaseNamespace, node)
	if l == nil {
		t.Fatal("no lease held during the maintenance")
	}
	if leaseHolder(l) != LeaseHolderIdentity || ptr.Deref(l.Spec.LeaseDurationSeconds, 0) != 3600 || l.Spec.AcquireTime == nil ||
		l.Spec.RenewTime == nil || ptr.Deref(l.Spec.LeaseTransitions, -1) != 0 {
		t.Errorf("lease spec = %+v", l.Spec)
	}
	if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].Kind != "Node" || l.OwnerReferences[0].UID != n.UID ||
		ptr.Deref(l.OwnerReferences[0].Controller, true) {
		t.Errorf("ownerReferences = %+v", l.OwnerReferences)
	}

	deleteNM(t, "lease", true)
	if l := getLease(t, DefaultLeaseNamespace, node); l != nil {
		t.Errorf("lease not released: %+v", l.Spec)
	}
}

func TestForeignLeaseBlocksTheStartUntilItExpires(t *testing.T) {
	const node = "blocked-node"
	createNode(t, node)
	createNamespace(t, DefaultLeaseNamespace)
	foreign := holdLease(t, DefaultLeaseNamespace, node, ptr.To(nhc), clk.Now(), 3600)
	held := leaseFailures(t, LeaseFailureHeld)

	createNM(t, "blocked", node)
	waitPhase(t, "blocked", nmv1beta1.MaintenanceRunning, func(st nmv1beta1.NodeMaintenanceStatus) bool {
		// medik8s's text. Breaks if: the lease message differs from medik8s's.
		return st.LastError == "failed to obtain a lease that is not owned by us : can't update or invalidate the lease because it is held by different owner: NodeHealthCheck errorOnLeaseCount 0" &&
			st.ErrorOnLeaseCount == 0
	})
	if n := getNode(t, node); !untouched(n) {
		t.Errorf("node touched without the lease: unschedulable=%v taints=%v labels=%v", n.Spec.Unschedulable, taintKeys(n), n.Labels)
	}
	if l := getLease(t, DefaultLeaseNamespace, node); leaseHolder(l) != nhc || l.ResourceVersion != foreign.ResourceVersion {
		t.Errorf("the valid lease of another holder was changed: %+v", l.Spec)
	}
	rec.wait(t, "blocked", EventWaiting)

	// Three seconds before the lease expires (by the controller's clock):
	// the controller, woken, must wait until it expires, then take it over.
	clk.Advance(time.Hour - 3*time.Second)
	wakeNode(t, node)
	nm := waitPhase(t, "blocked", nmv1beta1.MaintenanceSucceeded, func(st nmv1beta1.NodeMaintenanceStatus) bool { return st.LastError == "" })
	if nm.Status.ErrorOnLeaseCount != 0 {
		t.Errorf("errorOnLeaseCount = %d", nm.Status.ErrorOnLeaseCount)
	}
	l := getLease(t, DefaultLeaseNamespace, node)
	if leaseHolder(l) != LeaseHolderIdentity || ptr.Deref(l.Spec.LeaseTransitions, -1) != 2 {
		t.Errorf("lease not taken over: %+v", l.Spec)
	}
	if !l.Spec.AcquireTime.Time.After(foreign.Spec.RenewTime.Add(time.Hour)) {
		t.Errorf("lease taken at %v, before it expired at %v", l.Spec.AcquireTime, foreign.Spec.RenewTime.Add(time.Hour))
	}
	if n := getNode(t, node); !inMaintenance(n, "blocked") {
		t.Errorf("node not in maintenance: %+v", n.Spec)
	}
	// Waiting is not a busy loop: a few looks at the lease (creation,
	// finalizer, wake-up, expiry), not one per poll.
	if d := leaseFailures(t, LeaseFailureHeld) - held; d < 1 || d > 8 {
		t.Errorf("%v failed looks at the lease while waiting; want a few", d)
	}
	deleteNM(t, "blocked", true)
	if l := getLease(t, DefaultLeaseNamespace, node); l != nil {
		t.Errorf("lease not released: %+v", l.Spec)
	}
}

// TestCountsBeforeTheLease: as medik8s's first reconcile, the pods are counted and pending before the
// lease is taken, the drain not started (drainProgress 0). Breaks if: the counts wait for the lease or
// the drain start.
func TestCountsBeforeTheLease(t *testing.T) {
	const node = "counted-node"
	createNode(t, node)
	ns := createNamespace(t, "")
	createPod(t, ns, "b", node, nil)
	createPod(t, ns, "a", node, nil)
	// A mirror pod is on the node but not evicted.
	createPod(t, ns, "mirror", node, nil, func(p *corev1.Pod) {
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
		p.OwnerReferences = nil
	})
	holdLease(t, DefaultLeaseNamespace, node, ptr.To(nhc), clk.Now(), 3600)

	createNM(t, "counted", node)
	nm := waitPhase(t, "counted", nmv1beta1.MaintenanceRunning, func(st nmv1beta1.NodeMaintenanceStatus) bool {
		return strings.HasPrefix(st.LastError, leaseWaitMessage)
	})
	st := nm.Status
	if st.TotalPods != 3 || st.EvictionPods != 2 || st.DrainProgress != 0 || !slices.Equal(st.PendingPods, []string{"a", "b"}) ||
		!slices.Equal(st.PendingPodsRefs, []nmv1beta1.PodReference{{Namespace: ns, Name: "a"}, {Namespace: ns, Name: "b"}}) || st.DrainStartTime != nil {
		t.Errorf("status = %+v, want 3 pods, 2 to evict and pending, drainProgress 0, no drain start", st)
	}
	if n := getNode(t, node); !untouched(n) {
		t.Errorf("node touched without the lease: %+v", n.Spec)
	}
}

func TestForeignLeaseMidMaintenanceFailsThenRestarts(t *testing.T) {
	const node = "taken-node"
	createNode(t, node)
	createNM(t, "taken", node)
	waitPhase(t, "taken", nmv1beta1.MaintenanceSucceeded, nil)
	if l := getLease(t, DefaultLeaseNamespace, node); leaseHolder(l) != LeaseHolderIdentity {
		t.Fatalf("lease not held: %+v", l)
	}

	// failThenRestart: another holder takes the lease; the maintenance
	// retries, fails after MaxLeaseErrors+1 attempts and gives the node back;
	// free (by free) the lease, and the maintenance starts again by itself.
	failThenRestart := func(round string, free func()) {
		t.Helper()
		held := leaseFailures(t, LeaseFailureHeld)
		holdLease(t, DefaultLeaseNamespace, node, ptr.To(nhc), clk.Now(), 600)
		nm := waitPhase(t, "taken", nmv1beta1.MaintenanceFailed, func(st nmv1beta1.NodeMaintenanceStatus) bool {
			return st.ErrorOnLeaseCount == MaxLeaseErrors+1
		})
		if want := "maintenance failed: lease could not be extended after 4 attempts"; nm.Status.LastError != want {
			t.Errorf("%s: lastError = %q, want %q", round, nm.Status.LastError, want)
		}
		if n := getNode(t, node); !untouched(n) {
			t.Errorf("%s: node not released: unschedulable=%v taints=%v labels=%v annotations=%v", round, n.Spec.Unschedulable, taintKeys(n), n.Labels, n.Annotations)
		}
		if l := getLease(t, DefaultLeaseNamespace, node); leaseHolder(l) != nhc {
			t.Errorf("%s: the other holder's lease was changed: %+v", round, l.Spec)
		}
		if d := leaseFailures(t, LeaseFailureHeld) - held; d < MaxLeaseErrors+1 {
			t.Errorf("%s: %v lease failures counted, want at least %d", round, d, MaxLeaseErrors+1)
		}
		rec.wait(t, "taken", EventFailedMaintenance)
		// Breaks if: giving the node up records UncordonNode on the NodeMaintenance (medik8s: on the Node).
		rec.wait(t, node, EventUncordonNode)

		free()
		waitPhase(t, "taken", nmv1beta1.MaintenanceSucceeded, func(st nmv1beta1.NodeMaintenanceStatus) bool {
			return st.ErrorOnLeaseCount == 0 && st.LastError == "" && st.DrainProgress == 100
		})
		if n := getNode(t, node); !inMaintenance(n, "taken") {
			t.Errorf("%s: node not in maintenance again: unschedulable=%v taints=%v labels=%v", round, n.Spec.Unschedulable, taintKeys(n), n.Labels)
		}
		if l := getLease(t, DefaultLeaseNamespace, node); leaseHolder(l) != LeaseHolderIdentity {
			t.Errorf("%s: lease not taken back: %+v", round, l.Spec)
		}
	}

	failThenRestart("released", func() {
		// The other holder releases the lease (clears the holder): the lease
		// watch brings the maintenance back at once.
		holdLease(t, DefaultLeaseNamespace, node, nil, clk.Now(), 600)
	})
	failThenRestart("expired", func() {
		clk.Advance(601 * time.Second)
		wakeNode(t, node)
	})

	deleteNM(t, "taken", true)
	if l := getLease(t, DefaultLeaseNamespace, node); l != nil {
		t.Errorf("lease not released: %+v", l.Spec)
	}
	if n := getNode(t, node); n.Spec.Unschedulable {
		t.Error("node still cordoned")
	}
}
