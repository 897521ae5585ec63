package machinedeployment

import (
	"maps"
	"math"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
)

var (
	i     = intstr.FromInt32
	pct   = intstr.FromString
	zero  = intstr.FromInt32(0)
	twoS  = intstr.FromInt32(2)
	oneU  = intstr.FromInt32(1)
	avail = func(n int) []bool { return all(n, true) }
	unav  = func(n int) []bool { return all(n, false) }
)

// createdName is the name of the MachineSet made for template v.
func createdName(v string) string {
	t := template(v)
	return "created:" + SetName("w", TemplateHash(&t, nil))
}

// TestFenceposts: Deployments' rounding, within the bounds (docs/machinedeployment.md).
// Breaks if: a surge above replicas were kept (a scaling event could size one set up to
// replicas+surge), or values beyond the bound wrapped or were not clamped.
func TestFenceposts(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		replicas               int32
		surge, unavailable     intstr.IntOrString
		wantSurge, wantUnavail int64
	}{
		{"25% of 10: surge rounds up, unavailable down", 10, pct("25%"), pct("25%"), 3, 2},
		{"absolute", 6, twoS, oneU, 2, 1},
		{"both 0: unavailable 1", 3, zero, zero, 0, 1},
		{"percentages rounding both to 0: unavailable 1", 1, pct("0%"), pct("10%"), 0, 1},
		{"10% of 5 surge is 1", 5, pct("10%"), zero, 1, 0},
		{"unavailable capped at replicas", 2, zero, i(5), 0, 2},
		{"99% of 3 unavailable is 2", 3, zero, pct("99%"), 0, 2},
		{"surge above replicas acts as replicas", 3, i(5), zero, 3, 0},
		{"surge 2147483647 at 2147483647 replicas: no wrap", math.MaxInt32, i(math.MaxInt32), zero, mdv1beta1.MaxRollingUpdateCount, 0},
		{"surge percent above 100% acts as 100%", 4, pct("300%"), zero, 4, 0},
		{"a percent beyond int64 acts as 100%", 7, pct("99999999999999999999999%"), pct("99999999999999999999999%"), 7, 7},
		{"negative values are 0", 5, i(-3), pct("-50%"), 0, 1},
		{"unreadable values are 0", 5, intstr.FromString("5"), intstr.FromString("x%"), 0, 1},
		{"100% of MaxInt32 rounds exactly", math.MaxInt32, pct("100%"), pct("100%"), math.MaxInt32, math.MaxInt32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, u := Fenceposts(newMD("a", tc.replicas, tc.surge, tc.unavailable))
			if s != tc.wantSurge || u != tc.wantUnavail {
				t.Errorf("Fenceposts = %d, %d; want %d, %d", s, u, tc.wantSurge, tc.wantUnavail)
			}
		})
	}
	md := newMD("a", 4, zero, zero)
	md.Spec.Strategy.RollingUpdate = nil
	if s, u := Fenceposts(md); s != 1 || u != 1 {
		t.Errorf("defaults on 4 replicas: %d, %d; want 25%% → 1, 1", s, u)
	}
	md.Spec.Strategy.Type = mdv1beta1.RecreateStrategy
	if s, u := Fenceposts(md); s != 0 || u != 0 {
		t.Errorf("Recreate: %d, %d; want 0, 0", s, u)
	}
}

