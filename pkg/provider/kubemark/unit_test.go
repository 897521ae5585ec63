package kubemark

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	kubemarkv1alpha1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/kubemark/v1alpha1"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
)

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func TestHealthAt(t *testing.T) {
	reg := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return reg.Add(d) }
	never := kubemarkv1alpha1.HealthPolicy{UnhealthyAfter: dur(0), Mode: kubemarkv1alpha1.HealthModeOnce}
	once := kubemarkv1alpha1.HealthPolicy{UnhealthyAfter: dur(10 * time.Minute), Mode: kubemarkv1alpha1.HealthModeOnce}
	periodic := kubemarkv1alpha1.HealthPolicy{UnhealthyAfter: dur(10 * time.Minute), Mode: kubemarkv1alpha1.HealthModePeriodic, UnhealthyFor: dur(5 * time.Minute)}
	periodicDefault := kubemarkv1alpha1.HealthPolicy{UnhealthyAfter: dur(10 * time.Minute), Mode: kubemarkv1alpha1.HealthModePeriodic}
	var zero time.Time
	for _, tc := range []struct {
		name   string
		policy kubemarkv1alpha1.HealthPolicy
		now    time.Time
		want   HealthWindow
	}{
		{"never", never, at(100 * time.Hour), HealthWindow{true, reg, zero}},
		{"unset policy", kubemarkv1alpha1.HealthPolicy{}, at(time.Hour), HealthWindow{true, reg, zero}},
		{"once before", once, at(5 * time.Minute), HealthWindow{true, reg, at(10 * time.Minute)}},
		{"once just before", once, at(10*time.Minute - time.Nanosecond), HealthWindow{true, reg, at(10 * time.Minute)}},
		{"once at", once, at(10 * time.Minute), HealthWindow{false, at(10 * time.Minute), zero}},
		{"once long after", once, at(1000 * time.Hour), HealthWindow{false, at(10 * time.Minute), zero}},
		{"once before registration", once, at(-time.Minute), HealthWindow{true, reg, at(10 * time.Minute)}},
		{"periodic start", periodic, reg, HealthWindow{true, reg, at(10 * time.Minute)}},
		{"periodic first failure", periodic, at(10 * time.Minute), HealthWindow{false, at(10 * time.Minute), at(15 * time.Minute)}},
		{"periodic end of first failure", periodic, at(15*time.Minute - time.Second), HealthWindow{false, at(10 * time.Minute), at(15 * time.Minute)}},
		{"periodic recovered", periodic, at(15 * time.Minute), HealthWindow{true, at(15 * time.Minute), at(25 * time.Minute)}},
		{"periodic second failure", periodic, at(26 * time.Minute), HealthWindow{false, at(25 * time.Minute), at(30 * time.Minute)}},
		{"periodic many cycles later", periodic, at(100*15*time.Minute + 11*time.Minute), HealthWindow{false, at(100*15*time.Minute + 10*time.Minute), at(101 * 15 * time.Minute)}},
		{"periodic before registration", periodic, at(-time.Hour), HealthWindow{true, reg, at(10 * time.Minute)}},
		{"periodic unhealthyFor defaults to unhealthyAfter", periodicDefault, at(12 * time.Minute), HealthWindow{false, at(10 * time.Minute), at(20 * time.Minute)}},
		{"periodic huge durations", kubemarkv1alpha1.HealthPolicy{UnhealthyAfter: dur(200 * 365 * 24 * time.Hour), Mode: kubemarkv1alpha1.HealthModePeriodic, UnhealthyFor: dur(200 * 365 * 24 * time.Hour)},
			at(time.Hour), HealthWindow{true, reg, at(200 * 365 * 24 * time.Hour)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := HealthAt(tc.policy, reg, tc.now)
			if got.Healthy != tc.want.Healthy || !got.Since.Equal(tc.want.Since) || !got.Until.Equal(tc.want.Until) {
				t.Errorf("HealthAt(%s) =\n %+v\nwant\n %+v", tc.now.Sub(reg), got, tc.want)
			}
		})
	}
}

