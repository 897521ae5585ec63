package machine

import (
	"context"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/authority"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/authority/authoritytest"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/apply/applytest"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
)

// authorityFixture is a reconciler against an API server whose Machine CRD
// has the authoritativeAPI fields (TechPreviewNoUpgrade).
type authorityFixture struct {
	t       *testing.T
	ctx     context.Context
	env     *testenv.Env
	counter *applytest.CountingTransport
	act     *fakeActuator
}

func newAuthorityFixture(t *testing.T, e *testenv.Env) *authorityFixture {
	t.Helper()
	f := &authorityFixture{t: t, ctx: ctrl.LoggerInto(context.Background(), ctrl.Log.WithName(t.Name())), env: e,
		counter: applytest.NewCountingTransport()}
	f.act = &fakeActuator{Groups: []string{testGroup}}
	return f
}

// TestAuthoritativeAPI runs the authoritativeAPI cases against one API
// server with the TechPreviewNoUpgrade CRDs.
func TestAuthoritativeAPI(t *testing.T) {
	t.Parallel()
	opts, err := authoritytest.Options()
	if err != nil {
		t.Fatal(err)
	}
	e := testenv.Start(t, opts)
	for name, run := range map[string]func(*testing.T, *testenv.Env){
		"PausesAndResumes": testAuthoritativeAPIPausesAndResumes,
		"PausedDeletion":   testAuthoritativeAPIPausedDeletion,
		"GateOff":          testAuthoritativeAPIGateOff,
		"StaleRead":        testAuthoritativeAPIStaleRead,
	} {
		t.Run(name, func(t *testing.T) { run(t, e) })
	}
}

func (f *authorityFixture) reconciler(gate bool) *Reconciler {
	f.t.Helper()
	cfg := f.counter.Install(f.env.Config)
	c, err := client.New(cfg, client.Options{Scheme: f.env.Scheme})
	if err != nil {
		f.t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	return NewReconciler(Options{Client: c, APIReader: c, Actuator: f.act, Recorder: &recorder{}, KubeClient: kube, MachineAPIMigration: gate})
}

func (f *authorityFixture) machine(name string, spec machinev1beta1.MachineAuthority, mutate ...func(*machinev1beta1.Machine)) *machinev1beta1.Machine {
	f.t.Helper()
	m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	m.Spec.ProviderSpec = providerSpec()
	m.Spec.AuthoritativeAPI = spec
	for _, mu := range mutate {
		mu(m)
	}
	if err := f.env.Client.Create(f.ctx, m); err != nil {
		f.t.Fatal(err)
	}
	return m
}

func (f *authorityFixture) get(m *machinev1beta1.Machine) *machinev1beta1.Machine {
	f.t.Helper()
	got := &machinev1beta1.Machine{}
	if err := f.env.Client.Get(f.ctx, client.ObjectKeyFromObject(m), got); err != nil {
		f.t.Fatal(err)
	}
	return got
}

// setAuthority sets status.authoritativeAPI as the migration controller does.
func (f *authorityFixture) setAuthority(m *machinev1beta1.Machine, a machinev1beta1.MachineAuthority) {
	f.t.Helper()
	got := f.get(m)
	got.Status.AuthoritativeAPI = a
	if err := f.env.Client.Status().Update(f.ctx, got); err != nil {
		f.t.Fatal(err)
	}
}

func reconcileOnce(t *testing.T, ctx context.Context, r *Reconciler, m *machinev1beta1.Machine) {
	t.Helper()
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(m)}); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
}

func wantPaused(t *testing.T, m *machinev1beta1.Machine, status corev1.ConditionStatus, reason, message string) {
	t.Helper()
	c := wantCondition(t, m, authority.PausedCondition, status, reason)
	if c.Message != message {
		t.Errorf("Paused message %q, want %q", c.Message, message)
	}
}

