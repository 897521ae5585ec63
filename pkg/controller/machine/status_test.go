package machine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
)

// foreignWriter, once armed, writes a condition of its own on the server
// right before the next status patch the controller sends: the controller's
// copy (its base) does not have it.
type foreignWriter struct {
	t      *testing.T
	mu     sync.Mutex
	armed  bool
	writes int
}

func (w *foreignWriter) arm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = true
}

const foreignCondition machinev1beta1.ConditionType = "Synchronized"

func (w *foreignWriter) message() string { return fmt.Sprintf("write %d", w.writes) }

func (w *foreignWriter) intercept(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
	w.mu.Lock()
	armed := w.armed
	w.armed = false
	w.mu.Unlock()
	if m, ok := obj.(*machinev1beta1.Machine); ok && sub == "status" && armed {
		w.mu.Lock()
		w.writes++
		live := &machinev1beta1.Machine{}
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(m), live)
		if err == nil {
			live.Status.Conditions = conditions.Set(live.Status.Conditions,
				conditions.New(foreignCondition, corev1.ConditionTrue, "Synced", "", w.message()), time.Now())
			err = env.Client.Status().Update(ctx, live)
		}
		w.mu.Unlock()
		if err != nil {
			w.t.Errorf("foreign write: %v", err)
		}
	}
	return c.Status().Patch(ctx, obj, p, opts...)
}

// A condition another writer sets between the controller's read and its
// status write survives the writes that change conditions (pass 1 adds the
// first ones, pass 2 changes one).
func TestStatusKeepsForeignCondition(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	w := &foreignWriter{t: t}
	inner, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	f.r.Client = interceptor.NewClient(inner, interceptor.Funcs{SubResourcePatch: w.intercept})
	f.act.Set(func(a *fakeActuator) {
		a.CreateSetsInstance = true
		a.ProviderID = "test://" + f.ns + "/m1"
		a.Addresses = []string{"10.0.0.7"}
	})
	m := f.machine("m1")

	// Each pass changes conditions (the first adds them, with
	// InstanceExists=True; the second, Running once nodelink set the
	// nodeRef) and must keep the one written meanwhile.
	for pass, phase := range []string{machinev1beta1.PhaseProvisioned, machinev1beta1.PhaseRunning} {
		if pass == 1 {
			live := f.mustGet(m)
			live.Status.NodeRef = &corev1.ObjectReference{Kind: "Node", Name: "node-m1"}
			if err := env.Client.Status().Update(f.ctx, live); err != nil {
				t.Fatal(err)
			}
		}
		w.arm()
		f.mustReconcile(m)
		got := f.mustGet(m)
		wantPhase(t, got, phase)
		if w.writes != pass+1 {
			t.Fatalf("pass %d: the foreign writer ran %d times", pass+1, w.writes)
		}
		wantCondition(t, got, foreignCondition, corev1.ConditionTrue, "Synced", w.message())
	}
	wantCondition(t, f.mustGet(m), InstanceExistsCondition, corev1.ConditionTrue, ReasonInstanceExists)
}

// After Create, the status write (Provisioned, addresses) goes before the
// providerID patch: a Machine's first status write is under an optimistic
// lock, and nodelink, which matches a Machine by providerID, would otherwise
// write its nodeRef in between and make it conflict. Breaks if:
// callProvider patched spec.providerID right away again.
func TestStatusWrittenBeforeProviderID(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	inner, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	var mu sync.Mutex
	f.r.Client = interceptor.NewClient(inner, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			mu.Lock()
			order = append(order, "patch")
			mu.Unlock()
			return c.Patch(ctx, obj, p, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			mu.Lock()
			order = append(order, sub)
			mu.Unlock()
			return c.Status().Patch(ctx, obj, p, opts...)
		},
	})
	f.act.Set(func(a *fakeActuator) {
		a.CreateSetsInstance = true
		a.ProviderID = "test://" + f.ns + "/m1"
		a.Addresses = []string{"10.0.0.7"}
	})
	m := f.machine("m1")
	f.mustReconcile(m)
	// finalizer, status, providerID
	if fmt.Sprint(order) != "[patch status patch]" {
		t.Errorf("write order = %v, want [patch status patch] (finalizer, status, providerID)", order)
	}
	got := f.mustGet(m)
	wantPhase(t, got, machinev1beta1.PhaseProvisioned)
	if got.Spec.ProviderID == nil || *got.Spec.ProviderID != "test://"+f.ns+"/m1" {
		t.Errorf("providerID = %v", got.Spec.ProviderID)
	}
}