// TestHealthAtWindows: at any time the window contains now, and at its end
// the health flips.
func TestHealthAtWindows(t *testing.T) {
	reg := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	for _, p := range []kubemarkv1alpha1.HealthPolicy{
		{UnhealthyAfter: dur(7 * time.Second), Mode: kubemarkv1alpha1.HealthModeOnce},
		{UnhealthyAfter: dur(7 * time.Second), Mode: kubemarkv1alpha1.HealthModePeriodic, UnhealthyFor: dur(3 * time.Second)},
		{UnhealthyAfter: dur(time.Second), Mode: kubemarkv1alpha1.HealthModePeriodic, UnhealthyFor: dur(11 * time.Second)},
	} {
		for ms := 0; ms < 60_000; ms += 250 {
			now := reg.Add(time.Duration(ms) * time.Millisecond)
			w := HealthAt(p, reg, now)
			if now.Before(w.Since) || (!w.Until.IsZero() && !now.Before(w.Until)) {
				t.Fatalf("%+v at %s: window %+v does not contain now", p, now.Sub(reg), w)
			}
			if !w.Until.IsZero() {
				if next := HealthAt(p, reg, w.Until); next.Healthy == w.Healthy || !next.Since.Equal(w.Until) {
					t.Fatalf("%+v at %s: window %+v, then %+v", p, now.Sub(reg), w, next)
				}
			}
		}
	}
}

func TestNodeIP(t *testing.T) {
	network := netip.MustParsePrefix("127.128.0.0/9")
	seen := map[netip.Addr]string{}
	collisions := 0
	for i := range 5000 {
		name := "worker-" + strings.Repeat("x", i%7) + time.Duration(i).String()
		ip := NodeIP("openshift-machine-api", name, 0)
		if ip != NodeIP("openshift-machine-api", name, 0) {
			t.Fatalf("NodeIP(%s) is not stable", name)
		}
		if !network.Contains(ip) {
			t.Fatalf("NodeIP(%s) = %s, outside %s", name, ip, network)
		}
		if last := ip.As4()[3]; last == 0 || last == 255 {
			t.Fatalf("NodeIP(%s) = %s ends in .0 or .255", name, ip)
		}
		if other, ok := seen[ip]; ok && other != name {
			collisions++
		}
		seen[ip] = name
	}
	// 5000 names in ~8.3M addresses: a collision or two is possible, more
	// means the hash spreads badly (pickNodeIP resolves collisions anyway).
	if collisions > 5 {
		t.Errorf("%d collisions among 5000 names", collisions)
	}
	if NodeIP("a", "b", 0) == NodeIP("b", "b", 0) || NodeIP("a", "b", 0) == NodeIP("a", "b", 1) {
		t.Error("namespace and attempt do not change the IP")
	}
}

func TestPickNodeIP(t *testing.T) {
	first := NodeIP("ns", "m", 0)
	got, err := pickNodeIP("ns", "m", inSet(map[string]bool{}))
	if err != nil || got != first {
		t.Fatalf("free: got %s, %v; want %s", got, err, first)
	}
	got, err = pickNodeIP("ns", "m", inSet(map[string]bool{first.String(): true}))
	if err != nil || got != NodeIP("ns", "m", 1) {
		t.Fatalf("first taken: got %s, %v; want %s", got, err, NodeIP("ns", "m", 1))
	}
	all := map[string]bool{}
	for i := range maxIPAttempts {
		all[NodeIP("ns", "m", i).String()] = true
	}
	if _, err := pickNodeIP("ns", "m", inSet(all)); err == nil {
		t.Fatal("no error with every candidate taken")
	}
}

func machineWithSpec(raw string) *machinev1beta1.Machine {
	m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns"}}
	if raw != "" {
		m.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: []byte(raw)}
	}
	return m
}

