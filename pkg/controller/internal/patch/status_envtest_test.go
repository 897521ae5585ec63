package patch

import (
	"context"
	"net/http"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/apply/applytest"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

func newCond(t, status, reason string) machinev1beta1.Condition {
	c := cond(t, status, reason)
	c.LastTransitionTime = metav1.Now().Rfc3339Copy()
	return c
}

// writeStatus sets a Machine's status on the server as another writer would.
func writeStatus(t *testing.T, ctx context.Context, key client.ObjectKey, mutate func(*machinev1beta1.MachineStatus)) {
	t.Helper()
	m := &machinev1beta1.Machine{}
	if err := env.Client.Get(ctx, key, m); err != nil {
		t.Fatal(err)
	}
	mutate(&m.Status)
	if err := env.Client.Status().Update(ctx, m); err != nil {
		t.Fatal(err)
	}
}

func conditionTypes(m *machinev1beta1.Machine) []string {
	var out []string
	for _, c := range m.Status.Conditions {
		out = append(out, string(c.Type)+"/"+string(c.Status))
	}
	return out
}

// Each path of Status keeps a condition another writer added between the
// controller's read (base) and its write, and costs the requests stated.
func TestStatusKeepsForeignConditions(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "patch-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	counter := applytest.NewCountingTransport()
	c, err := client.New(counter.Install(env.Config), client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	foreign := newCond("Synchronized", "True", "Sync")
	// Warm the client's REST mapping up so that only Status's requests count.
	if err := c.List(ctx, &machinev1beta1.MachineList{}, client.InNamespace(ns.Name)); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name string
		// initial is the status before the read; meanwhile runs between
		// the read and the write; change is the controller's change.
		initial   []machinev1beta1.Condition
		meanwhile func(*machinev1beta1.MachineStatus)
		change    func(*machinev1beta1.MachineStatus)
		want      []string
		// requests: patches (and re-reads) Status sends.
		wantPatches, wantGets int
	}{{
		name:      "conditions changed: guarded JSON patch",
		initial:   []machinev1beta1.Condition{newCond("A", "False", "R")},
		meanwhile: func(s *machinev1beta1.MachineStatus) { s.Conditions = append(s.Conditions, foreign) },
		change: func(s *machinev1beta1.MachineStatus) {
			s.Conditions = []machinev1beta1.Condition{newCond("A", "True", "R"), newCond("C", "True", "R")}
		},
		want:        []string{"A/True", "Synchronized/True", "C/True"},
		wantPatches: 1,
	}, {
		name:      "conditions unchanged: merge patch without them",
		initial:   []machinev1beta1.Condition{newCond("A", "False", "R")},
		meanwhile: func(s *machinev1beta1.MachineStatus) { s.Conditions = append(s.Conditions, foreign) },
		change:    func(s *machinev1beta1.MachineStatus) { s.Phase = ptr.To("Running") },
		want:      []string{"A/False", "Synchronized/True"},
		// One patch: the foreign write is not a conflict.
		wantPatches: 1,
	}, {
		name:      "first conditions: the lock fails, re-read and retried",
		meanwhile: func(s *machinev1beta1.MachineStatus) { s.Conditions = []machinev1beta1.Condition{foreign} },
		change: func(s *machinev1beta1.MachineStatus) {
			s.Conditions = []machinev1beta1.Condition{newCond("A", "True", "R")}
		},
		want:        []string{"Synchronized/True", "A/True"},
		wantPatches: 2, wantGets: 1,
	}, {
		name:    "a guard fails (the list was reordered): re-read and retried",
		initial: []machinev1beta1.Condition{newCond("A", "False", "R"), newCond("B", "False", "R")},
		meanwhile: func(s *machinev1beta1.MachineStatus) {
			s.Conditions = []machinev1beta1.Condition{s.Conditions[1], foreign}
		},
		change:      func(s *machinev1beta1.MachineStatus) { s.Conditions[1] = newCond("B", "True", "R") },
		want:        []string{"B/True", "Synchronized/True"},
		wantPatches: 2, wantGets: 1,
	}}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "m" + string(rune('a'+i))}}
			if err := env.Client.Create(ctx, m); err != nil {
				t.Fatal(err)
			}
			key := client.ObjectKeyFromObject(m)
			if tc.initial != nil {
				writeStatus(t, ctx, key, func(s *machinev1beta1.MachineStatus) { s.Conditions = tc.initial })
			}
			base := &machinev1beta1.Machine{}
			if err := env.Client.Get(ctx, key, base); err != nil {
				t.Fatal(err)
			}
			writeStatus(t, ctx, key, tc.meanwhile)

			desired := base.DeepCopy()
			tc.change(&desired.Status)
			counter.Reset()
			if err := Status(ctx, c, c, base, desired); err != nil {
				t.Fatal(err)
			}
			if p, g := counter.Count(http.MethodPatch), counter.Count(applytest.VerbGet); p != tc.wantPatches || g != tc.wantGets {
				t.Errorf("requests: %d patches, %d gets; want %d, %d (%s)", p, g, tc.wantPatches, tc.wantGets, counter)
			}
			got := &machinev1beta1.Machine{}
			if err := env.Client.Get(ctx, key, got); err != nil {
				t.Fatal(err)
			}
			if g := conditionTypes(got); len(g) != len(tc.want) || !equalStrings(g, tc.want) {
				t.Errorf("conditions %v, want %v", g, tc.want)
			}
			if desired.ResourceVersion != got.ResourceVersion {
				t.Errorf("desired holds resourceVersion %s, the server %s", desired.ResourceVersion, got.ResourceVersion)
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

// A key the controller drops from an object field (here providerStatus) is
// gone on the server after the merge patch, not merged back.
func TestStatusRemovesNestedKeys(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "patch-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "nested"}}
	if err := env.Client.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(m)
	writeStatus(t, ctx, key, func(s *machinev1beta1.MachineStatus) {
		s.ProviderStatus = &runtime.RawExtension{Raw: []byte(`{"instanceId":"i-1","instanceState":"running"}`)}
	})
	base := &machinev1beta1.Machine{}
	if err := env.Client.Get(ctx, key, base); err != nil {
		t.Fatal(err)
	}
	desired := base.DeepCopy()
	desired.Status.ProviderStatus = &runtime.RawExtension{Raw: []byte(`{"instanceState":"terminated"}`)}
	if err := Status(ctx, env.Client, env.Client, base, desired); err != nil {
		t.Fatal(err)
	}
	got := &machinev1beta1.Machine{}
	if err := env.Client.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	if s := string(got.Status.ProviderStatus.Raw); s != `{"instanceState":"terminated"}` {
		t.Errorf("providerStatus %s, want {\"instanceState\":\"terminated\"}", s)
	}
}

// On a retry the object is re-read; the foreign condition it holds must be
// written back exactly as read, not mixed with the controller's own (a
// decoder filling a reused object keeps the fields the server left out,
// such as an empty message or severity).
func TestStatusRetryKeepsForeignConditionIntact(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "patch-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "retry"}}
	if err := env.Client.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(m)
	own := func(status string) machinev1beta1.Condition {
		c := newCond("A", status, "R")
		c.Message = "the controller's message"
		c.Severity = machinev1beta1.ConditionSeverityWarning
		return c
	}
	writeStatus(t, ctx, key, func(s *machinev1beta1.MachineStatus) { s.Conditions = []machinev1beta1.Condition{own("False")} })
	base := &machinev1beta1.Machine{}
	if err := env.Client.Get(ctx, key, base); err != nil {
		t.Fatal(err)
	}
	// Another writer puts its condition (no message, no severity) first, so
	// the guard of the controller's patch fails and Status re-reads.
	writeStatus(t, ctx, key, func(s *machinev1beta1.MachineStatus) {
		s.Conditions = []machinev1beta1.Condition{newCond("Synchronized", "True", "Sync"), s.Conditions[0]}
	})
	desired := base.DeepCopy()
	desired.Status.Conditions = []machinev1beta1.Condition{own("True")}
	if err := Status(ctx, env.Client, env.Client, base, desired); err != nil {
		t.Fatal(err)
	}
	got := &machinev1beta1.Machine{}
	if err := env.Client.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Conditions) != 2 {
		t.Fatalf("conditions %v, want Synchronized and A", conditionTypes(got))
	}
	if f := got.Status.Conditions[0]; f.Type != "Synchronized" || f.Message != "" || f.Severity != "" || f.Reason != "Sync" {
		t.Errorf("foreign condition written back as %+v, want it as the other writer left it (no message, no severity)", f)
	}
	if a := got.Status.Conditions[1]; a.Type != "A" || a.Status != corev1.ConditionTrue {
		t.Errorf("own condition %+v, want A True", a)
	}
}

