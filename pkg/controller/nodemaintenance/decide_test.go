package nodemaintenance

import (
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"

	nmv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/nodeutil"
)

func nmAt(name, node string, created time.Time) nmv1beta1.NodeMaintenance {
	return nmv1beta1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)},
		Spec:       nmv1beta1.NodeMaintenanceSpec{NodeName: node},
	}
}

func TestOwner(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		nms        []nmv1beta1.NodeMaintenance
		annotation string
		want       string
	}{
		{"none", nil, "", ""},
		{"single", []nmv1beta1.NodeMaintenance{nmAt("a", "n1", t0)}, "", "a"},
		{"oldest wins", []nmv1beta1.NodeMaintenance{nmAt("a", "n1", t0.Add(time.Second)), nmAt("b", "n1", t0)}, "", "b"},
		{"same time: name breaks the tie", []nmv1beta1.NodeMaintenance{nmAt("z", "n1", t0), nmAt("m", "n1", t0)}, "", "m"},
		{"other nodes ignored", []nmv1beta1.NodeMaintenance{nmAt("a", "n2", t0), nmAt("b", "n1", t0.Add(time.Hour))}, "", "b"},
		{"annotated owner keeps the node", []nmv1beta1.NodeMaintenance{nmAt("old", "n1", t0), nmAt("young", "n1", t0.Add(time.Hour))}, "young", "young"},
		{"stale annotation ignored", []nmv1beta1.NodeMaintenance{nmAt("a", "n1", t0.Add(time.Hour)), nmAt("b", "n1", t0.Add(2*time.Hour))}, "gone", "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := owner(tt.nms, "n1", tt.annotation)
			name := ""
			if got != nil {
				name = got.Name
			}
			if name != tt.want {
				t.Errorf("owner = %q, want %q", name, tt.want)
			}
		})
	}
}

