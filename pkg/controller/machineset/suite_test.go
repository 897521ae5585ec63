package machineset

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

var env *testenv.Env

// TestMain starts one API server for the package. MACHINESET_TEST_LOG=1
// shows the controller's logs.
func TestMain(m *testing.M) {
	testenv.MainWith(m, &env, testenv.Options{LogEnv: "MACHINESET_TEST_LOG"})
}

const (
	waitTimeout = 30 * time.Second
	// soon: requeues due within this count as work still to do when a test
	// waits for the controller to settle.
	soon = 10 * time.Second
)

// recorder is the shared fake; find returns the events of reason as "Type Reason MachineSet: note".
type recorder struct{ testenv.Recorder }

func (r *recorder) find(reason string) []string { return r.Find(reason, "") }

// countingClient counts the Machine Create and Delete requests the
// controller sends; beforeStatusPatch (optional) runs before each status
// write (an apply; its object names the MachineSet).
type countingClient struct {
	client.Client
	creates, deletes  atomic.Int64
	beforeStatusPatch func(ctx context.Context, obj client.Object)
}

func (c *countingClient) Status() client.SubResourceWriter {
	if c.beforeStatusPatch == nil {
		return c.Client.Status()
	}
	return hookedStatus{SubResourceWriter: c.Client.Status(), before: c.beforeStatusPatch}
}

type hookedStatus struct {
	client.SubResourceWriter
	before func(ctx context.Context, obj client.Object)
}

func (h hookedStatus) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	if u, ok := obj.(interface {
		GetKind() string
		GetName() string
		GetNamespace() string
	}); ok && u.GetKind() == "MachineSet" {
		h.before(ctx, &machinev1beta1.MachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: u.GetNamespace(), Name: u.GetName()}})
	}
	return h.SubResourceWriter.Apply(ctx, obj, opts...)
}

func (c *countingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if _, ok := obj.(*machinev1beta1.Machine); ok {
		c.creates.Add(1)
	}
	return c.Client.Create(ctx, obj, opts...)
}

func (c *countingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if _, ok := obj.(*machinev1beta1.Machine); ok {
		c.deletes.Add(1)
	}
	return c.Client.Delete(ctx, obj, opts...)
}

// gate holds back the Machine informer while closed: its transform function
// blocks, so neither the cache's store nor the event handlers see Machine
// changes (a cache lagging behind the API server).
type gate struct {
	mu     sync.Mutex
	closed chan struct{} // non-nil while closed; closed when opened
}

func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed == nil {
		g.closed = make(chan struct{})
	}
}

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed != nil {
		close(g.closed)
		g.closed = nil
	}
}

func (g *gate) transform(obj any) (any, error) {
	g.mu.Lock()
	ch := g.closed
	g.mu.Unlock()
	if ch != nil {
		<-ch
	}
	return obj, nil
}

type harnessOptions struct {
	expectationsTimeout time.Duration
	gate                bool
	// env is the API server (default: the package's).
	env *testenv.Env
	// migration turns MachineAPIMigration on.
	migration         bool
	beforeStatusPatch func(ctx context.Context, obj client.Object)
}

// harness runs the controller in its own manager, for one test namespace.
// The test writes through h.c (uncached, not counted).
type harness struct {
	t      *testing.T
	ctx    context.Context
	ns     string
	c      client.Client
	cc     *countingClient
	cached client.Client
	rec    *recorder
	wt     *testenv.WorkTracker
	r      *Reconciler
	gate   *gate
	stopFn func() // stops the running manager
}