// With MachineAPIMigration on, a Machine handed to Cluster API is left
// alone (status.authoritativeAPI copied from spec first, then Paused=True,
// no provider call, no finalizer, nothing written at rest), stays paused while
// migrating, and is reconciled again once handed back (Paused=False).
func testAuthoritativeAPIPausesAndResumes(t *testing.T, e *testenv.Env) {
	f := newAuthorityFixture(t, e)
	r := f.reconciler(true)
	m := f.machine("handed-over", machinev1beta1.MachineAuthorityClusterAPI)

	reconcileOnce(t, f.ctx, r, m)
	got := f.get(m)
	if got.Status.AuthoritativeAPI != machinev1beta1.MachineAuthorityClusterAPI {
		t.Fatalf("status.authoritativeAPI = %q, want ClusterAPI copied from spec", got.Status.AuthoritativeAPI)
	}
	reconcileOnce(t, f.ctx, r, m)
	got = f.get(m)
	wantPaused(t, got, corev1.ConditionTrue, "AuthoritativeAPINotMachineAPI", "The AuthoritativeAPI status is set to 'ClusterAPI'")
	if len(got.Finalizers) != 0 || got.Status.Phase != nil || len(got.Status.Conditions) != 1 {
		t.Errorf("a paused Machine was touched: finalizers %v, phase %v, conditions %+v", got.Finalizers, got.Status.Phase, got.Status.Conditions)
	}
	wantCalls(t, f.act, map[string]int{})

	f.counter.Reset()
	reconcileOnce(t, f.ctx, r, m)
	if w := f.counter.Writes(); w != 0 {
		t.Errorf("a paused Machine at rest: %d writes %v", w, f.counter.WriteRequests())
	}

	f.setAuthority(m, machinev1beta1.MachineAuthorityMigrating)
	reconcileOnce(t, f.ctx, r, m)
	wantPaused(t, f.get(m), corev1.ConditionTrue, "AuthoritativeAPINotMachineAPI", "The AuthoritativeAPI status is set to 'Migrating'")
	wantCalls(t, f.act, map[string]int{})

	f.setAuthority(m, machinev1beta1.MachineAuthorityMachineAPI)
	reconcileOnce(t, f.ctx, r, m)
	got = f.get(m)
	wantPaused(t, got, corev1.ConditionFalse, "AuthoritativeAPIMachineAPI", "The AuthoritativeAPI status is set to 'MachineAPI'")
	if c := conditions.Get(got.Status.Conditions, authority.PausedCondition); c.Severity != machinev1beta1.ConditionSeverityInfo {
		t.Errorf("Paused=False severity %q, want Info", c.Severity)
	}
	wantPhase(t, got, machinev1beta1.PhaseProvisioning)
	if !hasFinalizer(got) {
		t.Error("a Machine handed back got no finalizer")
	}
	wantCalls(t, f.act, map[string]int{opExists: 1, opCreate: 1})
}

// A paused Machine being deleted keeps its finalizer and its instance: the
// authoritative API deletes them.
func testAuthoritativeAPIPausedDeletion(t *testing.T, e *testenv.Env) {
	f := newAuthorityFixture(t, e)
	r := f.reconciler(true)
	m := f.machine("deleted-while-paused", machinev1beta1.MachineAuthorityClusterAPI, func(m *machinev1beta1.Machine) {
		m.Finalizers = []string{machinev1beta1.MachineFinalizer}
	})
	f.setAuthority(m, machinev1beta1.MachineAuthorityClusterAPI)
	if err := f.env.Client.Delete(f.ctx, m); err != nil {
		t.Fatal(err)
	}
	reconcileOnce(t, f.ctx, r, m)
	got := f.get(m)
	if !hasFinalizer(got) {
		t.Error("the finalizer of a paused Machine was removed")
	}
	wantPaused(t, got, corev1.ConditionTrue, "AuthoritativeAPINotMachineAPI", "The AuthoritativeAPI status is set to 'ClusterAPI'")
	wantCalls(t, f.act, map[string]int{})
}

// With the gate off the fields are ignored: a Machine handed to Cluster API
// is provisioned and gets no Paused condition.
func testAuthoritativeAPIGateOff(t *testing.T, e *testenv.Env) {
	f := newAuthorityFixture(t, e)
	r := f.reconciler(false)
	m := f.machine("gate-off", machinev1beta1.MachineAuthorityClusterAPI)
	f.setAuthority(m, machinev1beta1.MachineAuthorityClusterAPI)
	reconcileOnce(t, f.ctx, r, m)
	got := f.get(m)
	wantPhase(t, got, machinev1beta1.PhaseProvisioning)
	if c := conditions.Get(got.Status.Conditions, authority.PausedCondition); c != nil {
		t.Errorf("gate off, yet Paused = %+v", *c)
	}
	wantCalls(t, f.act, map[string]int{opExists: 1, opCreate: 1})
}

// The Paused write of a reconcile that read status.authoritativeAPI before the migration controller changed it
// leaves the migration controller's value: the authority step's apply carries the Paused condition alone (its
// first authoritativeAPI was another field manager's). Breaks if: one field manager applied both (the stale
// Migrating would be forced back over ClusterAPI).
func testAuthoritativeAPIStaleRead(t *testing.T, e *testenv.Env) {
	f := newAuthorityFixture(t, e)
	r := f.reconciler(true)
	m := f.machine("stale-read", machinev1beta1.MachineAuthorityClusterAPI)
	reconcileOnce(t, f.ctx, r, m) // status.authoritativeAPI: ClusterAPI, from spec
	f.setAuthority(m, machinev1beta1.MachineAuthorityMigrating)
	// The reconcile reads Migrating; the migration controller sets ClusterAPI before its Paused write.
	inner, err := client.NewWithWatch(f.env.Config, client.Options{Scheme: f.env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	moved := false
	r.opts.Client = interceptor.NewClient(inner, interceptor.Funcs{
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			if !moved {
				moved = true
				f.setAuthority(m, machinev1beta1.MachineAuthorityClusterAPI)
			}
			return c.Status().Apply(ctx, obj, opts...)
		},
	})
	reconcileOnce(t, f.ctx, r, m)
	got := f.get(m)
	if !moved {
		t.Fatal("no status write: the Paused condition was not written")
	}
	wantPaused(t, got, corev1.ConditionTrue, "AuthoritativeAPINotMachineAPI", "The AuthoritativeAPI status is set to 'Migrating'")
	if got.Status.AuthoritativeAPI != machinev1beta1.MachineAuthorityClusterAPI {
		t.Errorf("status.authoritativeAPI = %q, want the migration controller's ClusterAPI", got.Status.AuthoritativeAPI)
	}
}
