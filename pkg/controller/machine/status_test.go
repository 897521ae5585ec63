package machine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
)

// foreignWriter, once armed, writes a condition of its own and nodelink's
// nodeRef on the server right before the next status write the controller
// sends: the controller's copy (its base) has neither.
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

func (w *foreignWriter) intercept(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	w.mu.Lock()
	armed := w.armed
	w.armed = false
	w.mu.Unlock()
	if u, ok := obj.(interface{ GetName() string }); ok && sub == "status" && armed {
		w.mu.Lock()
		w.writes++
		live := &machinev1beta1.Machine{}
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: obj.(interface{ GetNamespace() string }).GetNamespace(), Name: u.GetName()}, live)
		if err == nil {
			live.Status.Conditions = conditions.Set(live.Status.Conditions,
				conditions.New(foreignCondition, corev1.ConditionTrue, "Synced", "", w.message()), time.Now())
			live.Status.NodeRef = &corev1.ObjectReference{Kind: "Node", Name: "node-" + u.GetName()}
			err = env.Client.Status().Update(ctx, live)
		}
		w.mu.Unlock()
		if err != nil {
			w.t.Errorf("foreign write: %v", err)
		}
	}
	return c.Status().Apply(ctx, obj, opts...)
}

// A condition and a nodeRef other writers set between the controller's read
// and its status write survive the writes that change conditions (pass 1
// adds the first ones, pass 2 changes one), with no conflict. Breaks if: the
// controller's apply sent the whole conditions list or the nodeRef it read
// (a field manager owning what it did not decide), or wrote under a lock.
func TestStatusKeepsForeignCondition(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	w := &foreignWriter{t: t}
	inner, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	f.r.opts.Client = interceptor.NewClient(inner, interceptor.Funcs{SubResourceApply: w.intercept})
	f.act.Set(func(a *fakeActuator) {
		a.CreateSetsInstance = true
		a.ProviderID = "test://" + f.ns + "/m1"
		a.Addresses = []string{"10.0.0.7"}
	})
	m := f.machine("m1")
	f.mustReconcile(m) // Create: the status waits for the nodeRef

	// Each pass changes conditions (the first adds them, with
	// InstanceExists=True, the nodeRef landing meanwhile; the second, Running
	// as the nodeRef is there) and must keep the ones written meanwhile.
	for pass, phase := range []string{machinev1beta1.PhaseProvisioned, machinev1beta1.PhaseRunning} {
		w.arm()
		f.mustReconcile(m)
		got := f.mustGet(m)
		wantPhase(t, got, phase)
		if w.writes != pass+1 {
			t.Fatalf("pass %d: the foreign writer ran %d times", pass+1, w.writes)
		}
		wantCondition(t, got, foreignCondition, corev1.ConditionTrue, "Synced", w.message())
		if got.Status.NodeRef == nil || got.Status.NodeRef.Name != "node-m1" {
			t.Errorf("pass %d: nodeRef = %+v, want nodelink's", pass+1, got.Status.NodeRef)
		}
	}
	got := f.mustGet(m)
	wantCondition(t, got, InstanceExistsCondition, corev1.ConditionTrue, ReasonInstanceExists)
	// The controller's field manager owns its fields, never nodelink's nodeRef.
	found := false
	for _, e := range got.ManagedFields {
		if e.Manager != ControllerName || e.FieldsV1 == nil {
			continue
		}
		found = true
		raw := e.FieldsV1.GetRawString()
		if e.Operation != metav1.ManagedFieldsOperationApply || strings.Contains(raw, "f:nodeRef") || !strings.Contains(raw, "f:phase") {
			t.Errorf("the machine controller's entry: %s %s, want an apply owning phase, not nodeRef", e.Operation, raw)
		}
	}
	if !found {
		t.Errorf("no managedFields entry of %s: %+v", ControllerName, got.ManagedFields)
	}
}
