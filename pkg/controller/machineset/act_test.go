package machineset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/machinenode"
	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
)

// fakeReconciler returns a Reconciler over a fake client holding objs (with
// the controller's indexes) and the interceptors funcs.
func fakeReconciler(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) (*Reconciler, client.Client, *recorder) {
	t.Helper()
	c := fake.NewClientBuilder().
		WithScheme(scheme.New()).
		WithObjects(objs...).
		WithStatusSubresource(&machinev1beta1.MachineSet{}, &machinev1beta1.Machine{}).
		WithIndex(&machinev1beta1.Machine{}, IndexMachineController, machineControllerIndex).
		WithIndex(&machinev1beta1.Machine{}, machinenode.NodeRefNameField, func(o client.Object) []string {
			m := o.(*machinev1beta1.Machine)
			if m.Status.NodeRef == nil {
				return nil
			}
			return []string{m.Status.NodeRef.Name}
		}).
		WithInterceptorFuncs(funcs).
		Build()
	rec := &recorder{}
	r := NewReconciler(Options{Client: c, APIReader: c, Recorder: rec, MaxConcurrentDeletes: 3})
	return r, c, rec
}

// TestSlowStartStopsAtFailingBatch: batches 1, 2, 4; the 4th Create fails,
// so the batch of 4 completes and nothing more is attempted.
func TestSlowStartStopsAtFailingBatch(t *testing.T) {
	var calls atomic.Int32
	funcs := interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if calls.Add(1) == 4 {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "machines"}, "", errors.New("quota"))
		}
		return c.Create(ctx, obj, opts...)
	}}
	ms := testMachineSet(20)
	r, c, rec := fakeReconciler(t, funcs, ms)
	key := client.ObjectKeyFromObject(ms)
	err := r.createMachines(context.Background(), ms, 20)
	if err == nil || !strings.Contains(err.Error(), "1 of 4 Machine creations in a batch failed (13 left for later)") {
		t.Errorf("err = %v", err)
	}
	if n := calls.Load(); n != 7 {
		t.Errorf("%d Create calls, want 7 (batches 1+2+4)", n)
	}
	list := &machinev1beta1.MachineList{}
	if err := c.List(context.Background(), list); err != nil || len(list.Items) != 6 {
		t.Fatalf("%d Machines (%v), want 6", len(list.Items), err)
	}
	if creates, _ := r.expectations.Pending(key); creates != 6 {
		t.Errorf("pending creates = %d, want 6 (the failed one is not expected)", creates)
	}
	for i := range list.Items {
		r.expectations.CreationObserved(key, list.Items[i].Name)
	}
	if ok, _ := r.expectations.Satisfied(key); !ok {
		t.Error("expectations not satisfied after observing every created Machine")
	}
	if n := len(rec.find(EventFailedCreate)); n != 1 {
		t.Errorf("%d FailedCreate events, want 1", n)
	}
	if n := len(rec.find(EventSuccessfulCreate)); n != 6 {
		t.Errorf("%d SuccessfulCreate events, want 6", n)
	}
}

// TestDeleteConcurrencyIsBounded: never more than MaxConcurrentDeletes
// Deletes in flight; a failure is reported and its expectation dropped.
func TestDeleteConcurrencyIsBounded(t *testing.T) {
	var inFlight, peak atomic.Int32
	funcs := interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond) // API latency, so calls overlap
		if obj.GetName() == "m07" {
			return apierrors.NewInternalError(errors.New("etcd hiccup"))
		}
		return c.Delete(ctx, obj, opts...)
	}}
	ms := testMachineSet(0)
	var objs []client.Object
	var victims []*machinev1beta1.Machine
	for i := range 20 {
		m := mk(fmt.Sprintf("m%02d", i), i, ownedBy("ms-uid"), withLabels("set", "a"))
		objs = append(objs, m)
		victims = append(victims, m)
	}
	r, c, rec := fakeReconciler(t, funcs, append(objs, ms)...)
	err := r.deleteMachines(context.Background(), ms, victims)
	if err == nil || !strings.Contains(err.Error(), "1 of 20 Machine deletions failed") || !strings.Contains(err.Error(), "m07") {
		t.Errorf("err = %v", err)
	}
	if p := peak.Load(); p > 3 || p < 2 {
		t.Errorf("peak concurrent deletes = %d, want 2..3", p)
	}
	list := &machinev1beta1.MachineList{}
	if err := c.List(context.Background(), list); err != nil || len(list.Items) != 1 || list.Items[0].Name != "m07" {
		t.Errorf("left %v (%v), want only m07", list.Items, err)
	}
	if _, deletes := r.expectations.Pending(client.ObjectKeyFromObject(ms)); deletes != 19 {
		t.Errorf("pending deletes = %d, want 19", deletes)
	}
	if n := len(rec.find(EventFailedDelete)); n != 1 {
		t.Errorf("%d FailedDelete events, want 1", n)
	}
}