// SetStatus leaves obj as the server returned it, or unchanged after an
// error, and reports a deleted object as NotFound.
func TestSetStatus(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "patch-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: ns.Name}}
	if err := env.Client.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	created := m.ResourceVersion
	if err := SetStatus(ctx, env.Client, nil, m, func(m *machinev1beta1.Machine) { m.Status.Phase = ptr.To("Running") }); err != nil {
		t.Fatal(err)
	}
	if m.ResourceVersion == created || m.Status.Phase == nil || *m.Status.Phase != "Running" {
		t.Errorf("after SetStatus obj has resourceVersion %s (created %s), phase %v; want the server's object with phase Running", m.ResourceVersion, created, m.Status.Phase)
	}
	got := &machinev1beta1.Machine{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(m), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase == nil || *got.Status.Phase != "Running" {
		t.Errorf("phase on the server %v, want Running", got.Status.Phase)
	}
	if err := env.Client.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	if err := SetStatus(ctx, env.Client, nil, m, func(m *machinev1beta1.Machine) { m.Status.Phase = ptr.To("Failed") }); !apierrors.IsNotFound(err) {
		t.Errorf("SetStatus on a deleted object: %v, want NotFound", err)
	}
	if *m.Status.Phase != "Running" {
		t.Errorf("a failed SetStatus changed obj's phase to %s", *m.Status.Phase)
	}
}
