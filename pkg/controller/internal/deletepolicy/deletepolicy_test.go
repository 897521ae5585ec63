package deletepolicy

import (
	"math/rand/v2"
	"slices"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/machinefixture"
)

var (
	mk       = machinefixture.Running
	nodeless = machinefixture.Nodeless
	deleting = machinefixture.Deleting
	names    = machinefixture.Names
)

func annotated(key, value string) func(*machinev1beta1.Machine) {
	return func(m *machinev1beta1.Machine) { m.Annotations = map[string]string{key: value} }
}

func errMessage(m *machinev1beta1.Machine) { m.Status.ErrorMessage = ptr.To("boom") }
func errReason(m *machinev1beta1.Machine) {
	m.Status.ErrorReason = ptr.To(machinev1beta1.MachineStatusError("InvalidConfiguration"))
}
func phaseFailed(m *machinev1beta1.Machine) { m.Status.Phase = ptr.To("Failed") }

// byUIDHash is the Random order of the running machines of mix():
// FNV-1a 64 of "uid-run-mid" 0x95b78db987f1e0d2 < "uid-run-new"
// 0x9cdcc5b98b8f49e6 < "uid-run-old" 0xa735f1b991e620fd (neither age nor name
// order).
var byUIDHash = []string{"run-mid", "run-new", "run-old"}

func TestMachinesToDelete(t *testing.T) {
	const (
		random = machinev1beta1.RandomMachineSetDeletePolicy
		oldest = machinev1beta1.OldestMachineSetDeletePolicy
		newest = machinev1beta1.NewestMachineSetDeletePolicy
	)
	// A mix: one per class, the running ones of various ages.
	mix := func() []*machinev1beta1.Machine {
		return []*machinev1beta1.Machine{
			mk("run-old", 0),
			mk("run-mid", 5),
			mk("run-new", 10),
			mk("nodeless", 7, nodeless),
			mk("failed", 8, errMessage),
			mk("marked", 9, annotated(DeleteMachineAnnotation, "true")),
			mk("gone", 1, deleting),
		}
	}
	tests := []struct {
		name     string
		policy   machinev1beta1.MachineSetDeletePolicy
		machines []*machinev1beta1.Machine
		n        int
		want     []string
	}{
		{"n=0 deletes nothing", random, mix(), 0, nil},
		{"negative n deletes nothing", oldest, mix(), -2, nil},
		{"no machines", random, nil, 3, nil},
		{"random: deleting, marked, failed, nodeless first", random, mix(), 4,
			[]string{"gone", "marked", "failed", "nodeless"}},
		{"random: then running by hash", random, mix(), 7,
			append([]string{"gone", "marked", "failed", "nodeless"}, byUIDHash...)},
		{"random: n>len returns all", random, mix(), 99,
			append([]string{"gone", "marked", "failed", "nodeless"}, byUIDHash...)},
		{"empty policy is random", "", mix(), 4, []string{"gone", "marked", "failed", "nodeless"}},
		{"unknown policy is random", "Largest", mix(), 5,
			[]string{"gone", "marked", "failed", "nodeless", byUIDHash[0]}},
		{"oldest: classes first, then oldest running", oldest, mix(), 6,
			[]string{"gone", "marked", "failed", "nodeless", "run-old", "run-mid"}},
		{"newest: classes first, then newest running", newest, mix(), 6,
			[]string{"gone", "marked", "failed", "nodeless", "run-new", "run-mid"}},
		{"legacy annotation honoured", oldest, []*machinev1beta1.Machine{
			mk("a", 0), mk("b", 1, annotated(LegacyDeleteMachineAnnotation, "yes")), mk("c", 2)}, 1, []string{"b"}},
		{"empty annotation value ignored", oldest, []*machinev1beta1.Machine{
			mk("a", 0), mk("b", 1, annotated(DeleteMachineAnnotation, ""))}, 1, []string{"a"}},
		{"old cluster.k8s.io annotation ignored", newest, []*machinev1beta1.Machine{
			mk("a", 0, annotated("cluster.k8s.io/delete-machine", "yes")), mk("b", 1)}, 1, []string{"b"}},
		{"annotated before failed", newest, []*machinev1beta1.Machine{
			mk("f", 5, errMessage), mk("m", 0, annotated(DeleteMachineAnnotation, "1"))}, 2, []string{"m", "f"}},
		{"errorReason, errorMessage and phase Failed are failed", oldest, []*machinev1beta1.Machine{
			mk("run", 0), mk("reason", 3, errReason), mk("msg", 2, errMessage), mk("phase", 1, phaseFailed), mk("noNode", 0, nodeless)},
			4, []string{"phase", "msg", "reason", "noNode"}},
		{"failed before nodeless", random, []*machinev1beta1.Machine{
			mk("n", 0, nodeless), mk("f", 0, phaseFailed)}, 1, []string{"f"}},
		{"oldest tie broken by name", oldest, []*machinev1beta1.Machine{
			mk("b", 1), mk("c", 1), mk("a", 1), mk("z", 0)}, 3, []string{"z", "a", "b"}},
		{"newest tie broken by name", newest, []*machinev1beta1.Machine{
			mk("b", 1), mk("c", 1), mk("a", 1), mk("z", 0)}, 3, []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := names(tt.machines)
			got := names(MachinesToDelete(tt.policy, tt.machines, tt.n))
			if len(got) == 0 {
				got = nil
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("MachinesToDelete(%q, n=%d) = %v, want %v", tt.policy, tt.n, got, tt.want)
			}
			if !slices.Equal(names(tt.machines), before) {
				t.Errorf("input reordered: %v, was %v", names(tt.machines), before)
			}
		})
	}
}

// TestMachinesToDeleteDeterministic: every policy picks the same victims
// whatever the input order.
func TestMachinesToDeleteDeterministic(t *testing.T) {
	var machines []*machinev1beta1.Machine
	for i := range 40 {
		var mut []func(*machinev1beta1.Machine)
		switch i % 5 {
		case 0:
			mut = append(mut, nodeless)
		case 1:
			mut = append(mut, errMessage)
		}
		machines = append(machines, mk(string(rune('a'+i%26))+string(rune('a'+i/26)), i%3, mut...))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, policy := range []machinev1beta1.MachineSetDeletePolicy{"", "Random", "Oldest", "Newest"} {
		want := names(MachinesToDelete(policy, machines, 17))
		for range 20 {
			shuffled := slices.Clone(machines)
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			if got := names(MachinesToDelete(policy, shuffled, 17)); !slices.Equal(got, want) {
				t.Fatalf("policy %q: order depends on input order: %v vs %v", policy, got, want)
			}
		}
	}
}

// TestRandomFallsBackToName: without a UID the name is hashed. FNV-1a 64 of
// "x5" (0x08f10307b58d69f6) < "x4" < "x3" < "x2" < "x1" (0x08f10707b58d70c2):
// the reverse of name order, which is what ties on an unhashed (empty) key
// would give.
func TestRandomFallsBackToName(t *testing.T) {
	var ms []*machinev1beta1.Machine
	for _, n := range []string{"x1", "x2", "x3", "x4", "x5"} {
		m := mk(n, 0)
		m.UID = ""
		ms = append(ms, m)
	}
	want := []string{"x5", "x4", "x3", "x2", "x1"}
	if got := names(MachinesToDelete("Random", ms, 5)); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