// TestRollingUpdate walks a rollout of 6 Machines with maxSurge 2 and
// maxUnavailable 1, one decision at a time.
func TestRollingUpdate(t *testing.T) {
	md := newMD("b", 6, twoS, oneU)
	for _, tc := range []struct {
		name string
		sets []sst
		want map[string]int32
	}{
		{"the new set is created at maxSurge",
			[]sst{{v: "a", replicas: 6, revision: 1, avail: avail(6)}},
			map[string]int32{"w-a": 6, createdName("b"): 2}},
		{"new Machines unavailable: one old one may go",
			[]sst{{v: "a", replicas: 6, revision: 1, avail: avail(6)}, {v: "b", age: 1, replicas: 2, avail: unav(2)}},
			map[string]int32{"w-a": 5, "w-b": 2}},
		{"an old Machine not deleted yet still counts against the surge",
			[]sst{{v: "a", replicas: 5, revision: 1, avail: avail(6)}, {v: "b", age: 1, replicas: 2, avail: unav(2)}},
			map[string]int32{"w-a": 5, "w-b": 2}},
		{"it went: the new set grows by one",
			[]sst{{v: "a", replicas: 5, revision: 1, avail: avail(5)}, {v: "b", age: 1, replicas: 2, avail: unav(2)}},
			map[string]int32{"w-a": 5, "w-b": 3}},
		{"new Machines never available: stuck at maxUnavailable",
			[]sst{{v: "a", replicas: 5, revision: 1, avail: avail(5)}, {v: "b", age: 1, replicas: 3, avail: unav(3)}},
			map[string]int32{"w-a": 5, "w-b": 3}},
		{"Machines being deleted count against the surge",
			[]sst{{v: "a", replicas: 5, revision: 1, avail: avail(5)}, {v: "b", age: 1, replicas: 2, avail: unav(2), deleting: 1}},
			map[string]int32{"w-a": 5, "w-b": 2}},
		{"new Machines available: old sets shrink to keep 5 available",
			[]sst{{v: "a", replicas: 5, revision: 1, avail: avail(5)}, {v: "b", age: 1, replicas: 3, avail: avail(3)}},
			map[string]int32{"w-a": 2, "w-b": 3}},
		{"unavailable old Machines first in delete order go first",
			[]sst{{v: "a", replicas: 6, revision: 1, avail: []bool{false, false, true, true, true, true}}, {v: "b", age: 1, replicas: 2, avail: unav(2)}},
			map[string]int32{"w-a": 5, "w-b": 2}},
		{"an unavailable old Machine last in delete order is not counted on",
			[]sst{{v: "a", replicas: 6, revision: 1, avail: []bool{true, true, true, true, true, false}}, {v: "b", age: 1, replicas: 2, avail: unav(2)}},
			map[string]int32{"w-a": 6, "w-b": 2}},
		{"oldest set shrinks first",
			[]sst{{v: "a", replicas: 2, revision: 1, avail: avail(2)}, {v: "c", age: 1, replicas: 4, revision: 2, avail: avail(4)}, {v: "b", age: 2, replicas: 2, avail: avail(2)}},
			map[string]int32{"w-a": 0, "w-c": 3, "w-b": 2}},
		{"a new set above replicas shrinks",
			[]sst{{v: "b", replicas: 7, revision: 1, avail: avail(7)}},
			map[string]int32{"w-b": 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(md, states(md, tc.sets...), t0)
			if got := sizes(p); !maps.Equal(got, tc.want) {
				t.Errorf("sizes %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRecreate(t *testing.T) {
	md := newMD("b", 3, zero, zero)
	md.Spec.Strategy = mdv1beta1.MachineDeploymentStrategy{Type: mdv1beta1.RecreateStrategy}
	for _, tc := range []struct {
		name string
		sets []sst
		want map[string]int32
	}{
		{"old sets to 0 first, nothing created",
			[]sst{{v: "a", replicas: 3, revision: 1, avail: avail(3)}},
			map[string]int32{"w-a": 0}},
		{"old Machines left: wait",
			[]sst{{v: "a", replicas: 0, revision: 1, avail: avail(1), deleting: 1}},
			map[string]int32{"w-a": 0}},
		{"old Machines gone: the new set at replicas",
			[]sst{{v: "a", replicas: 0, revision: 1}},
			map[string]int32{"w-a": 0, createdName("b"): 3}},
		{"an existing new set grows to replicas",
			[]sst{{v: "a", replicas: 0, revision: 1}, {v: "b", age: 1, replicas: 0, revision: 2}},
			map[string]int32{"w-a": 0, "w-b": 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(md, states(md, tc.sets...), t0)
			if got := sizes(p); !maps.Equal(got, tc.want) {
				t.Errorf("sizes %v, want %v", got, tc.want)
			}
		})
	}
}

func TestOnDelete(t *testing.T) {
	md := newMD("b", 3, zero, zero)
	md.Spec.Strategy = mdv1beta1.MachineDeploymentStrategy{Type: mdv1beta1.OnDeleteStrategy}
	for _, tc := range []struct {
		name string
		sets []sst
		want map[string]int32
	}{
		{"the new set starts empty",
			[]sst{{v: "a", replicas: 3, revision: 1, avail: avail(3)}},
			map[string]int32{"w-a": 3, createdName("b"): 0}},
		{"an old Machine deleted by someone: the old set keeps 2, the new one gets 1",
			[]sst{{v: "a", replicas: 3, revision: 1, avail: avail(2)}, {v: "b", age: 1, replicas: 0, revision: 2}},
			map[string]int32{"w-a": 2, "w-b": 1}},
		{"nothing deleted: nothing moves",
			[]sst{{v: "a", replicas: 2, revision: 1, avail: avail(2)}, {v: "b", age: 1, replicas: 1, revision: 2, avail: avail(1)}},
			map[string]int32{"w-a": 2, "w-b": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(md, states(md, tc.sets...), t0)
			if got := sizes(p); !maps.Equal(got, tc.want) {
				t.Errorf("sizes %v, want %v", got, tc.want)
			}
		})
	}
}

// TestProportionalScaling: replicas change mid-rollout; every active set
// changes in proportion (the sets were last scaled at 10 replicas, maxSurge
// 3: max-replicas 13).
func TestProportionalScaling(t *testing.T) {
	at10 := map[string]string{mdv1beta1.DesiredReplicasAnnotation: "10", mdv1beta1.MaxReplicasAnnotation: "13"}
	for _, tc := range []struct {
		name     string
		replicas int32
		sets     []sst
		want     map[string]int32
		wantMax  string
	}{
		{"10 → 20: 7 and 6 of 13 become 12 and 11 of 23", 20,
			[]sst{{v: "a", replicas: 7, revision: 1, avail: avail(7), annot: at10}, {v: "b", age: 1, replicas: 6, avail: avail(6), annot: at10}},
			map[string]int32{"w-a": 12, "w-b": 11}, "23"},
		{"10 → 5: 7 and 6 of 13 become 4 and 4 of 8", 5,
			[]sst{{v: "a", replicas: 7, revision: 1, avail: avail(7), annot: at10}, {v: "b", age: 1, replicas: 6, avail: avail(6), annot: at10}},
			map[string]int32{"w-a": 4, "w-b": 4}, "8"},
		{"10 → 0: everything to 0 (max-replicas 0: the surge is at most replicas)", 0,
			[]sst{{v: "a", replicas: 7, revision: 1, avail: avail(7), annot: at10}, {v: "b", age: 1, replicas: 6, avail: avail(6), annot: at10}},
			map[string]int32{"w-a": 0, "w-b": 0}, "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := newMD("b", tc.replicas, i(3), i(2))
			p := Decide(md, states(md, tc.sets...), t0)
			if got := sizes(p); !maps.Equal(got, tc.want) {
				t.Errorf("sizes %v, want %v", got, tc.want)
			}
			for _, ms := range p.Sets {
				if ms.Annotations[mdv1beta1.MaxReplicasAnnotation] != tc.wantMax ||
					ms.Annotations[mdv1beta1.DesiredReplicasAnnotation] != itoa(tc.replicas) {
					t.Errorf("%s annotations %v, want max-replicas %s desired %d", ms.Name, ms.Annotations, tc.wantMax, tc.replicas)
				}
			}
		})
	}

	t.Run("rounding leftovers go to the largest (newest among equals when growing)", func(t *testing.T) {
		md := newMD("c", 4, i(1), i(0))
		at3 := map[string]string{mdv1beta1.DesiredReplicasAnnotation: "3", mdv1beta1.MaxReplicasAnnotation: "4"}
		sets := states(md,
			sst{v: "a", replicas: 1, revision: 1, avail: avail(1), annot: at3},
			sst{v: "b", age: 1, replicas: 1, revision: 2, avail: avail(1), annot: at3},
			sst{v: "c", age: 2, replicas: 1, revision: 3, avail: avail(1), annot: at3})
		p := Decide(md, sets, t0)
		want := map[string]int32{"w-a": 1, "w-b": 1, "w-c": 3}
		if got := sizes(p); !maps.Equal(got, want) {
			t.Errorf("sizes %v, want %v (5 allowed: 1+1+1 and the 2 left over to the newest)", got, want)
		}
	})

	t.Run("a set sized by hand to replicas gets the annotations, so the rollout can go on", func(t *testing.T) {
		md := newMD("b", 5, i(1), i(0))
		p := Decide(md, states(md, sst{v: "a", replicas: 5, revision: 1, avail: avail(5), annot: map[string]string{mdv1beta1.DesiredReplicasAnnotation: "3"}}), t0)
		if got := p.Sets[0].Annotations[mdv1beta1.DesiredReplicasAnnotation]; got != "5" {
			t.Errorf("desired-replicas %q, want 5", got)
		}
	})

	t.Run("a lone active set takes replicas", func(t *testing.T) {
		md := newMD("a", 5, i(1), i(0))
		p := Decide(md, states(md, sst{v: "a", replicas: 3, revision: 1, avail: avail(3), annot: map[string]string{mdv1beta1.DesiredReplicasAnnotation: "3"}}), t0)
		if got, want := sizes(p), map[string]int32{"w-a": 5}; !maps.Equal(got, want) {
			t.Errorf("sizes %v, want %v", got, want)
		}
	})
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// TestHoldOldSets: a running OnDelete rollout stops its old sets from
// creating Machines (DisableMachineCreateAnnotation) and never the new one;
// a paused rollout, another strategy or a set made new again by a rollback
// loses the mark. Breaks if: holdOldSets marked the new set, or left the
// mark on after the strategy changed.
func TestHoldOldSets(t *testing.T) {
	held := map[string]string{mdv1beta1.DisableMachineCreateAnnotation: "true"}
	for _, tc := range []struct {
		name     string
		strategy mdv1beta1.MachineDeploymentStrategyType
		paused   bool
		sets     []sst
		want     map[string]bool // set name → marked
	}{
		{"OnDelete: the old set is held, the new one not", mdv1beta1.OnDeleteStrategy, false,
			[]sst{{v: "a", replicas: 3, revision: 1, avail: avail(3)}, {v: "b", age: 1, replicas: 0, revision: 2}},
			map[string]bool{"w-a": true, "w-b": false}},
		{"OnDelete paused: nothing held", mdv1beta1.OnDeleteStrategy, true,
			[]sst{{v: "a", replicas: 3, revision: 1, avail: avail(3), annot: held}, {v: "b", age: 1, replicas: 0, revision: 2}},
			map[string]bool{"w-a": false, "w-b": false}},
		{"rollback under OnDelete: the set made new again is released", mdv1beta1.OnDeleteStrategy, false,
			[]sst{{v: "b", replicas: 3, revision: 1, avail: avail(3), annot: held}, {v: "a", age: 1, replicas: 0, revision: 2}},
			map[string]bool{"w-b": false, "w-a": true}},
		{"RollingUpdate: the mark of an earlier OnDelete goes", mdv1beta1.RollingUpdateStrategy, false,
			[]sst{{v: "a", replicas: 3, revision: 1, avail: avail(3), annot: held}, {v: "b", age: 1, replicas: 0, revision: 2}},
			map[string]bool{"w-a": false, "w-b": false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := newMD("b", 3, zero, zero)
			md.Spec.Strategy = mdv1beta1.MachineDeploymentStrategy{Type: tc.strategy}
			if tc.strategy == mdv1beta1.RollingUpdateStrategy {
				md = newMD("b", 3, intstr.FromInt32(1), zero)
			}
			md.Spec.Paused = tc.paused
			p := Decide(md, states(md, tc.sets...), t0)
			got := map[string]bool{}
			for _, ms := range p.Sets {
				got[ms.Name] = ms.Annotations[mdv1beta1.DisableMachineCreateAnnotation] == "true"
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("held %v, want %v", got, tc.want)
			}
		})
	}
}

// TestScalingEventNearMaxInt32: a scaling event to 2147483647 replicas with maxSurge 1
// grows the sets instead of shrinking them (replicas + surge is 2³¹, no int32 holds it).
// Breaks if: scale() computed replicas+surge in int32 (it wraps to −2³¹ and every set goes to 0).
func TestScalingEventNearMaxInt32(t *testing.T) {
	md := newMD("b", math.MaxInt32, i(1), zero)
	at10 := map[string]string{mdv1beta1.DesiredReplicasAnnotation: "10", mdv1beta1.MaxReplicasAnnotation: "11"}
	p := Decide(md, states(md,
		sst{v: "a", replicas: 6, revision: 1, avail: avail(6), annot: at10},
		sst{v: "b", age: 1, replicas: 5, revision: 2, avail: avail(5), annot: at10}), t0)
	got := sizes(p)
	if got["w-a"] < 6 || got["w-b"] < 5 {
		t.Errorf("sizes %v: a scaling event up shrank a set", got)
	}
	for _, ms := range p.Sets {
		if v := ms.Annotations[mdv1beta1.MaxReplicasAnnotation]; v != "2147483648" {
			t.Errorf("%s max-replicas %q, want 2147483648", ms.Name, v)
		}
	}
}
