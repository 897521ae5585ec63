package machinedeployment

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machineset"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

var env *testenv.Env

// TestMain starts one API server for the package. MACHINEDEPLOYMENT_TEST_LOG=1
// shows the controllers' logs.
func TestMain(m *testing.M) {
	testenv.MainWith(m, &env, testenv.Options{LogEnv: "MACHINEDEPLOYMENT_TEST_LOG"})
}

const waitTimeout = 60 * time.Second

// recorder is the shared fake; find returns the events of reason as "Reason: note".
type recorder struct{ testenv.Recorder }

func (r *recorder) find(reason string) []string { return r.Find(reason, "") }

func newRecorder() *recorder {
	return &recorder{testenv.Recorder{Format: func(e testenv.Event) string { return e.Reason + ": " + e.Note }}}
}

// harness runs the MachineSet and MachineDeployment controllers for one
// namespace, and a stand-in for the machine controller and kubelet: each
// new Machine gets a Ready Node (status.nodeRef) unless its template
// version is held back.
type harness struct {
	t   *testing.T
	ctx context.Context
	ns  string
	c   client.WithWatch
	rec *recorder
	// writes counts the MachineDeployment controller's write requests.
	writes *writeCounter
	// wt tracks the MachineDeployment controller's queue.
	wt     *testenv.WorkTracker
	cached client.Client
	// stopControllers stops the running controllers' manager.
	stopControllers func()

	mu   sync.Mutex
	held map[string]bool // template versions whose Machines get no Node
	// pending are Machines held back, made available on release.
	pending map[string]string // machine name → version
	nodes   []string          // created by the stand-in
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{
		t: t, ctx: t.Context(), c: c, rec: newRecorder(),
		ns:   testenv.CreateNamespace(t, env.Client, "md-"),
		held: map[string]bool{}, pending: map[string]string{},
	}
	h.startControllers()
	h.standIn()
	return h
}

// startControllers runs the MachineSet and MachineDeployment controllers in
// a new manager (stopControllers ends it).
func (h *harness) startControllers() {
	h.t.Helper()
	mgr := env.NewManager(h.t, nil, cache.Options{DefaultNamespaces: map[string]cache.Config{h.ns: {}}})
	testenv.Setup(h.t, mgr, nil, machineset.NewReconciler(machineset.Options{Namespace: h.ns}))
	h.cached = mgr.GetClient()
	// New each time: goroutines of a stopped manager may still read the old.
	h.writes = &writeCounter{Client: mgr.GetClient()}
	h.wt = testenv.NewWorkTracker()
	testenv.Setup(h.t, mgr, h.wt, NewReconciler(Options{Namespace: h.ns, Recorder: h.rec, Client: h.writes}))
	h.stopControllers = testenv.Run(h.t, mgr)
}

// version is the template version of a Machine (its spec's version label).
func version(m *machinev1beta1.Machine) string { return m.Spec.ObjectMeta.Labels["version"] }

// standIn watches Machines and gives each new one a Ready Node, unless its
// version is held.
func (h *harness) standIn() {
	w, err := h.c.Watch(h.ctx, &machinev1beta1.MachineList{}, client.InNamespace(h.ns))
	if err != nil {
		h.t.Fatal(err)
	}
	// Registered first, so it runs after the stand-in stopped.
	h.t.Cleanup(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, n := range h.nodes {
			_ = h.c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
	})
	done := make(chan struct{})
	// The stand-in stops before the test ends; errors after the test's
	// context ended are ignored.
	h.t.Cleanup(func() { w.Stop(); <-done })
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			m, ok := ev.Object.(*machinev1beta1.Machine)
			if !ok || ev.Type != watch.Added {
				continue
			}
			h.mu.Lock()
			held := h.held[version(m)]
			if held {
				h.pending[m.Name] = version(m)
			}
			h.mu.Unlock()
			if !held {
				h.makeAvailable(m.Name)
			}
		}
	}()
}