func newHarness(t *testing.T, o harnessOptions) *harness {
	t.Helper()
	e := env
	if o.env != nil {
		e = o.env
	}
	h := &harness{
		t:    t,
		ctx:  t.Context(),
		ns:   testenv.CreateNamespace(t, e.Client, "machineset-"),
		c:    e.Client,
		rec:  &recorder{},
		wt:   testenv.NewWorkTracker(),
		gate: &gate{},
	}
	cfg := rest.CopyConfig(e.Config)
	cfg.QPS, cfg.Burst = 500, 1000
	machineCache := cache.ByObject{Namespaces: map[string]cache.Config{h.ns: {}}}
	if o.gate {
		machineCache.Transform = h.gate.transform
	}
	mgr := e.NewManager(t, cfg, cache.Options{ByObject: map[client.Object]cache.ByObject{
		&machinev1beta1.Machine{}:    machineCache,
		&machinev1beta1.MachineSet{}: {Namespaces: map[string]cache.Config{h.ns: {}}},
	}})
	h.cached = mgr.GetClient()
	h.cc = &countingClient{Client: mgr.GetClient(), beforeStatusPatch: o.beforeStatusPatch}
	h.r = NewReconciler(Options{
		Namespace:           h.ns,
		Client:              h.cc,
		Recorder:            h.rec,
		ExpectationsTimeout: o.expectationsTimeout,
		MachineAPIMigration: o.migration,
	})
	testenv.Setup(t, mgr, h.wt, h.r)
	h.stopFn = testenv.StartManager(t, mgr)
	t.Cleanup(h.stop)
	return h
}

func (h *harness) stop() {
	h.gate.open()
	if h.stopFn != nil {
		h.stopFn()
		h.stopFn = nil
	}
}

const kubemarkSpec = `{"apiVersion":"kubemark.machine-api-operator.io/v1alpha1","kind":"KubemarkMachineProviderSpec","cpu":"4","memory":"8Gi"}`

// newMachineSet creates a MachineSet selecting set=<name>.
func (h *harness) newMachineSet(name string, replicas int32, mutate ...func(*machinev1beta1.MachineSet)) *machinev1beta1.MachineSet {
	h.t.Helper()
	ms := &machinev1beta1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name},
		Spec: machinev1beta1.MachineSetSpec{
			Replicas: ptr.To(replicas),
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"set": name}},
		},
	}
	ms.Spec.Template.Labels = map[string]string{"set": name, "role": "worker"}
	ms.Spec.Template.Annotations = map[string]string{"note": "from-template"}
	ms.Spec.Template.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: []byte(kubemarkSpec)}
	ms.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}}
	ms.Spec.Template.Spec.ObjectMeta.Labels = map[string]string{"node-label": "v"}
	for _, f := range mutate {
		f(ms)
	}
	if err := h.c.Create(h.ctx, ms); err != nil {
		h.t.Fatal(err)
	}
	return ms
}

func (h *harness) machineSet(name string) *machinev1beta1.MachineSet {
	h.t.Helper()
	return testenv.Get[machinev1beta1.MachineSet](h.t, h.c, h.ns, name)
}

// updateMachineSet applies f to the current MachineSet and updates it
// (retrying on conflicts); it returns the new generation.
func (h *harness) updateMachineSet(name string, f func(*machinev1beta1.MachineSet)) int64 {
	h.t.Helper()
	var gen int64
	h.eventually("update MachineSet "+name, func() error {
		ms := h.machineSet(name)
		f(ms)
		if err := h.c.Update(h.ctx, ms); err != nil {
			return err
		}
		gen = ms.Generation
		return nil
	})
	return gen
}

// poke changes the MachineSet's spec (minReadySeconds+1) and waits until the
// controller reconciled the new generation: a reconcile provably ran.
func (h *harness) poke(name string) {
	h.t.Helper()
	gen := h.updateMachineSet(name, func(ms *machinev1beta1.MachineSet) { ms.Spec.MinReadySeconds++ })
	h.eventually("observedGeneration of "+name, func() error {
		if got := h.machineSet(name).Status.ObservedGeneration; got < gen {
			return fmt.Errorf("observedGeneration %d < %d", got, gen)
		}
		return nil
	})
}