// TestAdoptRechecksMachineSet: no adoption when the uncached read shows the
// MachineSet replaced or being deleted.
func TestAdoptRechecksMachineSet(t *testing.T) {
	for name, mutate := range map[string]func(*machinev1beta1.MachineSet){
		"replaced": func(ms *machinev1beta1.MachineSet) { ms.UID = "another-uid" },
		"deleting": func(ms *machinev1beta1.MachineSet) {
			ms.Finalizers = []string{"x"}
			ms.DeletionTimestamp = &metav1.Time{Time: t0}
		},
	} {
		t.Run(name, func(t *testing.T) {
			cached := testMachineSet(1)
			fresh := cached.DeepCopy()
			mutate(fresh)
			orphan := mk("orphan", 0, withLabels("set", "a"))
			var patches atomic.Int32
			funcs := interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
				patches.Add(1)
				return c.Patch(ctx, obj, p, opts...)
			}}
			r, _, _ := fakeReconciler(t, funcs, fresh, orphan)
			adopted, err := r.adopt(context.Background(), cached, []*machinev1beta1.Machine{orphan})
			if err == nil || len(adopted) != 0 || patches.Load() != 0 {
				t.Errorf("adopted %v, err %v, %d patches; want an error and no patch", names(adopted), err, patches.Load())
			}
		})
	}
}

// TestAdoptConflictBlocksScaling: an orphan changed since the cache saw it
// (a concurrent owner) is not adopted, and no Machine is created in its place
// during that reconcile.
func TestAdoptConflictBlocksScaling(t *testing.T) {
	ms := testMachineSet(2)
	orphan := mk("orphan", 0, withLabels("set", "a"))
	funcs := interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
		if _, ok := obj.(*machinev1beta1.Machine); ok {
			return apierrors.NewConflict(schema.GroupResource{Resource: "machines"}, obj.GetName(), errors.New("changed"))
		}
		return c.Patch(ctx, obj, p, opts...)
	}, Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		t.Errorf("Create %T during a failed claim", obj)
		return c.Create(ctx, obj, opts...)
	}}
	r, _, _ := fakeReconciler(t, funcs, ms, orphan)
	_, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(ms)})
	if err == nil || !strings.Contains(err.Error(), "adopting Machine orphan") || !strings.Contains(err.Error(), "changed") {
		t.Errorf("err = %v, want the adoption conflict", err)
	}
}

// TestReconcileWithFakeClient: one full pass: adopt, create, status.
func TestReconcileWithFakeClient(t *testing.T) {
	ms := testMachineSet(3)
	ms.Spec.Template.Spec.ProviderSpec.Value = nil
	orphan := mk("orphan", 0, withLabels("set", "a", "extra", "x"))
	r, c, _ := fakeReconciler(t, interceptor.Funcs{}, ms, orphan)
	key := client.ObjectKeyFromObject(ms)
	res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key})
	if err != nil {
		t.Fatal(err)
	}
	list := &machinev1beta1.MachineList{}
	if err := c.List(context.Background(), list); err != nil || len(list.Items) != 3 {
		t.Fatalf("%d Machines (%v), want 3", len(list.Items), err)
	}
	got := &machinev1beta1.MachineSet{}
	if err := c.Get(context.Background(), key, got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Replicas != 1 || got.Status.ObservedGeneration != ms.Generation {
		t.Errorf("status %+v: want replicas 1 (the adopted orphan; creations count once observed)", got.Status)
	}
	// The fake client has no informer: the creations are pending.
	if res.RequeueAfter <= 0 || res.RequeueAfter > DefaultExpectationsTimeout {
		t.Errorf("RequeueAfter = %v, want until the expectations expire", res.RequeueAfter)
	}
	// A second pass with the expectations pending creates nothing more.
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	if err := c.List(context.Background(), list); err != nil || len(list.Items) != 3 {
		t.Fatalf("%d Machines after a second pass (%v), want 3", len(list.Items), err)
	}
	// Gone: expectations are dropped.
	if err := c.Delete(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	if ok, _ := r.expectations.Satisfied(key); !ok {
		t.Error("expectations of a deleted MachineSet kept")
	}
}

// TestNodeToMachineSets maps a Node through Machine nodeRefs and through the
// Node's machine annotation, to controlling MachineSets only.
func TestNodeToMachineSets(t *testing.T) {
	byRef := mk("by-ref", 0, ownedBy("u1"))
	byRef.Status.NodeRef = &corev1.ObjectReference{Name: "node-a"}
	byAnnotation := mk("by-annotation", 0, ownedBy("u2"), nodeless)
	orphan := mk("orphan", 0)
	orphan.Status.NodeRef = &corev1.ObjectReference{Name: "node-a"}
	r, _, _ := fakeReconciler(t, interceptor.Funcs{}, byRef, byAnnotation, orphan)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a",
		Annotations: map[string]string{"machine.openshift.io/machine": "ns/by-annotation"}}}
	var got []string
	for _, req := range r.nodeToMachineSets(context.Background(), node) {
		got = append(got, req.String())
	}
	slices.Sort(got)
	if want := []string{"ns/owner-u1", "ns/owner-u2"}; !slices.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
}