// makeAvailable creates a Ready Node for the Machine and sets its nodeRef.
func (h *harness) makeAvailable(machine string) {
	ctx := h.ctx
	fail := func(format string, args ...any) {
		if ctx.Err() == nil {
			h.t.Errorf(format, args...)
		}
	}
	node := h.ns + "-" + machine
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	if err := h.c.Create(ctx, n); err != nil && !apierrors.IsAlreadyExists(err) {
		fail("creating Node %s: %v", node, err)
		return
	}
	h.mu.Lock()
	h.nodes = append(h.nodes, node)
	h.mu.Unlock()
	if err := testenv.SetNodeReady(ctx, h.c, node, corev1.ConditionTrue, time.Now().Add(-time.Hour)); err != nil {
		fail("%v", err)
		return
	}
	m := &machinev1beta1.Machine{}
	if err := h.c.Get(ctx, types.NamespacedName{Namespace: h.ns, Name: machine}, m); err != nil {
		return // deleted meanwhile
	}
	base := m.DeepCopy()
	m.Status.NodeRef = &corev1.ObjectReference{Kind: "Node", Name: node}
	if err := h.c.Status().Patch(ctx, m, client.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
		fail("setting the nodeRef of %s: %v", machine, err)
	}
}

// hold keeps Machines of template version v without a Node.
func (h *harness) hold(v string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held[v] = true
}

// release makes the held Machines of v available, and later ones too.
func (h *harness) release(v string) {
	h.mu.Lock()
	delete(h.held, v)
	var names []string
	for name, pv := range h.pending {
		if pv == v {
			names = append(names, name)
			delete(h.pending, name)
		}
	}
	h.mu.Unlock()
	for _, n := range names {
		h.makeAvailable(n)
	}
}

// newMD creates MachineDeployment "w" of template version v.
func (h *harness) createMD(v string, replicas int32, mutate func(*mdv1beta1.MachineDeployment)) *mdv1beta1.MachineDeployment {
	h.t.Helper()
	md := newMD(v, replicas, intstr.FromInt32(2), intstr.FromInt32(1))
	md.Namespace, md.UID, md.Generation = h.ns, "", 0
	if mutate != nil {
		mutate(md)
	}
	if err := h.c.Create(h.ctx, md); err != nil {
		h.t.Fatal(err)
	}
	return md
}

func (h *harness) md() *mdv1beta1.MachineDeployment {
	h.t.Helper()
	md := &mdv1beta1.MachineDeployment{}
	if err := h.c.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: "w"}, md); err != nil {
		h.t.Fatal(err)
	}
	return md
}

// update applies f to the MachineDeployment (retrying conflicts).
func (h *harness) update(f func(*mdv1beta1.MachineDeployment)) {
	h.t.Helper()
	h.eventually("update the MachineDeployment", func() error {
		md := h.md()
		f(md)
		return h.c.Update(h.ctx, md)
	})
}

