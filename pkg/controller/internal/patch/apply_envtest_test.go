package patch

import (
	"context"
	"net/http"
	"slices"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/apply/applytest"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// Two writers of one Machine, as the machine controller and nodelink are.
var (
	controllerFields = Fields{Manager: "test-controller", Keys: []string{"phase", "providerStatus"}, Conditions: []string{"A", "B"}}
	linkFields       = Fields{Manager: "test-nodelink", Keys: []string{"nodeRef"}, Conditions: []string{"L"}}
)

func newCond(t, status string) machinev1beta1.Condition {
	return machinev1beta1.Condition{Type: machinev1beta1.ConditionType(t), Status: corev1.ConditionStatus(status), Reason: "R",
		LastTransitionTime: metav1.Now().Rfc3339Copy()}
}

func conditionTypes(m *machinev1beta1.Machine) []string {
	var out []string
	for _, c := range m.Status.Conditions {
		out = append(out, string(c.Type)+"/"+string(c.Status))
	}
	slices.Sort(out)
	return out
}

type fixture struct {
	t       *testing.T
	ctx     context.Context
	c       client.Client
	counter *applytest.CountingTransport
	key     client.ObjectKey
}

func newFixture(t *testing.T) *fixture {
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
	m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "m"}}
	if err := env.Client.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, ctx: ctx, c: c, counter: counter, key: client.ObjectKeyFromObject(m)}
}

func (f *fixture) get() *machinev1beta1.Machine {
	f.t.Helper()
	m := &machinev1beta1.Machine{}
	if err := env.Client.Get(f.ctx, f.key, m); err != nil {
		f.t.Fatal(err)
	}
	return m
}

// write applies fs's fields of the status change gives the Machine as read, and returns the patches sent.
func (f *fixture) write(read *machinev1beta1.Machine, fs Fields, change func(*machinev1beta1.MachineStatus)) int {
	f.t.Helper()
	f.counter.Reset()
	if err := SetStatus(f.ctx, f.c, read, func(m *machinev1beta1.Machine) { change(&m.Status) }, fs); err != nil {
		f.t.Fatal(err)
	}
	return f.counter.Count(http.MethodPatch)
}

// Each writer's apply, sent on a copy read before the other's write, keeps the other's fields and conditions,
// removes only what it owned, and costs one request (none when its fields are as they should be). Breaks if:
// ApplyStatus sent the fields it does not own (the other's condition or nodeRef as read: stale, taken over),
// or compared the whole status (a write at rest).
func TestApplyStatusMergesWriters(t *testing.T) {
	f := newFixture(t)
	read := f.get()
	stale := read.DeepCopy()
	if n := f.write(read, controllerFields, func(s *machinev1beta1.MachineStatus) {
		s.Phase = ptr.To("Provisioned")
		s.Conditions = []machinev1beta1.Condition{newCond("A", "False"), newCond("B", "True")}
	}); n != 1 {
		t.Errorf("the controller's first write: %d patches, want 1", n)
	}
	// nodelink writes on a copy read before that: it has none of the controller's fields.
	if n := f.write(stale, linkFields, func(s *machinev1beta1.MachineStatus) {
		s.NodeRef = &corev1.ObjectReference{Kind: "Node", Name: "n1"}
		s.Conditions = append(s.Conditions, newCond("L", "True"))
	}); n != 1 {
		t.Errorf("nodelink's write: %d patches, want 1", n)
	}
	got := f.get()
	if want := []string{"A/False", "B/True", "L/True"}; !slices.Equal(conditionTypes(got), want) {
		t.Errorf("conditions %v, want %v", conditionTypes(got), want)
	}
	if ptr.Deref(got.Status.Phase, "") != "Provisioned" || got.Status.NodeRef == nil {
		t.Errorf("phase %v, nodeRef %v: one writer removed the other's", got.Status.Phase, got.Status.NodeRef)
	}

	// The controller, on its copy from before nodelink's write, changes A and drops B.
	if n := f.write(read, controllerFields, func(s *machinev1beta1.MachineStatus) {
		s.Phase = ptr.To("Running")
		s.Conditions = []machinev1beta1.Condition{s.Conditions[0]}
		s.Conditions[0].Status = corev1.ConditionTrue
	}); n != 1 {
		t.Errorf("the controller's second write: %d patches, want 1", n)
	}
	got = f.get()
	if want := []string{"A/True", "L/True"}; !slices.Equal(conditionTypes(got), want) {
		t.Errorf("conditions %v, want %v (B dropped by its writer alone)", conditionTypes(got), want)
	}
	if got.Status.NodeRef == nil || got.Status.NodeRef.Name != "n1" {
		t.Errorf("nodeRef %v, want nodelink's", got.Status.NodeRef)
	}
	if read.ResourceVersion != got.ResourceVersion {
		t.Errorf("the written object holds resourceVersion %s, the server %s", read.ResourceVersion, got.ResourceVersion)
	}

	// At rest: the fields each owns are as they should be, whatever else changed.
	for _, fs := range []Fields{controllerFields, linkFields} {
		if n := f.write(f.get(), fs, func(*machinev1beta1.MachineStatus) {}); n != 0 {
			t.Errorf("%s at rest: %d patches, want 0", fs.Manager, n)
		}
	}
}

// A key the writer drops from an object field it owns (providerStatus) is gone on the server, not merged
// back. Breaks if: the apply sent providerStatus merged with what the server had.
func TestApplyStatusRemovesNestedKeys(t *testing.T) {
	f := newFixture(t)
	read := f.get()
	f.write(read, controllerFields, func(s *machinev1beta1.MachineStatus) {
		s.ProviderStatus = &runtime.RawExtension{Raw: []byte(`{"instanceId":"i-1","instanceState":"running"}`)}
	})
	f.write(read, controllerFields, func(s *machinev1beta1.MachineStatus) {
		s.ProviderStatus = &runtime.RawExtension{Raw: []byte(`{"instanceState":"terminated"}`)}
	})
	if s := string(f.get().Status.ProviderStatus.Raw); s != `{"instanceState":"terminated"}` {
		t.Errorf("providerStatus %s, want {\"instanceState\":\"terminated\"}", s)
	}
}

// SetStatus with two writers' fields sends one apply per writer whose fields change, in order. Breaks if: a
// later writer's apply were computed from the server's answer to the earlier one (its change lost).
func TestSetStatusTwoWriters(t *testing.T) {
	f := newFixture(t)
	f.counter.Reset()
	read := f.get()
	if err := SetStatus(f.ctx, f.c, read, func(m *machinev1beta1.Machine) {
		m.Status.Phase = ptr.To("Running")
		m.Status.NodeRef = &corev1.ObjectReference{Kind: "Node", Name: "n1"}
	}, linkFields, controllerFields); err != nil {
		t.Fatal(err)
	}
	if n := f.counter.Count(http.MethodPatch); n != 2 {
		t.Errorf("%d patches, want 2", n)
	}
	got := f.get()
	if ptr.Deref(got.Status.Phase, "") != "Running" || got.Status.NodeRef == nil {
		t.Errorf("status %+v: a writer's change was lost", got.Status)
	}
	if read.ResourceVersion != got.ResourceVersion {
		t.Errorf("the written object holds resourceVersion %s, the server %s", read.ResourceVersion, got.ResourceVersion)
	}
}