// machines lists the Machines of the namespace from the API server (not
// being deleted unless all is set), sorted by name.
func (h *harness) machines(all bool) []*machinev1beta1.Machine {
	h.t.Helper()
	list := &machinev1beta1.MachineList{}
	if err := h.c.List(h.ctx, list, client.InNamespace(h.ns)); err != nil {
		h.t.Fatal(err)
	}
	var out []*machinev1beta1.Machine
	for i := range list.Items {
		if all || list.Items[i].DeletionTimestamp == nil {
			out = append(out, &list.Items[i])
		}
	}
	slices.SortFunc(out, func(a, b *machinev1beta1.Machine) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ownedBy returns the Machines (not being deleted) ms controls.
func (h *harness) ownedBy(ms *machinev1beta1.MachineSet) []*machinev1beta1.Machine {
	var out []*machinev1beta1.Machine
	for _, m := range h.machines(false) {
		if ref := metav1.GetControllerOf(m); ref != nil && ref.UID == ms.UID {
			out = append(out, m)
		}
	}
	return out
}

func (h *harness) machine(name string) *machinev1beta1.Machine {
	h.t.Helper()
	return testenv.Get[machinev1beta1.Machine](h.t, h.c, h.ns, name)
}

// patchMachine applies f to a Machine with a merge patch (status when
// status is set).
func (h *harness) patchMachine(name string, status bool, f func(*machinev1beta1.Machine)) {
	h.t.Helper()
	m := h.machine(name)
	base := m.DeepCopy()
	f(m)
	var err error
	if status {
		err = h.c.Status().Patch(h.ctx, m, client.MergeFrom(base))
	} else {
		err = h.c.Patch(h.ctx, m, client.MergeFrom(base))
	}
	if err != nil {
		h.t.Fatal(err)
	}
}

// waitOwned waits until ms controls exactly n Machines (not being deleted).
func (h *harness) waitOwned(ms *machinev1beta1.MachineSet, n int) []*machinev1beta1.Machine {
	h.t.Helper()
	var got []*machinev1beta1.Machine
	h.eventually(fmt.Sprintf("%d Machines owned by %s", n, ms.Name), func() error {
		got = h.ownedBy(ms)
		if len(got) != n {
			return fmt.Errorf("%d Machines: %v", len(got), names(got))
		}
		return nil
	})
	return got
}

// waitStatus waits until check accepts the MachineSet's status.
func (h *harness) waitStatus(name string, check func(machinev1beta1.MachineSetStatus) error) {
	h.t.Helper()
	h.eventually("status of "+name, func() error { return check(h.machineSet(name).Status) })
}

func replicasAre(replicas, ready, available int32) func(machinev1beta1.MachineSetStatus) error {
	return func(st machinev1beta1.MachineSetStatus) error {
		if st.Replicas != replicas || st.ReadyReplicas != ready || st.AvailableReplicas != available {
			return fmt.Errorf("replicas/ready/available = %d/%d/%d, want %d/%d/%d",
				st.Replicas, st.ReadyReplicas, st.AvailableReplicas, replicas, ready, available)
		}
		return nil
	}
}

func (h *harness) eventually(what string, f func() error) {
	h.t.Helper()
	poll.Eventually(h.t, waitTimeout, what, poll.Check(f))
}

// whenSettled waits until the controller has handled every change made so
// far (its cache has the test's Machines and MachineSets as the API server
// has them, and no reconcile is running or due soon), then checks f.
func (h *harness) whenSettled(what string, f func() error) {
	h.t.Helper()
	h.wt.Settle(h.t, waitTimeout, soon,
		testenv.CaughtUp(h.c, h.cached, &machinev1beta1.MachineList{}, client.InNamespace(h.ns)),
		testenv.CaughtUp(h.c, h.cached, &machinev1beta1.MachineSetList{}, client.InNamespace(h.ns)))
	if err := f(); err != nil {
		h.t.Fatalf("%s: %v", what, err)
	}
}

// createNode creates a Node named after the test with the given Ready
// status and transition time; it is deleted when the test ends.
func (h *harness) createNode(suffix string, ready corev1.ConditionStatus, since time.Time) string {
	h.t.Helper()
	testenv.CreateNode(h.t, h.c, h.ns+"-"+suffix, ready, since)
	return h.ns + "-" + suffix
}

func (h *harness) setNodeReady(name string, ready corev1.ConditionStatus, since time.Time) {
	h.t.Helper()
	testenv.MustSetNodeReady(h.t, h.c, name, ready, since)
}

func counterValue(c prometheus.Counter) float64 {
	d := &dto.Metric{}
	if err := c.Write(d); err != nil {
		return -1
	}
	return d.GetCounter().GetValue()
}