func TestPlanMaintenanceAndRelease(t *testing.T) {
	foreign := corev1.Taint{Key: "example.com/foo", Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name      string
		node      corev1.Node
		wantAdded string
		// taint keys once in maintenance (nil: not checked)
		wantApplied []string
		// after release
		wantUnschedulable bool
		wantTaints        []string
		wantLabel         bool
	}{
		{
			name:       "clean node: everything added and removed",
			node:       corev1.Node{},
			wantAdded:  "cordon,taint,unschedulable-taint,label",
			wantTaints: nil,
		},
		{
			name:      "foreign taint kept",
			node:      corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{foreign}}},
			wantAdded: "cordon,taint,unschedulable-taint,label",
			// medik8s's order. Breaks if: the maintenance taints are appended after the node's.
			wantApplied: []string{UnschedulableTaintKey, DrainTaintKey, "example.com/foo"},
			wantTaints:  []string{"example.com/foo"},
		},
		{
			name: "an unschedulable taint already there moves first, the others keep their order",
			node: corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{
				foreign, {Key: UnschedulableTaintKey, Effect: corev1.TaintEffectNoSchedule}, {Key: "example.com/bar", Effect: corev1.TaintEffectNoExecute},
			}}},
			wantAdded: "cordon,taint,label",
			// Breaks if: an existing maintenance taint stays in place or the others are reordered.
			wantApplied: []string{UnschedulableTaintKey, DrainTaintKey, "example.com/foo", "example.com/bar"},
			wantTaints:  []string{UnschedulableTaintKey, "example.com/foo", "example.com/bar"},
		},
		{
			name: "already cordoned, tainted and labelled by someone else: nothing removed",
			node: corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{ExcludeFromRemediationLabel: "true"}},
				Spec: corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{
					{Key: DrainTaintKey, Effect: corev1.TaintEffectNoSchedule},
					{Key: UnschedulableTaintKey, Effect: corev1.TaintEffectNoSchedule},
				}},
			},
			wantAdded:         "",
			wantApplied:       []string{DrainTaintKey, UnschedulableTaintKey}, // both there: medik8s moves nothing
			wantUnschedulable: true,
			wantTaints:        []string{DrainTaintKey, UnschedulableTaintKey},
			wantLabel:         true,
		},
		{
			name: "cordoned by someone else: the unschedulable taint stays with the cordon",
			node: corev1.Node{Spec: corev1.NodeSpec{Unschedulable: true}},
			// The taint is recorded but kept on release because the node stays cordoned.
			wantAdded:         "taint,unschedulable-taint,label",
			wantUnschedulable: true,
			wantTaints:        []string{UnschedulableTaintKey},
		},
		{
			name: "taints with timeAdded from an earlier version: matched and removed",
			node: corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
					OwnerAnnotation: "nm1", AddedAnnotation: "cordon,taint,unschedulable-taint,label",
				}, Labels: map[string]string{ExcludeFromRemediationLabel: "true"}},
				Spec: corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{
					{Key: DrainTaintKey, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &metav1.Time{Time: time.Unix(1700000000, 0)}},
					{Key: UnschedulableTaintKey, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &metav1.Time{Time: time.Unix(1700000000, 0)}},
				}},
			},
			wantAdded:  "cordon,taint,unschedulable-taint,label",
			wantTaints: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tt.node.DeepCopy()
			n.Name = "n1"
			applied, changed := planMaintenance(n, "nm1")
			if !changed && tt.node.Annotations[OwnerAnnotation] == "" {
				t.Fatal("planMaintenance reported no change")
			}
			if !applied.Spec.Unschedulable || !hasTaint(applied.Spec.Taints, DrainTaintKey, corev1.TaintEffectNoSchedule) ||
				applied.Labels[ExcludeFromRemediationLabel] != "true" || applied.Annotations[OwnerAnnotation] != "nm1" {
				t.Fatalf("node not in maintenance: %+v", applied)
			}
			if got := applied.Annotations[AddedAnnotation]; got != tt.wantAdded {
				t.Errorf("added = %q, want %q", got, tt.wantAdded)
			}
			if got := taintKeys(applied); tt.wantApplied != nil && !slices.Equal(got, tt.wantApplied) {
				t.Errorf("taints in maintenance = %v, want %v", got, tt.wantApplied)
			}
			for _, tn := range applied.Spec.Taints {
				if tn.TimeAdded != nil && tt.node.Annotations[AddedAnnotation] == "" {
					t.Errorf("taint %s has timeAdded %v; medik8s's NoSchedule taints have none", tn.Key, tn.TimeAdded)
				}
			}
			if _, again := planMaintenance(applied, "nm1"); again {
				t.Error("planMaintenance is not idempotent")
			}
			if _, ch := planRelease(applied, "other"); ch {
				t.Error("planRelease changed a node owned by another maintenance")
			}
			released, _ := planRelease(applied, "nm1")
			if released.Spec.Unschedulable != tt.wantUnschedulable {
				t.Errorf("unschedulable = %v, want %v", released.Spec.Unschedulable, tt.wantUnschedulable)
			}
			var keys []string
			for _, tn := range released.Spec.Taints {
				keys = append(keys, tn.Key)
			}
			if strings.Join(keys, ",") != strings.Join(tt.wantTaints, ",") {
				t.Errorf("taints = %v, want %v", keys, tt.wantTaints)
			}
			if _, ok := released.Labels[ExcludeFromRemediationLabel]; ok != tt.wantLabel {
				t.Errorf("label present = %v, want %v", ok, tt.wantLabel)
			}
			if _, ok := released.Annotations[OwnerAnnotation]; ok {
				t.Error("owner annotation left behind")
			}
			if _, ok := released.Annotations[AddedAnnotation]; ok {
				t.Error("added annotation left behind")
			}
		})
	}
}

func TestDrainProgress(t *testing.T) {
	tests := []struct{ eviction, pending, want int }{
		{0, 0, 100}, {4, 4, 0}, {4, 3, 25}, {4, 0, 100}, {3, 1, 66}, {2, 5, 0},
	}
	for _, tt := range tests {
		if got := drainProgress(tt.eviction, tt.pending); got != tt.want {
			t.Errorf("drainProgress(%d, %d) = %d, want %d", tt.eviction, tt.pending, got, tt.want)
		}
	}
}

func TestPendingStatus(t *testing.T) {
	st := nmv1beta1.NodeMaintenanceStatus{EvictionPods: 2}
	pendingStatus(&st, []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "x"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "y"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "z"}},
	})
	if strings.Join(st.PendingPods, ",") != "y,z,x" || st.EvictionPods != 3 || st.DrainProgress != 0 {
		t.Errorf("status = %+v", st)
	}
}

