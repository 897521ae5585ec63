package nodemaintenance

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nmv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"
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
			name:       "foreign taint kept",
			node:       corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{foreign}}},
			wantAdded:  "cordon,taint,unschedulable-taint,label",
			wantTaints: []string{"example.com/foo"},
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
	}
	now := time.Now()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tt.node.DeepCopy()
			n.Name = "n1"
			applied, changed := planMaintenance(n, "nm1", now)
			if !changed && tt.wantAdded != "" {
				t.Fatal("planMaintenance reported no change")
			}
			if !applied.Spec.Unschedulable || !hasTaint(applied.Spec.Taints, DrainTaintKey, corev1.TaintEffectNoSchedule) ||
				applied.Labels[ExcludeFromRemediationLabel] != "true" || applied.Annotations[OwnerAnnotation] != "nm1" {
				t.Fatalf("node not in maintenance: %+v", applied)
			}
			if got := applied.Annotations[AddedAnnotation]; got != tt.wantAdded {
				t.Errorf("added = %q, want %q", got, tt.wantAdded)
			}
			if _, again := planMaintenance(applied, "nm1", now); again {
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
	cp := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "m0", Labels: map[string]string{ControlPlaneNodeRoleLabel: ""}}}
	master := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "m1", Labels: map[string]string{MasterNodeRoleLabel: ""}}}
	worker := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w0"}}
	guard := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: EtcdNamespace, Name: "guard", Labels: map[string]string{"app": "guard"}}}
	other := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Labels: map[string]string{"app": "guard"}}}
	pdb := func(name string, allowed int32, sel map[string]string) policyv1.PodDisruptionBudget {
		return policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: EtcdNamespace, Name: name},
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
