package safety

import (
	"math"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
)

func deployment(replicas int32, strategy mdv1beta1.MachineDeploymentStrategyType, surge *intstr.IntOrString) *mdv1beta1.MachineDeployment {
	md := &mdv1beta1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Name: "md"}}
	md.Spec.Replicas = ptr.To(replicas)
	md.Spec.Strategy.Type = strategy
	if surge != nil {
		md.Spec.Strategy.RollingUpdate = &mdv1beta1.RollingUpdateMachineDeployment{MaxSurge: surge}
	}
	return md
}

// TestOvershootThresholds: machine-controller-manager's arithmetic, with the surge the
// MachineDeployment controller uses (at most replicas), in int64.
// Breaks if: the standalone factor were 1, a percent surge rounded down, the surge were
// not capped at replicas (a huge maxSurge turns the freeze off), or the sum wrapped.
func TestOvershootThresholds(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	num := func(n int) *intstr.IntOrString { v := intstr.FromInt32(int32(n)); return &v }
	tests := []struct {
		name      string
		replicas  int64
		md        *mdv1beta1.MachineDeployment
		up, down  int
		high, low int64
	}{
		{"standalone", 3, nil, 2, 1, 8, 7},
		{"standalone at zero", 0, nil, 2, 1, 2, 1},
		{"standalone, other safety", 5, nil, 4, 2, 14, 12},
		{"deployment, surge count", 1, deployment(10, mdv1beta1.RollingUpdateStrategy, num(3)), 2, 1, 15, 14},
		{"deployment, percent rounds up", 1, deployment(10, mdv1beta1.RollingUpdateStrategy, pct("25%")), 2, 1, 15, 14},
		{"deployment, default surge 25%", 1, deployment(4, "", nil), 2, 1, 7, 6},
		{"deployment, Recreate never surges", 1, deployment(4, mdv1beta1.RecreateStrategy, num(3)), 2, 1, 6, 5},
		{"deployment, OnDelete never surges", 1, deployment(4, mdv1beta1.OnDeleteStrategy, nil), 2, 1, 6, 5},
		{"deployment, maxSurge 2147483647 counts as replicas", 1, deployment(3, mdv1beta1.RollingUpdateStrategy, num(math.MaxInt32)), 2, 1, 8, 7},
		{"deployment, maxSurge 1000% counts as replicas", 1, deployment(3, mdv1beta1.RollingUpdateStrategy, pct("1000%")), 2, 1, 8, 7},
		{"deployment at MaxInt32 replicas: no wrap", 1, deployment(math.MaxInt32, mdv1beta1.RollingUpdateStrategy, num(math.MaxInt32)), 2, 1,
			math.MaxInt32 + mdv1beta1.MaxRollingUpdateCount + 2, math.MaxInt32 + mdv1beta1.MaxRollingUpdateCount + 1},
		{"standalone at MaxInt32: no wrap", math.MaxInt32, nil, math.MaxInt32, 0, 3 * math.MaxInt32, 3 * math.MaxInt32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := overshootThresholds(tt.replicas, tt.md, tt.up, tt.down)
			if err != nil {
				t.Fatal(err)
			}
			if got.high != tt.high || got.low != tt.low {
				t.Errorf("high/low = %d/%d, want %d/%d", got.high, got.low, tt.high, tt.low)
			}
		})
	}
	if _, err := overshootThresholds(1, deployment(4, mdv1beta1.RollingUpdateStrategy, pct("x%")), 2, 1); err == nil {
		t.Error("an unreadable maxSurge was accepted")
	}
}

// TestCountMachines: owner by name and UID, template labels, not deleting.
// Breaks if: the UID or the labels were not compared.
func TestCountMachines(t *testing.T) {
	ms := &machinev1beta1.MachineSet{ObjectMeta: metav1.ObjectMeta{Name: "ms", UID: "u1"}}
	ms.Spec.Template.Labels = map[string]string{"set": "a"}
	owned := func(name, uid string, lbl map[string]string) *machinev1beta1.Machine {
		return &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Labels: lbl, OwnerReferences: []metav1.OwnerReference{
			{Kind: "MachineSet", Name: name, UID: metav1UID(uid)}}}}
	}
	deleting := owned("ms", "u1", map[string]string{"set": "a"})
	deleting.DeletionTimestamp = &metav1.Time{}
	machines := []*machinev1beta1.Machine{
		owned("ms", "u1", map[string]string{"set": "a"}),
		owned("ms", "u1", map[string]string{"set": "a", "more": "x"}), // a superset matches
		owned("ms", "u0", map[string]string{"set": "a"}),              // an earlier set of that name
		owned("other", "u2", map[string]string{"set": "a"}),
		owned("ms", "u1", map[string]string{"set": "b"}),
		{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"set": "a"}}}, // orphan
		deleting,
	}
	if got := countMachines(ms, machines); got != 2 {
		t.Errorf("count = %d, want 2", got)
	}
}

