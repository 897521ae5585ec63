package machinedeployment

import (
	"math"
	"slices"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
)

// fuzzIntOrString is an int (isString false) or a string value, as the API server would pass.
func fuzzIntOrString(n int32, s string, isString bool) intstr.IntOrString {
	if isString {
		return intstr.FromString(s)
	}
	return intstr.FromInt32(n)
}

var fuzzStrategies = []mdv1beta1.MachineDeploymentStrategyType{
	mdv1beta1.RollingUpdateStrategy, "", mdv1beta1.RecreateStrategy, mdv1beta1.OnDeleteStrategy,
}

// FuzzFenceposts: whatever maxSurge and maxUnavailable say, surge and unavailable lie in
// [0, replicas], unavailable within the percent or count bound, and a RollingUpdate of at least
// one replica can always move (surge + unavailable ≥ 1); other strategies have neither.
// Breaks if: Fenceposts truncated a value to int32, kept a surge above replicas, or let a
// negative or out-of-range percentage through.
func FuzzFenceposts(f *testing.F) {
	f.Add(int32(10), int32(0), "25%", true, int32(0), "25%", true, uint8(0))
	f.Add(int32(math.MaxInt32), int32(math.MaxInt32), "", false, int32(math.MaxInt32), "", false, uint8(0))
	f.Add(int32(3), int32(-1), "", false, int32(math.MinInt32), "", false, uint8(1))
	f.Add(int32(-5), int32(0), "-50%", true, int32(0), "99999999999999999999999%", true, uint8(0))
	f.Add(int32(math.MaxInt32), int32(0), "100%", true, int32(0), "9223372036854775807%", true, uint8(0))
	f.Add(int32(7), int32(0), "x", true, int32(0), "%", true, uint8(2))
	f.Fuzz(func(t *testing.T, replicas, surgeN int32, surgeS string, surgeIsS bool, unavN int32, unavS string, unavIsS bool, strategy uint8) {
		md := newMD("a", replicas, fuzzIntOrString(surgeN, surgeS, surgeIsS), fuzzIntOrString(unavN, unavS, unavIsS))
		md.Spec.Strategy.Type = fuzzStrategies[int(strategy)%len(fuzzStrategies)]
		surge, unavailable := Fenceposts(md)
		n := max(int64(replicas), 0)
		if surge < 0 || surge > n || unavailable < 0 || unavailable > n {
			t.Fatalf("replicas %d: surge %d, unavailable %d outside [0, %d]", replicas, surge, unavailable, n)
		}
		if unavailable > mdv1beta1.MaxRollingUpdateCount && unavailable > n*mdv1beta1.MaxRollingUpdatePercent/100 {
			t.Fatalf("unavailable %d beyond both bounds", unavailable)
		}
		rolling := md.Spec.Strategy.Type == "" || md.Spec.Strategy.Type == mdv1beta1.RollingUpdateStrategy
		if !rolling && (surge != 0 || unavailable != 0) {
			t.Fatalf("%s: surge %d, unavailable %d, want 0, 0", md.Spec.Strategy.Type, surge, unavailable)
		}
		if rolling && n > 0 && surge+unavailable < 1 {
			t.Fatalf("replicas %d: surge 0 and unavailable 0: the rollout cannot move", n)
		}
	})
}