func TestProviderSpecFromMachine(t *testing.T) {
	const head = `"apiVersion":"kubemark.machine-api-operator.io/v1alpha1","kind":"KubemarkMachineProviderSpec"`
	for _, tc := range []struct {
		name, raw, want string
	}{
		{"no value", "", "providerSpec.value: Required value"},
		{"negative cpu", `{` + head + `,"cpu":"-1"}`, `providerSpec.value.cpu: Invalid value: "-1": must be positive`},
		{"unknown field", `{` + head + `,"cpus":"4"}`, `providerSpec.value.cpus: Forbidden: unknown field`},
		{"unknown mode", `{` + head + `,"health":{"mode":"Never"}}`, `providerSpec.value.health.mode: Unsupported value: "Never"`},
		{"two errors", `{` + head + `,"cpu":"-1","pods":"0"}`, `providerSpec.value.cpu: Invalid value: "-1": must be positive; providerSpec.value.pods: Invalid value: "0": must be positive`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ProviderSpecFromMachine(machineWithSpec(tc.raw))
			if !provider.IsInvalidConfiguration(err) {
				t.Fatalf("error %v is not InvalidConfiguration", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}

	// An Object (set by Go code) works as well as Raw.
	m := machineWithSpec("")
	m.Spec.ProviderSpec.Value = &runtime.RawExtension{Object: &kubemarkv1alpha1.KubemarkMachineProviderSpec{
		TypeMeta: metav1.TypeMeta{APIVersion: kubemarkv1alpha1.GroupVersion.String(), Kind: kubemarkv1alpha1.ProviderSpecKind},
	}}
	spec, err := ProviderSpecFromMachine(m)
	if err != nil || spec.CPU.String() != "2" {
		t.Fatalf("from Object: %+v, %v", spec, err)
	}
}

func TestLeaseSeconds(t *testing.T) {
	renew := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		until time.Time
		want  int32
	}{
		{time.Time{}, 1<<31 - 1},
		{renew.Add(90 * time.Second), 90},
		{renew.Add(1500 * time.Millisecond), 2},
		{renew.Add(-time.Minute), 1},
		{renew.Add(200 * 365 * 24 * time.Hour), 1<<31 - 1},
	} {
		if got := leaseSeconds(renew, tc.until); got != tc.want {
			t.Errorf("leaseSeconds(until %s) = %d, want %d", tc.until.Sub(renew), got, tc.want)
		}
	}
}

// TestExampleMachine: the example manifest in testdata is a valid kubemark
// Machine.
func TestExampleMachine(t *testing.T) {
	data, err := os.ReadFile("testdata/machine.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := &machinev1beta1.Machine{}
	if err := yaml.UnmarshalStrict(data, m); err != nil {
		t.Fatal(err)
	}
	spec, err := ProviderSpecFromMachine(m)
	if err != nil {
		t.Fatal(err)
	}
	h := spec.Health
	if spec.CPU.String() != "4" || spec.Memory.String() != "8Gi" || spec.Pods.Value() != 110 || spec.BootDelay.Duration != 30*time.Second ||
		h.Mode != kubemarkv1alpha1.HealthModePeriodic || h.UnhealthyAfter.Duration != 10*time.Minute || h.UnhealthyFor.Duration != 3*time.Minute {
		t.Errorf("decoded %+v health %+v", spec, h)
	}
}

// TestSamplesAreValid: the Machine and the MachineSet template in
// config/samples (used by the README, make run and e2e) decode cleanly.
func TestSamplesAreValid(t *testing.T) {
	read := func(name string, into any) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "samples", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict(data, into); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	m := &machinev1beta1.Machine{}
	read("machine.yaml", m)
	if _, err := ProviderSpecFromMachine(m); err != nil {
		t.Errorf("machine.yaml: %v", err)
	}
	ms := &machinev1beta1.MachineSet{}
	read("machineset.yaml", ms)
	fromTemplate := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: ms.Namespace}, Spec: ms.Spec.Template.Spec}
	if _, err := ProviderSpecFromMachine(fromTemplate); err != nil {
		t.Errorf("machineset.yaml template: %v", err)
	}
	read("machinehealthcheck.yaml", &machinev1beta1.MachineHealthCheck{})
}

// inSet is a pickNodeIP lookup of the IPs in set.
func inSet(set map[string]bool) func(string) (bool, error) {
	return func(ip string) (bool, error) { return set[ip], nil }
}

// TestExistsConfirmsAbsenceUncached: for a provisioned Machine (providerID
// set), a Node the cache does not show yet (just registered, or created
// before an API server outage the informer has not caught up with) exists:
// Exists answers false only when the API server has no Node of the Machine,
// or when this process itself deleted it. For a Machine never provisioned it
// answers from the cache (false only leads to Create, which handles an
// existing Node); for one whose Node this process registered moments ago, it
// answers true without asking. Breaks if: the uncached read were made for
// every cache miss ("not provisioned" rows would answer true), or never
// ("cache behind the API server" would answer false).
func TestExistsConfirmsAbsenceUncached(t *testing.T) {
	pid := ProviderID("ns", "m")
	m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m"}, Spec: machinev1beta1.MachineSpec{ProviderID: &pid}}
	fresh := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m"}}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "m"},
		Spec:       corev1.NodeSpec{ProviderID: ProviderID("ns", "m")},
	}
	foreign := node.DeepCopy()
	foreign.Spec.ProviderID = "aws:///us-east-1a/i-1"
	for _, tc := range []struct {
		name         string
		machine      *machinev1beta1.Machine
		cached, live []client.Object
		recent       func(r *recentNodes, now time.Time)
		want         bool
	}{
		{"cache behind the API server", m, nil, []client.Object{node}, nil, true},
		{"cache shows an older foreign node", m, []client.Object{foreign}, []client.Object{node}, nil, true},
		{"gone from both", m, nil, nil, nil, false},
		{"foreign on the API server", m, nil, []client.Object{foreign}, nil, false},
		{"in the cache", m, []client.Object{node}, []client.Object{node}, nil, true},
		{"not provisioned: the cache answers", fresh, nil, []client.Object{node}, nil, false},
		{"registered by this process moments ago", m, nil, nil, func(r *recentNodes, now time.Time) { r.noteRegistered("m", now) }, true},
		{"deleted by this process moments ago", m, nil, []client.Object{node}, func(r *recentNodes, now time.Time) { r.noteDeleted("m", "", now) }, false},
		{"registered longer ago than recentTTL: asks", m, nil, nil, func(r *recentNodes, now time.Time) { r.noteRegistered("m", now.Add(-recentTTL)) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(tc.cached...).Build()
			live := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(tc.live...).Build()
			now := time.Unix(1000, 0)
			a := NewActuator(Options{Client: live, NodeReader: cache, Clock: clocktesting.NewFakePassiveClock(now)})
			if tc.recent != nil {
				tc.recent(a.recent, now)
			}
			got, err := a.Exists(t.Context(), tc.machine)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Exists = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNewNodeRegistersReady: a node healthy at registration is created with
// the conditions a ready kubelet registers with (so no later status write and
// no not-ready taint), one the simulation keeps unhealthy with none. Breaks
// if: newNode left the conditions empty whatever the health (kwok's status
// write and the node controllers' taint add/remove come back).
func TestNewNodeRegistersReady(t *testing.T) {
	m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m"}}
	spec, err := ProviderSpecFromMachine(&machinev1beta1.Machine{Spec: machinev1beta1.MachineSpec{ProviderSpec: machinev1beta1.ProviderSpec{
		Value: &runtime.RawExtension{Raw: []byte(`{"apiVersion":"kubemark.machine-api-operator.io/v1alpha1","kind":"KubemarkMachineProviderSpec"}`)}}}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	ready := newNode(m, spec, netip.MustParseAddr("127.128.0.1"), true, now)
	want := map[corev1.NodeConditionType]string{
		corev1.NodeReady: "True/KubeletReady", corev1.NodeMemoryPressure: "False/KubeletHasSufficientMemory",
		corev1.NodeDiskPressure: "False/KubeletHasNoDiskPressure", corev1.NodePIDPressure: "False/KubeletHasSufficientPID",
	}
	if len(ready.Status.Conditions) != len(want) {
		t.Fatalf("conditions = %+v, want %d", ready.Status.Conditions, len(want))
	}
	for _, c := range ready.Status.Conditions {
		if got := string(c.Status) + "/" + c.Reason; got != want[c.Type] {
			t.Errorf("%s = %s, want %s", c.Type, got, want[c.Type])
		}
		if !c.LastHeartbeatTime.Time.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
			t.Errorf("%s lastHeartbeatTime = %v", c.Type, c.LastHeartbeatTime)
		}
	}
	if c := newNode(m, spec, netip.MustParseAddr("127.128.0.1"), false, now).Status.Conditions; len(c) != 0 {
		t.Errorf("unhealthy at registration: conditions = %+v, want none", c)
	}
}

// The memory of this process's own writes answers with the last thing done to a Node, within recentTTL only.
// Breaks if: wasDeleted drops its n.deleted check ("registered, not deleted"), or wasRegistered its !n.deleted
// ("deleted, not registered").
func TestRecentNodes(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := newRecentNodes()
	r.noteRegistered("a", now)
	r.noteDeleted("b", "uid-b", now)
	r.noteRegistered("c", now.Add(-time.Second))
	r.noteDeleted("c", "uid-c", now)
	for _, tc := range []struct {
		name      string
		got, want bool
	}{
		{"registered", r.wasRegistered("a", now), true},
		{"registered, not deleted", r.wasDeleted("a", "", now), false},
		{"deleted", r.wasDeleted("b", "", now), true},
		{"deleted, with its UID", r.wasDeleted("b", "uid-b", now), true},
		{"deleted, another UID", r.wasDeleted("b", "uid-x", now), false},
		{"deleted, not registered", r.wasRegistered("b", now), false},
		{"registered then deleted: deleted", r.wasDeleted("c", "uid-c", now), true},
		{"registered then deleted: not registered", r.wasRegistered("c", now), false},
		{"forgotten after recentTTL", r.wasRegistered("a", now.Add(recentTTL)), false},
		{"never seen", r.wasDeleted("d", "", now), false},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}