func (h *harness) sets() []machinev1beta1.MachineSet {
	h.t.Helper()
	list := &machinev1beta1.MachineSetList{}
	if err := h.c.List(h.ctx, list, client.InNamespace(h.ns)); err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

func (h *harness) machines() []machinev1beta1.Machine {
	h.t.Helper()
	list := &machinev1beta1.MachineList{}
	if err := h.c.List(h.ctx, list, client.InNamespace(h.ns)); err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

func (h *harness) eventually(what string, f func() error) {
	h.t.Helper()
	poll.Eventually(h.t, waitTimeout, what, poll.Check(f))
}

// waitComplete waits until the MachineDeployment reports replicas Machines
// of template version v, all available, and no other Machine exists.
func (h *harness) waitComplete(v string, replicas int32) {
	h.t.Helper()
	h.eventually(fmt.Sprintf("%d available Machines of %s only", replicas, v), func() error {
		md := h.md()
		st := md.Status
		if st.ObservedGeneration != md.Generation || st.Replicas != replicas || st.UpdatedReplicas != replicas || st.AvailableReplicas != replicas {
			return fmt.Errorf("status %+v (generation %d)", st, md.Generation)
		}
		for _, m := range h.machines() {
			if version(&m) != v {
				return fmt.Errorf("machine %s of %s left", m.Name, version(&m))
			}
		}
		return nil
	})
}

// bounds watches the namespace's Machines from a consistent start and
// records every moment with more than maxTotal Machines or fewer than
// minAvailable with a Node (the stand-in makes Nodes Ready at once).
type bounds struct {
	mu         sync.Mutex
	violations []string
	events     int
	maxSeen    int
	minAvail   int
	extra      func(map[string]*machinev1beta1.Machine) string
}

func (h *harness) watchBounds(maxTotal, minAvailable int) *bounds {
	h.t.Helper()
	list := &machinev1beta1.MachineList{}
	if err := h.c.List(h.ctx, list, client.InNamespace(h.ns)); err != nil {
		h.t.Fatal(err)
	}
	w, err := h.c.Watch(h.ctx, &machinev1beta1.MachineList{}, client.InNamespace(h.ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	if err != nil {
		h.t.Fatal(err)
	}
	b := &bounds{minAvail: len(list.Items)}
	seen := map[string]*machinev1beta1.Machine{}
	for i := range list.Items {
		seen[list.Items[i].Name] = &list.Items[i]
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			m, ok := ev.Object.(*machinev1beta1.Machine)
			if !ok {
				continue
			}
			if ev.Type == watch.Deleted {
				delete(seen, m.Name)
			} else {
				seen[m.Name] = m
			}
			available := 0
			for _, x := range seen {
				if x.Status.NodeRef != nil && x.DeletionTimestamp == nil {
					available++
				}
			}
			b.mu.Lock()
			b.events++
			b.maxSeen = max(b.maxSeen, len(seen))
			b.minAvail = min(b.minAvail, available)
			if len(seen) > maxTotal || available < minAvailable {
				b.violations = append(b.violations, fmt.Sprintf("%s %s: %d Machines, %d available", ev.Type, m.Name, len(seen), available))
			}
			if b.extra != nil {
				if v := b.extra(seen); v != "" {
					b.violations = append(b.violations, fmt.Sprintf("%s %s: %s", ev.Type, m.Name, v))
				}
			}
			b.mu.Unlock()
		}
	}()
	return b
}

func (b *bounds) check(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	t.Logf("bounds: %d Machine events, at most %d Machines, at least %d available", b.events, b.maxSeen, b.minAvail)
	if len(b.violations) > 0 {
		t.Errorf("%d moments out of bounds, first: %s", len(b.violations), strings.Join(b.violations[:min(5, len(b.violations))], "; "))
	}
}

// nodeTainted reports whether the Node of machine carries the taint.
func (h *harness) nodeTainted(m *machinev1beta1.Machine) (bool, error) {
	if m.Status.NodeRef == nil {
		return false, fmt.Errorf("machine %s has no Node", m.Name)
	}
	n := &corev1.Node{}
	if err := h.c.Get(h.ctx, types.NamespacedName{Name: m.Status.NodeRef.Name}, n); err != nil {
		return false, err
	}
	for _, t := range n.Spec.Taints {
		if t.Key == PreferNoScheduleTaintKey && t.Effect == corev1.TaintEffectPreferNoSchedule && t.Value == "True" {
			return true, nil
		}
	}
	return false, nil
}

// writeCounter counts write requests (status ones included).
type writeCounter struct {
	client.Client
	n atomic.Int64
}

func (w *writeCounter) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	w.n.Add(1)
	return w.Client.Create(ctx, obj, opts...)
}

func (w *writeCounter) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	w.n.Add(1)
	return w.Client.Update(ctx, obj, opts...)
}

func (w *writeCounter) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
	w.n.Add(1)
	return w.Client.Patch(ctx, obj, p, opts...)
}

func (w *writeCounter) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	w.n.Add(1)
	return w.Client.Delete(ctx, obj, opts...)
}

func (w *writeCounter) Status() client.SubResourceWriter {
	return countedStatus{SubResourceWriter: w.Client.Status(), n: &w.n}
}

type countedStatus struct {
	client.SubResourceWriter
	n *atomic.Int64
}

func (s countedStatus) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
	s.n.Add(1)
	return s.SubResourceWriter.Patch(ctx, obj, p, opts...)
}

func (s countedStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	s.n.Add(1)
	return s.SubResourceWriter.Update(ctx, obj, opts...)
}

// settle waits until the MachineDeployment controller has handled every
// change made so far.
func (h *harness) settle() {
	h.t.Helper()
	h.wt.Settle(h.t, waitTimeout, 5*time.Second,
		testenv.CaughtUp(h.c, h.cached, &machinev1beta1.MachineList{}, client.InNamespace(h.ns)),
		testenv.CaughtUp(h.c, h.cached, &machinev1beta1.MachineSetList{}, client.InNamespace(h.ns)),
		testenv.CaughtUp(h.c, h.cached, &mdv1beta1.MachineDeploymentList{}, client.InNamespace(h.ns)))
}