func TestEtcdGuardBlock(t *testing.T) {
	cp := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "m0", Labels: map[string]string{nodeutil.ControlPlaneNodeRoleLabel: ""}}}
	master := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "m1", Labels: map[string]string{nodeutil.MasterNodeRoleLabel: ""}}}
	worker := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w0"}}
	withReady := func(p corev1.Pod, s corev1.ConditionStatus) corev1.Pod {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: s}}
		return p
	}
	unready := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: nodeutil.EtcdNamespace, Name: "guard", Labels: map[string]string{"app": "guard"}}}
	guard := withReady(unready, corev1.ConditionTrue)
	other := withReady(corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Labels: map[string]string{"app": "guard"}}}, corev1.ConditionTrue)
	pdb := func(name string, allowed int32, sel map[string]string) policyv1.PodDisruptionBudget {
		return policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: nodeutil.EtcdNamespace, Name: name},
			Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: sel}},
			Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
		}
	}
	tests := []struct {
		name  string
		node  *corev1.Node
		pods  []corev1.Pod
		pdbs  []policyv1.PodDisruptionBudget
		block bool
	}{
		{"worker never waits", worker, []corev1.Pod{guard}, []policyv1.PodDisruptionBudget{pdb("g", 0, map[string]string{"app": "guard"})}, false},
		{"control plane, guard blocked", cp, []corev1.Pod{guard}, []policyv1.PodDisruptionBudget{pdb("g", 0, map[string]string{"app": "guard"})}, true},
		{"master label counts", master, []corev1.Pod{guard}, []policyv1.PodDisruptionBudget{pdb("g", 0, map[string]string{"app": "guard"})}, true},
		{"disruption allowed", cp, []corev1.Pod{guard}, []policyv1.PodDisruptionBudget{pdb("g", 1, map[string]string{"app": "guard"})}, false},
		{"no PDB", cp, []corev1.Pod{guard}, nil, false},
		{"PDB does not select the pod", cp, []corev1.Pod{guard}, []policyv1.PodDisruptionBudget{pdb("g", 0, map[string]string{"app": "x"})}, false},
		{"pod outside openshift-etcd", cp, []corev1.Pod{other}, []policyv1.PodDisruptionBudget{pdb("g", 0, map[string]string{"app": "guard"})}, false},
		// medik8s's readiness: Unknown counts as Ready; False or no Ready condition is a disrupted node.
		// Breaks if: a guard pod without a Ready condition (or Ready False) blocks the drain.
		{"guard Ready Unknown blocks", cp, []corev1.Pod{withReady(unready, corev1.ConditionUnknown)}, []policyv1.PodDisruptionBudget{pdb("g", 0, map[string]string{"app": "guard"})}, true},
		{"guard Ready False: already disrupted", cp, []corev1.Pod{withReady(unready, corev1.ConditionFalse)}, []policyv1.PodDisruptionBudget{pdb("g", 0, map[string]string{"app": "guard"})}, false},
		{"guard without a Ready condition: already disrupted", cp, []corev1.Pod{unready}, []policyv1.PodDisruptionBudget{pdb("g", 0, map[string]string{"app": "guard"})}, false},
		{"several PDBs, one blocks", cp, []corev1.Pod{guard}, []policyv1.PodDisruptionBudget{
			pdb("a", 1, map[string]string{"app": "guard"}), pdb("b", 0, map[string]string{"app": "guard"}),
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := etcdGuardBlock(tt.node, tt.pods, tt.pdbs)
			if (msg != "") != tt.block {
				t.Fatalf("etcdGuardBlock = %q, want block=%v", msg, tt.block)
			}
			if tt.block && !strings.Contains(msg, "etcd quorum guard") {
				t.Errorf("message %q does not name the etcd quorum guard", msg)
			}
		})
	}
}

func TestStatusEqualIgnoresLastUpdate(t *testing.T) {
	a := nmv1beta1.NodeMaintenanceStatus{Phase: nmv1beta1.MaintenanceRunning, LastUpdate: &metav1.Time{Time: time.Now()}}
	b := a
	b.LastUpdate = &metav1.Time{Time: time.Now().Add(time.Hour)}
	if !statusEqual(a, b) {
		t.Error("statuses differing only in lastUpdate are not equal")
	}
	b.DrainProgress = 50
	if statusEqual(a, b) {
		t.Error("statuses differing in drainProgress are equal")
	}
}