// TestMachineHandlerObservations: events record observations once and
// enqueue the owners.
func TestMachineHandlerObservations(t *testing.T) {
	ms := testMachineSet(1)
	ms.Name = "owner-u1"
	r, _, _ := fakeReconciler(t, interceptor.Funcs{}, ms)
	key := types.NamespacedName{Namespace: "ns", Name: "owner-u1"}
	r.expectations.ExpectCreations(key, "m")
	m := mk("m", 0, ownedBy("u1"))
	r.expectations.ExpectDeletions(key, m.UID)

	q := &fakeQueue{}
	h := r.machineHandler()
	h.Create(context.Background(), createEvent(m), q)
	if c, _ := r.expectations.Pending(key); c != 0 {
		t.Errorf("creation not observed")
	}
	gone := m.DeepCopy()
	gone.DeletionTimestamp = &metav1.Time{Time: t0}
	h.Update(context.Background(), updateEvent(m, gone), q)
	if ok, _ := r.expectations.Satisfied(key); !ok {
		t.Error("deletion not observed from the deletionTimestamp update")
	}
	h.Delete(context.Background(), deleteEvent(gone), q) // duplicate: harmless
	if got := q.keys(); !slices.Equal(got, []string{"ns/owner-u1"}) {
		t.Errorf("queued %v", got)
	}

	// Label change: old owner and the MachineSets selecting the new labels.
	q = &fakeQueue{}
	owned := mk("x", 0, ownedBy("u9"), withLabels("set", "b"))
	released := owned.DeepCopy()
	released.OwnerReferences = nil
	released.Labels = map[string]string{"set": "a", "extra": "x"}
	h.Update(context.Background(), updateEvent(owned, released), q)
	if got := q.keys(); !slices.Equal(got, []string{"ns/owner-u1", "ns/owner-u9"}) {
		t.Errorf("queued %v, want the old owner and the selecting MachineSet", got)
	}
}

type fakeQueue struct {
	queue
	mu    sync.Mutex
	items []reconcile.Request
}

func (q *fakeQueue) Add(r reconcile.Request) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.items = append(q.items, r)
}

func (q *fakeQueue) keys() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []string
	for _, r := range q.items {
		if !slices.Contains(out, r.String()) {
			out = append(out, r.String())
		}
	}
	slices.Sort(out)
	return out
}

func createEvent(o client.Object) event.CreateEvent { return event.CreateEvent{Object: o} }
func updateEvent(o, n client.Object) event.UpdateEvent {
	return event.UpdateEvent{ObjectOld: o, ObjectNew: n}
}
func deleteEvent(o client.Object) event.DeleteEvent { return event.DeleteEvent{Object: o} }

// TestExpectationsCheckedBeforeListing: an observation that arrives after
// the cache was listed must not let that (older) list drive creations.
func TestExpectationsCheckedBeforeListing(t *testing.T) {
	ms := testMachineSet(1)
	key := client.ObjectKeyFromObject(ms)
	var r *Reconciler
	var creates atomic.Int32
	funcs := interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			err := c.List(ctx, list, opts...)
			if _, ok := list.(*machinev1beta1.MachineList); ok {
				// The create event of "x" is handled right after this
				// snapshot (which does not contain "x") was taken.
				r.expectations.CreationObserved(key, "x")
			}
			return err
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			creates.Add(1)
			return c.Create(ctx, obj, opts...)
		},
	}
	r, _, _ = fakeReconciler(t, funcs, ms)
	r.expectations.ExpectCreations(key, "x")
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	if n := creates.Load(); n != 0 {
		t.Errorf("%d creates from a list older than the observations, want 0", n)
	}
}

// TestExpectationsExpiredDuringReconcileRequeue: Creates slower than the
// expectations timeout leave nothing pending when the reconcile ends; it
// requeues at once, since nothing else wakes a controller whose cache does
// not show the Machines (TestFreezeStopsARunawayMachineSet stalled so under
// load). Breaks if: the final check only requeues for pending expectations.
func TestExpectationsExpiredDuringReconcileRequeue(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	funcs := interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		clk.SetTime(clk.Now().Add(2 * time.Second)) // the Create outlasts the timeout
		return c.Create(ctx, obj, opts...)
	}}
	ms := testMachineSet(1)
	r, _, _ := fakeReconciler(t, funcs, ms)
	r.opts.Clock = clk
	r.expectations = NewExpectations(clk, time.Second)
	res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(ms)})
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > time.Second {
		t.Errorf("RequeueAfter = %v, want a requeue at once (the expectations expired during the reconcile)", res.RequeueAfter)
	}
}