// FuzzDecide: one step over up to three sets of any size and annotations never plans a
// negative or out-of-range size, never grows the total beyond both replicas+maxSurge and
// what it was, and a scaling event to replicas > 0 never shrinks below min(replicas, before),
// so never to 0.
// Breaks if: replicas+surge were computed in int32 (2147483647 + 1 wraps negative and a
// scaling event sizes every set to 0), or a set size were truncated when written back.
func FuzzDecide(f *testing.F) {
	f.Add(int32(math.MaxInt32), int32(1), "", false, uint8(0), false,
		int32(7), uint8(7), "10", int32(6), uint8(6), "10", int32(0), uint8(0), "", uint8(2))
	f.Add(int32(math.MaxInt32), int32(math.MaxInt32), "", false, uint8(0), false,
		int32(math.MaxInt32), uint8(3), "5", int32(math.MaxInt32), uint8(2), "5", int32(1), uint8(1), "2147483648", uint8(7))
	f.Add(int32(20), int32(0), "300%", true, uint8(0), false,
		int32(7), uint8(7), "10", int32(6), uint8(6), "10", int32(0), uint8(0), "", uint8(2))
	f.Add(int32(5), int32(-7), "", false, uint8(0), true,
		int32(-3), uint8(2), "-1", int32(4), uint8(4), "4294967301", int32(2), uint8(0), "x", uint8(1))
	f.Add(int32(0), int32(2), "", false, uint8(2), false,
		int32(3), uint8(3), "3", int32(0), uint8(0), "", int32(0), uint8(0), "", uint8(0))
	f.Add(int32(4), int32(0), "99999999999999999999%", true, uint8(3), false,
		int32(2), uint8(2), "4", int32(2), uint8(1), "4", int32(1), uint8(1), "4", uint8(6))
	f.Fuzz(func(t *testing.T, replicas, surgeN int32, surgeS string, surgeIsS bool, strategy uint8, paused bool,
		r0 int32, a0 uint8, d0 string, r1 int32, a1 uint8, d1 string, r2 int32, a2 uint8, d2 string, current uint8) {
		md := newMD("v2", max(replicas, 0), fuzzIntOrString(surgeN, surgeS, surgeIsS), intstr.FromString("25%"))
		md.Spec.Strategy.Type = fuzzStrategies[int(strategy)%len(fuzzStrategies)]
		if md.Spec.Strategy.Type != mdv1beta1.RollingUpdateStrategy && md.Spec.Strategy.Type != "" {
			md.Spec.Strategy.RollingUpdate = nil
		}
		md.Spec.Paused = paused
		// current's bits say which sets carry md's template (v2); the others are older ones.
		var sets []sst
		var before int64
		for k, in := range []struct {
			replicas int32
			active   uint8
			desired  string
		}{{r0, a0, d0}, {r1, a1, d1}, {r2, a2, d2}} {
			v := "v" + strconv.Itoa(k-3) // v-3, v-2, v-1: never md's template
			if current&(1<<k) != 0 {
				v = "v2"
			}
			if slices.ContainsFunc(sets, func(s sst) bool { return s.v == v }) {
				continue // one set per template
			}
			n := max(in.replicas, 0)
			before += int64(n)
			sets = append(sets, sst{v: v, age: k, replicas: n, revision: k + 1, avail: avail(int(in.active % 16)),
				annot: map[string]string{mdv1beta1.DesiredReplicasAnnotation: in.desired}})
		}
		scalingEvent := false
		for _, s := range sets {
			d, err := strconv.ParseInt(s.annot[mdv1beta1.DesiredReplicasAnnotation], 10, 64)
			scalingEvent = scalingEvent || (s.replicas != 0 && err == nil && d >= 0 && d != int64(max(replicas, 0)))
		}
		p := Decide(md, states(md, sets...), t0)
		var after int64
		for name, n := range sizes(p) {
			if n < 0 {
				t.Fatalf("set %s planned at %d replicas", name, n)
			}
			after += int64(n)
		}
		surge, _ := Fenceposts(md)
		want := max(int64(max(replicas, 0)), 0)
		if bound := max(before, want+surge); after > bound {
			t.Fatalf("total planned %d above max(before %d, replicas %d + surge %d)", after, before, want, surge)
		}
		if scalingEvent && want > 0 && after < min(want, before) {
			t.Fatalf("scaling event to %d replicas shrank the sets from %d to %d", want, before, after)
		}
		for _, ms := range p.Sets {
			if v := ms.Annotations[mdv1beta1.MaxReplicasAnnotation]; v != "" && ptr.Deref(ms.Spec.Replicas, 0) != 0 {
				if m, err := strconv.ParseInt(v, 10, 64); err == nil && m < 0 {
					t.Fatalf("set %s records max-replicas %d", ms.Name, m)
				}
			}
		}
	})
}