func leaseAt(holder string, renewed time.Time, seconds int32, transitions int32) *coordinationv1.Lease {
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: DefaultLeaseNamespace, Name: "node-n1"},
		Spec:       coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To(seconds), LeaseTransitions: ptr.To(transitions)},
	}
	if holder != "" {
		l.Spec.HolderIdentity = ptr.To(holder)
	}
	if !renewed.IsZero() {
		l.Spec.AcquireTime = &metav1.MicroTime{Time: renewed.Add(-time.Minute)}
		l.Spec.RenewTime = &metav1.MicroTime{Time: renewed}
	}
	return l
}

func TestPlanLease(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-1"}}
	withRef := func(l *coordinationv1.Lease, uid string) *coordinationv1.Lease {
		l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: types.UID(uid)}}
		return l
	}
	hour := int32(3600)
	tests := []struct {
		name            string
		cur             *coordinationv1.Lease
		wantWrite       bool
		wantHeld        bool
		wantRenewAt     time.Time // held
		wantRenewTime   time.Time // of the written lease
		wantAcquired    bool      // acquireTime set to now
		wantTransitions int32
		wantHolder      string // not held
		wantExpires     time.Time
	}{
		{name: "none: created", cur: nil, wantWrite: true, wantHeld: true, wantRenewAt: now.Add(30 * time.Minute), wantRenewTime: now, wantAcquired: true},
		{name: "ours, fresh: no write", cur: withRef(leaseAt(LeaseHolderIdentity, now.Add(-10*time.Minute), hour, 0), "uid-1"),
			wantHeld: true, wantRenewAt: now.Add(20 * time.Minute)},
		{name: "ours, just over half left: no write", cur: withRef(leaseAt(LeaseHolderIdentity, now.Add(-30*time.Minute+time.Second), hour, 2), "uid-1"),
			wantHeld: true, wantRenewAt: now.Add(time.Second)},
		{name: "ours, half left: renewed", cur: withRef(leaseAt(LeaseHolderIdentity, now.Add(-30*time.Minute), hour, 2), "uid-1"),
			wantWrite: true, wantHeld: true, wantRenewAt: now.Add(30 * time.Minute), wantRenewTime: now, wantTransitions: 2},
		{name: "ours, expired: renewed", cur: withRef(leaseAt(LeaseHolderIdentity, now.Add(-2*time.Hour), hour, 2), "uid-1"),
			wantWrite: true, wantHeld: true, wantRenewAt: now.Add(30 * time.Minute), wantRenewTime: now, wantTransitions: 2},
		{name: "ours, other duration: renewed with ours", cur: withRef(leaseAt(LeaseHolderIdentity, now.Add(-time.Minute), 60, 0), "uid-1"),
			wantWrite: true, wantHeld: true, wantRenewAt: now.Add(30 * time.Minute), wantRenewTime: now},
		{name: "ours, fresh, reference to an earlier node: fixed, not renewed", cur: withRef(leaseAt(LeaseHolderIdentity, now.Add(-10*time.Minute), hour, 0), "uid-0"),
			wantWrite: true, wantHeld: true, wantRenewAt: now.Add(20 * time.Minute), wantRenewTime: now.Add(-10 * time.Minute)},
		{name: "released (no holder): taken", cur: leaseAt("", now.Add(-time.Minute), hour, 3),
			wantWrite: true, wantHeld: true, wantRenewAt: now.Add(30 * time.Minute), wantRenewTime: now, wantAcquired: true, wantTransitions: 4},
		{name: "released (empty holder): taken", cur: leaseAt("", now.Add(-time.Minute), hour, 3), // holder set to "" below
			wantWrite: true, wantHeld: true, wantRenewAt: now.Add(30 * time.Minute), wantRenewTime: now, wantAcquired: true, wantTransitions: 4},
		{name: "another holder, valid: left alone", cur: leaseAt("NodeHealthCheck", now.Add(-time.Minute), 600, 1),
			wantHolder: "NodeHealthCheck", wantExpires: now.Add(9 * time.Minute)},
		{name: "another holder, expiring now: taken", cur: leaseAt("NodeHealthCheck", now.Add(-10*time.Minute), 600, 1),
			wantWrite: true, wantHeld: true, wantRenewAt: now.Add(30 * time.Minute), wantRenewTime: now, wantAcquired: true, wantTransitions: 2},
		{name: "another holder, expired: taken", cur: leaseAt("NodeHealthCheck", now.Add(-time.Hour), 600, 1),
			wantWrite: true, wantHeld: true, wantRenewAt: now.Add(30 * time.Minute), wantRenewTime: now, wantAcquired: true, wantTransitions: 2},
		{name: "another holder, no times: taken", cur: leaseAt("NodeHealthCheck", time.Time{}, 600, 0),
			wantWrite: true, wantHeld: true, wantRenewAt: now.Add(30 * time.Minute), wantRenewTime: now, wantAcquired: true, wantTransitions: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := tt.cur
			if strings.HasPrefix(tt.name, "released (empty holder)") {
				cur.Spec.HolderIdentity = ptr.To("")
			}
			var before *coordinationv1.Lease
			if cur != nil {
				before = cur.DeepCopy()
			}
			p := planLease(cur, DefaultLeaseNamespace, "node-n1", node, now)
			if cur != nil && !equality.Semantic.DeepEqual(before, cur) {
				t.Error("planLease modified its input")
			}
			if (p.want != nil) != tt.wantWrite {
				t.Fatalf("write = %v, want %v", p.want != nil, tt.wantWrite)
			}
			if p.held != tt.wantHeld {
				t.Fatalf("held = %v, want %v", p.held, tt.wantHeld)
			}
			if !tt.wantHeld {
				if p.holder != tt.wantHolder || !p.expires.Equal(tt.wantExpires) {
					t.Errorf("holder, expires = %q, %v; want %q, %v", p.holder, p.expires, tt.wantHolder, tt.wantExpires)
				}
				return
			}
			if !p.renewAt.Equal(tt.wantRenewAt) {
				t.Errorf("renewAt = %v, want %v", p.renewAt, tt.wantRenewAt)
			}
			if p.want == nil {
				return
			}
			l := p.want
			if l.Namespace != DefaultLeaseNamespace || l.Name != "node-n1" {
				t.Errorf("lease %s/%s", l.Namespace, l.Name)
			}
			if leaseHolder(l) != LeaseHolderIdentity || ptr.Deref(l.Spec.LeaseDurationSeconds, 0) != 3600 {
				t.Errorf("holder %q, duration %v", leaseHolder(l), ptr.Deref(l.Spec.LeaseDurationSeconds, 0))
			}
			if l.Spec.RenewTime == nil || !l.Spec.RenewTime.Time.Equal(tt.wantRenewTime) {
				t.Errorf("renewTime = %v, want %v", l.Spec.RenewTime, tt.wantRenewTime)
			}
			if acquired := l.Spec.AcquireTime != nil && l.Spec.AcquireTime.Time.Equal(now); acquired != tt.wantAcquired {
				t.Errorf("acquireTime = %v, acquired now: want %v", l.Spec.AcquireTime, tt.wantAcquired)
			}
			if got := ptr.Deref(l.Spec.LeaseTransitions, -1); got != tt.wantTransitions {
				t.Errorf("leaseTransitions = %d, want %d", got, tt.wantTransitions)
			}
			if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != "uid-1" || l.OwnerReferences[0].Kind != "Node" ||
				ptr.Deref(l.OwnerReferences[0].Controller, true) {
				t.Errorf("ownerReferences = %+v, want one non-controller reference to node uid-1", l.OwnerReferences)
			}
		})
	}
}