// TestDecideOvershoot: freeze at high, hold between, lift at low; the
// annotation lifts it anyway. Breaks if: the comparisons were strict (>
// high, < low), or the hysteresis band unfroze.
func TestDecideOvershoot(t *testing.T) {
	th := thresholds{high: 8, low: 7}
	none, full, labelOnly := freezeMarks{}, freezeMarks{true, true}, freezeMarks{label: true}
	tests := []struct {
		name       string
		count      int64
		marks      freezeMarks
		unfreeze   bool
		wantFrozen bool
		wantReason string
		wantWrite  bool
	}{
		{"below, not frozen", 3, none, false, false, ReasonUnderShootingReplicaCount, false},
		{"at high freezes", 8, none, false, true, ReasonOverShootingReplicaCount, true},
		{"above high freezes", 12, none, false, true, ReasonOverShootingReplicaCount, true},
		{"frozen stays at high, no write", 9, full, false, true, ReasonOverShootingReplicaCount, false},
		{"at low, not frozen stays so", 7, none, false, false, ReasonUnderShootingReplicaCount, false},
		{"at low unfreezes", 7, full, false, false, ReasonUnderShootingReplicaCount, true},
		{"below low unfreezes a label alone", 2, labelOnly, false, false, ReasonUnderShootingReplicaCount, true},
		{"annotation lifts a freeze at high", 12, full, true, false, ReasonUnfreezeAnnotation, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decideOvershoot("ms", tt.count, th, tt.marks, tt.unfreeze, true)
			if d.frozen != tt.wantFrozen || d.reason != tt.wantReason || d.changes(tt.marks) != tt.wantWrite {
				t.Errorf("frozen=%v reason=%s write=%v, want %v %s %v", d.frozen, d.reason, d.changes(tt.marks), tt.wantFrozen, tt.wantReason, tt.wantWrite)
			}
		})
	}
	// The hysteresis band (low < count < high) keeps a freeze and repairs a
	// missing mark.
	th = thresholds{high: 8, low: 5}
	if d := decideOvershoot("ms", 6, th, labelOnly, false, true); !d.frozen || !d.changes(labelOnly) {
		t.Errorf("band with the label only: %+v, want frozen and a write (the condition)", d)
	}
	if d := decideOvershoot("ms", 6, th, full, false, true); !d.frozen || d.changes(full) {
		t.Errorf("band, fully frozen: %+v, want frozen, no write", d)
	}
	// Not settled (a new spec the set controller has not acted on): no new
	// freeze; a freeze holds; a thaw still happens.
	if d := decideOvershoot("ms", 9, th, none, false, false); d.frozen || d.changes(none) {
		t.Errorf("unsettled, not frozen: %+v, want no freeze", d)
	}
	if d := decideOvershoot("ms", 9, th, full, false, false); !d.frozen || d.changes(full) {
		t.Errorf("unsettled, frozen: %+v, want the freeze held", d)
	}
	if d := decideOvershoot("ms", 2, th, full, false, false); d.frozen || !d.changes(full) {
		t.Errorf("unsettled, frozen, low count: %+v, want a thaw", d)
	}
	want := "The number of machines backing MachineSet: ms is 9 >= 8 which is the Max-ScaleUp-Limit"
	if d := decideOvershoot("ms", 9, th, none, false, true); d.message != want {
		t.Errorf("message %q, want %q", d.message, want)
	}
}

// TestDecideDeployment: a MachineDeployment is frozen while any of its sets
// is. Breaks if: a set freezing now did not pass its reason on.
func TestDecideDeployment(t *testing.T) {
	froze := freezeDecision{frozen: true, reason: ReasonOverShootingReplicaCount, message: "m"}
	tests := []struct {
		name       string
		anyFrozen  bool
		set        freezeDecision
		frozeNow   bool
		unfreeze   bool
		wantFrozen bool
		wantReason string
	}{
		{"a set froze now", true, froze, true, false, true, ReasonOverShootingReplicaCount},
		{"another set is frozen", true, freezeDecision{}, false, false, true, ReasonMachineDeploymentStateSync},
		{"none frozen", false, freezeDecision{reason: ReasonUnderShootingReplicaCount}, false, false, false, ReasonUnderShootingReplicaCount},
		{"annotation", true, froze, false, true, false, ReasonUnfreezeAnnotation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decideDeployment("md", tt.anyFrozen, tt.set, tt.frozeNow, tt.unfreeze)
			if d.frozen != tt.wantFrozen || d.reason != tt.wantReason {
				t.Errorf("frozen=%v reason=%s, want %v %s", d.frozen, d.reason, tt.wantFrozen, tt.wantReason)
			}
		})
	}
}

func metav1UID(s string) types.UID { return types.UID(s) }