func TestDecideLease(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	start := metav1.NewTime(now.Add(-time.Hour))
	const base = 5 * time.Second
	// medik8s's lastError texts, quoted (its lease.AlreadyHeldError inside).
	const (
		waitText  = "failed to obtain a lease that is not owned by us : can't update or invalidate the lease because it is held by different owner: NodeHealthCheck errorOnLeaseCount 0"
		retryText = "failed to extend a lease that used to be owned by us, incrementing error on lease count: can't update or invalidate the lease because it is held by different owner: NodeHealthCheck, errorOnLeaseCount: "
		failText  = "maintenance failed: lease could not be extended after 4 attempts"
	)
	held := leasePlan{held: true, renewAt: now.Add(20 * time.Minute)}
	other := leasePlan{holder: "NodeHealthCheck", expires: now.Add(10 * time.Minute)}
	soon := leasePlan{holder: "NodeHealthCheck", expires: now.Add(100 * time.Millisecond)}
	untilOther := 10*time.Minute + 10*time.Millisecond
	running := func(progress, count int, lastError string) nmv1beta1.NodeMaintenanceStatus {
		return nmv1beta1.NodeMaintenanceStatus{Phase: nmv1beta1.MaintenanceRunning, DrainProgress: progress, ErrorOnLeaseCount: count,
			LastError: lastError, DrainStartTime: &start, EvictionPods: 4, TotalPods: 5}
	}
	failedForLeaseSt := nmv1beta1.NodeMaintenanceStatus{Phase: nmv1beta1.MaintenanceFailed, DrainProgress: 100, ErrorOnLeaseCount: 4,
		LastError: failText, DrainStartTime: &start, EvictionPods: 4, TotalPods: 5}
	tests := []struct {
		name        string
		st          nmv1beta1.NodeMaintenanceStatus
		plan        leasePlan
		wantVerdict leaseVerdict
		wantAfter   time.Duration
		wantPhase   nmv1beta1.MaintenancePhase
		wantCount   int
		wantError   string // exactly
		wantReset   bool   // drain status reset for a fresh drain
	}{
		{name: "held, new maintenance", st: nmv1beta1.NodeMaintenanceStatus{}, plan: held,
			wantVerdict: leaseProceed, wantAfter: 20 * time.Minute, wantPhase: ""},
		{name: "held again after retries: count and message cleared", st: running(50, 2, retryText+"2"), plan: held,
			wantVerdict: leaseProceed, wantAfter: 20 * time.Minute, wantPhase: nmv1beta1.MaintenanceRunning},
		{name: "held, drain message kept", st: running(50, 0, "eviction blocked by a PodDisruptionBudget: a/b"), plan: held,
			wantVerdict: leaseProceed, wantAfter: 20 * time.Minute, wantPhase: nmv1beta1.MaintenanceRunning, wantError: "eviction blocked by a PodDisruptionBudget: a/b"},
		{name: "held, renewal due: at least a second", st: running(50, 0, ""), plan: leasePlan{held: true, renewAt: now},
			wantVerdict: leaseProceed, wantAfter: time.Second, wantPhase: nmv1beta1.MaintenanceRunning},
		{name: "free again after failing for the lease: restarts", st: failedForLeaseSt, plan: held,
			wantVerdict: leaseProceed, wantAfter: 20 * time.Minute, wantPhase: nmv1beta1.MaintenanceRunning, wantReset: true},
		{name: "other holder, new maintenance: waits until it expires", st: nmv1beta1.NodeMaintenanceStatus{}, plan: other,
			wantVerdict: leaseWait, wantAfter: untilOther, wantPhase: nmv1beta1.MaintenanceRunning, wantError: waitText},
		{name: "other holder, drain not started: waits, not counted", st: running(0, 0, "waiting for 3 pod(s) to terminate"), plan: other,
			wantVerdict: leaseWait, wantAfter: untilOther, wantPhase: nmv1beta1.MaintenanceRunning, wantError: waitText},
		{name: "other holder mid-drain: first retry", st: running(50, 0, ""), plan: other,
			wantVerdict: leaseRetry, wantAfter: base, wantPhase: nmv1beta1.MaintenanceRunning, wantCount: 1, wantError: retryText + "1"},
		{name: "second retry doubles the backoff", st: running(50, 1, ""), plan: other,
			wantVerdict: leaseRetry, wantAfter: 2 * base, wantPhase: nmv1beta1.MaintenanceRunning, wantCount: 2, wantError: retryText + "2"},
		{name: "third retry", st: running(50, 2, ""), plan: other,
			wantVerdict: leaseRetry, wantAfter: 4 * base, wantPhase: nmv1beta1.MaintenanceRunning, wantCount: 3, wantError: retryText + "3"},
		{name: "backoff capped by the expiry", st: running(50, 0, ""), plan: soon,
			wantVerdict: leaseRetry, wantAfter: 110 * time.Millisecond, wantPhase: nmv1beta1.MaintenanceRunning, wantCount: 1, wantError: retryText + "1"},
		{name: "succeeded, then another holder: retried, still Succeeded",
			st: nmv1beta1.NodeMaintenanceStatus{Phase: nmv1beta1.MaintenanceSucceeded, DrainProgress: 100}, plan: other,
			wantVerdict: leaseRetry, wantAfter: base, wantPhase: nmv1beta1.MaintenanceSucceeded, wantCount: 1, wantError: retryText + "1"},
		{name: "fourth attempt fails the maintenance", st: running(50, 3, ""), plan: other,
			wantVerdict: leaseFail, wantAfter: untilOther, wantPhase: nmv1beta1.MaintenanceFailed, wantCount: 4,
			wantError: failText},
		{name: "failed for the lease, still held by the other: stays failed, not counted", st: failedForLeaseSt, plan: other,
			wantVerdict: leaseStayFailed, wantAfter: untilOther, wantPhase: nmv1beta1.MaintenanceFailed, wantCount: 4,
			wantError: failText},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := *tt.st.DeepCopy()
			verdict, after := decideLease(&st, tt.plan, now, base)
			if verdict != tt.wantVerdict || after != tt.wantAfter {
				t.Errorf("verdict, after = %v, %v; want %v, %v", verdict, after, tt.wantVerdict, tt.wantAfter)
			}
			if st.Phase != tt.wantPhase || st.ErrorOnLeaseCount != tt.wantCount {
				t.Errorf("phase, errorOnLeaseCount = %q, %d; want %q, %d", st.Phase, st.ErrorOnLeaseCount, tt.wantPhase, tt.wantCount)
			}
			// Breaks if: a lease message is not medik8s's text, or is not cleared once the lease is held.
			if st.LastError != tt.wantError {
				t.Errorf("lastError = %q\nwant        %q", st.LastError, tt.wantError)
			}
			if reset := st.DrainStartTime == nil && st.DrainProgress == 0 && st.EvictionPods == 0 && st.TotalPods == 0; reset != tt.wantReset && tt.st.DrainStartTime != nil {
				t.Errorf("drain status reset = %v, want %v: %+v", reset, tt.wantReset, st)
			}
		})
	}
}

func TestSoonest(t *testing.T) {
	r := func(d time.Duration) ctrl.Result { return ctrl.Result{RequeueAfter: d} }
	for _, tt := range []struct{ a, b, want time.Duration }{{0, 0, 0}, {0, 5, 5}, {5, 0, 5}, {3, 5, 3}, {5, 3, 3}} {
		if got := soonest(r(tt.a), r(tt.b)); got.RequeueAfter != tt.want {
			t.Errorf("soonest(%v, %v) = %v, want %v", tt.a, tt.b, got.RequeueAfter, tt.want)
		}
	}
}

func TestLeasePredicate(t *testing.T) {
	p := leasePredicate()
	nodeLease := leaseAt("a", time.Now(), 60, 0)
	other := nodeLease.DeepCopy()
	other.Name = "machine-api-controllers-leader"
	renewed := nodeLease.DeepCopy()
	renewed.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(time.Minute)}
	relabelled := nodeLease.DeepCopy()
	relabelled.Labels = map[string]string{"x": "y"}
	if !p.Create(event.TypedCreateEvent[*coordinationv1.Lease]{Object: nodeLease}) || p.Create(event.TypedCreateEvent[*coordinationv1.Lease]{Object: other}) {
		t.Error("create: node leases only")
	}
	if !p.Delete(event.TypedDeleteEvent[*coordinationv1.Lease]{Object: nodeLease}) {
		t.Error("delete of a node lease dropped")
	}
	if !p.Update(event.TypedUpdateEvent[*coordinationv1.Lease]{ObjectOld: nodeLease, ObjectNew: renewed}) {
		t.Error("spec change dropped")
	}
	if p.Update(event.TypedUpdateEvent[*coordinationv1.Lease]{ObjectOld: nodeLease, ObjectNew: relabelled}) {
		t.Error("metadata-only change passed")
	}
}
