package nodelink

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/machinenode"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/apply/applytest"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

var env *testenv.Env

// TestMain: NODELINK_TEST_LOG=1 shows the controller's logs.
func TestMain(m *testing.M) { testenv.MainWith(m, &env, testenv.Options{LogEnv: "NODELINK_TEST_LOG"}) }

const waitTimeout = 15 * time.Second

// recorder is the shared fake; find returns the events of reason ("Type Reason Node: note"),
// every event when reason is empty.
type recorder struct{ testenv.Recorder }

func (r *recorder) find(reason string) []string { return r.Find(reason, "") }

var testSeq atomic.Int32

// harness runs nodelink in its own manager for one test's namespace. Writes
// made by the test go through env.Client and are not counted; the
// controller's requests are counted by ct.
type harness struct {
	t      *testing.T
	ctx    context.Context
	ns     string
	seq    int32 // unique per test: IPs are 10.<seq>.0.x, fd00::<seq>:x
	c      client.Client
	ct     *applytest.CountingTransport
	rec    *recorder
	wt     *testenv.WorkTracker // the running controller's queue
	cached client.Client        // the running manager's (cache-backed) client
	r      *Reconciler
	stopFn func() // stops the running manager
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	seq := testSeq.Add(1)
	h := &harness{
		t:   t,
		ctx: t.Context(),
		ns:  testenv.CreateNamespace(t, env.Client, fmt.Sprintf("nodelink-%d-", seq)),
		seq: seq,
		c:   env.Client,
		ct:  applytest.NewCountingTransport(),
		rec: &recorder{},
		wt:  testenv.NewWorkTracker(),
	}
	h.start()
	t.Cleanup(h.stop)
	return h
}

// start runs a fresh manager (nothing carried over from a previous one).
func (h *harness) start() {
	h.t.Helper()
	cfg := h.ct.Install(env.Config)
	mgr := env.NewManager(h.t, cfg, cache.Options{ByObject: map[client.Object]cache.ByObject{
		&machinev1beta1.Machine{}: {Namespaces: map[string]cache.Config{h.ns: {}}},
	}})
	h.cached = mgr.GetClient()
	h.r = NewReconciler(Options{Namespace: h.ns, Recorder: h.rec})
	testenv.Setup(h.t, mgr, h.wt, h.r)
	h.stopFn = testenv.StartManager(h.t, mgr)
}

func (h *harness) stop() {
	if h.stopFn != nil {
		h.stopFn()
		h.stopFn = nil
	}
}

func (h *harness) ip4(i int) string { return fmt.Sprintf("10.%d.0.%d", h.seq, i) }
func (h *harness) ip6(i int) string { return fmt.Sprintf("fd00::%x:%x", h.seq, i) }
func (h *harness) name(s string) string {
	return fmt.Sprintf("%s-%s", h.ns, s)
}

func internal(ips ...string) []corev1.NodeAddress {
	var out []corev1.NodeAddress
	for _, ip := range ips {
		out = append(out, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	}
	return out
}

// createNode creates a Node (cluster-scoped, named after the test) with the
// given providerID, InternalIPs and taints, and deletes it when the test ends.
func (h *harness) createNode(suffix, providerID string, ips []string, mutate ...func(*corev1.Node)) *corev1.Node {
	h.t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: h.name(suffix)}}
	n.Spec.ProviderID = providerID
	for _, f := range mutate {
		f(n)
	}
	if err := h.c.Create(h.ctx, n); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		n := &corev1.Node{}
		if err := h.c.Get(context.Background(), types.NamespacedName{Name: h.name(suffix)}, n); err != nil {
			return
		}
		if len(n.Finalizers) > 0 {
			n.Finalizers = nil
			_ = h.c.Update(context.Background(), n)
		}
		_ = h.c.Delete(context.Background(), n)
	})
	// A merge patch: nodelink may already have patched the new Node.
	patch := client.MergeFrom(n.DeepCopy())
	n.Status.Addresses = internal(ips...)
	if err := h.c.Status().Patch(h.ctx, n, patch); err != nil {
		h.t.Fatal(err)
	}
	return n
}

func (h *harness) createMachine(name, providerID string, ips []string, mutate ...func(*machinev1beta1.Machine)) *machinev1beta1.Machine {
	h.t.Helper()
	m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name}}
	if providerID != "" {
		m.Spec.ProviderID = &providerID
	}
	for _, f := range mutate {
		f(m)
	}
	status := m.Status
	if err := h.c.Create(h.ctx, m); err != nil {
		h.t.Fatal(err)
	}
	// A merge patch: nodelink may already have set the nodeRef.
	patch := client.MergeFrom(m.DeepCopy())
	status.Addresses = internal(ips...)
	m.Status = status
	if err := h.c.Status().Patch(h.ctx, m, patch); err != nil {
		h.t.Fatal(err)
	}
	return m
}

func (h *harness) node(name string) *corev1.Node {
	h.t.Helper()
	return testenv.Get[corev1.Node](h.t, h.c, "", name)
}

func (h *harness) machine(name string) *machinev1beta1.Machine {
	h.t.Helper()
	return testenv.Get[machinev1beta1.Machine](h.t, h.c, h.ns, name)
}

// updateMachine applies f to the current Machine and updates it, retrying
// on conflicts.
func (h *harness) updateMachine(name string, f func(*machinev1beta1.Machine)) {
	h.t.Helper()
	h.eventually("update machine "+name, func() error {
		m := h.machine(name)
		f(m)
		return h.c.Update(h.ctx, m)
	})
}

func (h *harness) updateNode(name string, f func(*corev1.Node)) {
	h.t.Helper()
	h.eventually("update node "+name, func() error {
		n := h.node(name)
		f(n)
		return h.c.Update(h.ctx, n)
	})
}

func (h *harness) eventually(what string, f func() error) {
	h.t.Helper()
	poll.Eventually(h.t, waitTimeout, what, poll.Check(f))
}

// reconcileNow runs a reconcile for node directly (in addition to whatever
// the manager runs), failing the test on error.
func (h *harness) reconcileNow(node string) {
	h.t.Helper()
	if _, err := h.r.Reconcile(h.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: node}}); err != nil {
		h.t.Fatalf("reconcile %s: %v", node, err)
	}
}

// settled waits until the manager's cache holds what the API server has for
// the Nodes and the test's Machines, and the controller has nothing queued,
// scheduled or running: every change made so far has been handled.
func (h *harness) settled() {
	h.t.Helper()
	h.wt.Settle(h.t, waitTimeout, time.Minute,
		testenv.CaughtUp(h.c, h.cached, &corev1.NodeList{}),
		testenv.CaughtUp(h.c, h.cached, &machinev1beta1.MachineList{}, client.InNamespace(h.ns)))
}

// expectNoWrites waits until the controller has handled every event up to
// now (see settled), runs a reconcile of each of nodes directly on that
// state (the attempt is certain to happen), waits for the controller to be
// idle again, and asserts that the controller sent no write request since
// the last Reset.
func (h *harness) expectNoWrites(nodes ...string) {
	h.t.Helper()
	h.settled()
	for _, n := range nodes {
		h.reconcileNow(n)
	}
	h.settled()
	if w := h.ct.Writes(); w != 0 {
		h.t.Errorf("controller made %d write requests, want 0: %v", w, h.ct.WriteRequests())
	}
}

func linked(h *harness, machine string, node *corev1.Node) func() error {
	return func() error {
		m := h.machine(machine)
		want := corev1.ObjectReference{Kind: "Node", Name: node.Name, UID: node.UID}
		if m.Status.NodeRef == nil || *m.Status.NodeRef != want {
			return fmt.Errorf("nodeRef = %+v, want %+v", m.Status.NodeRef, want)
		}
		n := h.node(node.Name)
		if got, want := n.Annotations[machinenode.MachineAnnotation], h.ns+"/"+machine; got != want {
			return fmt.Errorf("node annotation %s = %q, want %q", machinenode.MachineAnnotation, got, want)
		}
		return nil
	}
}

func nodeHas(h *harness, node string, check func(*corev1.Node) error) func() error {
	return func() error { return check(h.node(node)) }
}

func hasTaint(n *corev1.Node, key, value string, effect corev1.TaintEffect) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key && t.Effect == effect && t.Value == value {
			return true
		}
	}
	return false
}

func withoutNotReady(ts []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range ts {
		if t.Key != corev1.TaintNodeNotReady {
			out = append(out, t)
		}
	}
	return out
}

func countTaints(n *corev1.Node, key string, effect corev1.TaintEffect) int {
	c := 0
	for _, t := range n.Spec.Taints {
		if t.Key == key && t.Effect == effect {
			c++
		}
	}
	return c
}

func TestLinkByProviderID(t *testing.T) {
	h := newHarness(t)
	node := h.createNode("n", "kubemark://"+h.ns+"/m", []string{h.ip4(1)})
	// The Machine's address differs: the providerID decides.
	h.createMachine("m", "kubemark://"+h.ns+"/m", []string{h.ip4(2)})
	h.eventually("linked", linked(h, "m", node))
	h.ct.Reset()
	h.expectNoWrites(node.Name)
}

// nodelink is nodeRef's one writer: its apply, under its own field manager, owns nodeRef and nothing else,
// and leaves the fields of the Machine's other writers (here addresses) in place. Breaks if: setNodeRef
// sent more of the status it read (it would co-own, and later remove, the machine controller's fields).
func TestNodeRefIsNodelinksAlone(t *testing.T) {
	h := newHarness(t)
	node := h.createNode("n", "kubemark://"+h.ns+"/m", []string{h.ip4(1)})
	h.createMachine("m", "kubemark://"+h.ns+"/m", []string{h.ip4(2)})
	h.eventually("linked", linked(h, "m", node))
	m := h.machine("m")
	if len(m.Status.Addresses) != 1 {
		t.Errorf("addresses %+v, want the Machine's own", m.Status.Addresses)
	}
	var owned []string
	for _, e := range m.ManagedFields {
		if e.Manager != ControllerName {
			continue
		}
		if e.Operation != metav1.ManagedFieldsOperationApply || e.Subresource != "status" || e.FieldsV1 == nil {
			t.Errorf("nodelink's entry %+v, want an apply of the status", e)
			continue
		}
		var fields map[string]map[string]any
		if err := json.Unmarshal(e.FieldsV1.GetRawBytes(), &fields); err != nil {
			t.Fatal(err)
		}
		for k := range fields["f:status"] {
			owned = append(owned, k)
		}
	}
	if len(owned) != 1 || owned[0] != "f:nodeRef" {
		t.Errorf("nodelink owns %v, want [f:nodeRef]", owned)
	}
}

func TestLinkBySecondInternalIP(t *testing.T) {
	h := newHarness(t)
	// Dual-stack node without a providerID; the Machine shares only the
	// node's second InternalIP (written in a non-canonical form).
	node := h.createNode("n", "", []string{h.ip4(1), h.ip6(1)})
	longForm := fmt.Sprintf("fd00:0:0:0:0:0:%x:%x", h.seq, 1)
	h.createMachine("m", "", []string{h.ip4(9), longForm})
	h.eventually("linked", linked(h, "m", node))
}

func TestMachineProviderIDAppearingLinksPromptly(t *testing.T) {
	h := newHarness(t)
	node := h.createNode("n", "kubemark://"+h.ns+"/late", []string{h.ip4(1)})
	h.createMachine("m", "", nil)
	h.expectNoWrites(node.Name)
	if m := h.machine("m"); m.Status.NodeRef != nil {
		t.Fatalf("linked before any match: %+v", m.Status.NodeRef)
	}
	h.updateMachine("m", func(m *machinev1beta1.Machine) { m.Spec.ProviderID = ptr("kubemark://" + h.ns + "/late") })
	h.eventually("linked", linked(h, "m", node))
}

func TestNoMatchWritesNothing(t *testing.T) {
	h := newHarness(t)
	h.ct.Reset()
	node := h.createNode("n", "kubemark://"+h.ns+"/nobody", []string{h.ip4(1)})
	h.createMachine("m", "kubemark://"+h.ns+"/m", []string{h.ip4(2)})
	h.expectNoWrites(node.Name)
	if n := h.node(node.Name); len(n.Annotations) != 0 {
		t.Errorf("node annotated: %v", n.Annotations)
	}
	if m := h.machine("m"); m.Status.NodeRef != nil {
		t.Errorf("nodeRef set: %+v", m.Status.NodeRef)
	}
}

func TestTwoMachinesMatchWritesNothing(t *testing.T) {
	h := newHarness(t)
	h.ct.Reset()
	h.createMachine("a", "", []string{h.ip4(1)})
	h.createMachine("b", "", []string{h.ip4(5), h.ip4(1)})
	node := h.createNode("n", "", []string{h.ip4(1)})
	h.expectNoWrites(node.Name)
	if n := h.node(node.Name); len(n.Annotations) != 0 {
		t.Errorf("node annotated: %v", n.Annotations)
	}
	for _, name := range []string{"a", "b"} {
		if m := h.machine(name); m.Status.NodeRef != nil {
			t.Errorf("machine %s nodeRef set: %+v", name, m.Status.NodeRef)
		}
	}
	ev := h.rec.find(ReasonAmbiguousMatch)
	if len(ev) == 0 {
		t.Fatalf("no %s event; events: %v", ReasonAmbiguousMatch, h.rec.find(""))
	}
	if !strings.Contains(ev[0], h.ns+"/a") || !strings.Contains(ev[0], h.ns+"/b") {
		t.Errorf("event does not name both machines: %s", ev[0])
	}
}

func TestReusedIPDoesNotStealAMachine(t *testing.T) {
	h := newHarness(t)
	// The new node has the Machine's providerID; an old node still reports
	// the same InternalIP. Only the new node is linked.
	oldNode := h.createNode("old", "kubemark://"+h.ns+"/old", []string{h.ip4(1)})
	newNode := h.createNode("new", "kubemark://"+h.ns+"/m", []string{h.ip4(1)})
	h.createMachine("m", "kubemark://"+h.ns+"/m", []string{h.ip4(1)})
	h.eventually("linked", linked(h, "m", newNode))
	h.ct.Reset()
	h.expectNoWrites(oldNode.Name, newNode.Name)
	if n := h.node(oldNode.Name); len(n.Annotations) != 0 {
		t.Errorf("old node annotated: %v", n.Annotations)
	}
}

func TestMetadataSync(t *testing.T) {
	h := newHarness(t)
	pid := "kubemark://" + h.ns + "/m"
	node := h.createNode("n", pid, []string{h.ip4(1)}, func(n *corev1.Node) {
		n.Labels = map[string]string{"foreign": "f"}
		n.Spec.Taints = []corev1.Taint{{Key: "foreign-taint", Effect: corev1.TaintEffectNoSchedule}}
	})
	h.createMachine("m", pid, nil, func(m *machinev1beta1.Machine) {
		m.Spec.ObjectMeta.Labels = map[string]string{"node-role.kubernetes.io/infra": ""}
	})
	h.eventually("linked", linked(h, "m", node))
	h.eventually("initial label", nodeHas(h, node.Name, func(n *corev1.Node) error {
		if _, ok := n.Labels["node-role.kubernetes.io/infra"]; !ok {
			return fmt.Errorf("labels %v", n.Labels)
		}
		return nil
	}))

	// Added on the Machine → appears on the Node.
	h.updateMachine("m", func(m *machinev1beta1.Machine) {
		m.Spec.ObjectMeta.Labels["tier"] = "gold"
		m.Spec.ObjectMeta.Annotations = map[string]string{"example.com/owner": "team-a"}
		m.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "infra", Effect: corev1.TaintEffectNoSchedule}}
	})
	h.eventually("added", nodeHas(h, node.Name, func(n *corev1.Node) error {
		if n.Labels["tier"] != "gold" || n.Annotations["example.com/owner"] != "team-a" || !hasTaint(n, "dedicated", "infra", corev1.TaintEffectNoSchedule) {
			return fmt.Errorf("labels %v annotations %v taints %v", n.Labels, n.Annotations, n.Spec.Taints)
		}
		return nil
	}))

	// Someone else adds a label: it is left alone.
	h.updateNode(node.Name, func(n *corev1.Node) { n.Labels["someone-else"] = "x" })

	// Removed from the Machine → removed from the Node; foreign entries stay.
	h.updateMachine("m", func(m *machinev1beta1.Machine) {
		delete(m.Spec.ObjectMeta.Labels, "tier")
		m.Spec.ObjectMeta.Annotations = nil
		m.Spec.Taints = nil
	})
	h.eventually("removed", nodeHas(h, node.Name, func(n *corev1.Node) error {
		if _, ok := n.Labels["tier"]; ok {
			return fmt.Errorf("label tier still there: %v", n.Labels)
		}
		if _, ok := n.Annotations["example.com/owner"]; ok {
			return fmt.Errorf("annotation still there: %v", n.Annotations)
		}
		if countTaints(n, "dedicated", corev1.TaintEffectNoSchedule) != 0 {
			return fmt.Errorf("taint still there: %v", n.Spec.Taints)
		}
		return nil
	}))
	n := h.node(node.Name)
	want := map[string]string{"foreign": "f", "someone-else": "x", "node-role.kubernetes.io/infra": ""}
	if !maps.Equal(n.Labels, want) {
		t.Errorf("labels = %v, want %v", n.Labels, want)
	}
	// The API server adds node.kubernetes.io/not-ready to new Nodes.
	if !hasTaint(n, "foreign-taint", "", corev1.TaintEffectNoSchedule) || len(withoutNotReady(n.Spec.Taints)) != 1 {
		t.Errorf("taints = %v, want only the foreign one", n.Spec.Taints)
	}
	if got := n.Annotations[LastAppliedAnnotation]; got != `{"labels":{"node-role.kubernetes.io/infra":""}}` {
		t.Errorf("last-applied = %s", got)
	}

	// Steady state: events that reach the controller cause no writes.
	h.ct.Reset()
	h.updateNode(node.Name, func(n *corev1.Node) { n.Annotations["unrelated"] = "1" })
	h.eventually("machine status churn", func() error {
		m := h.machine("m")
		m.Status.Phase = ptr("Running")
		return h.c.Status().Update(h.ctx, m)
	})
	h.expectNoWrites(node.Name)
}

func TestForeignChangeIsKeptWhenMachineDropsTheEntry(t *testing.T) {
	h := newHarness(t)
	pid := "kubemark://" + h.ns + "/m"
	node := h.createNode("n", pid, []string{h.ip4(1)})
	h.createMachine("m", pid, nil, func(m *machinev1beta1.Machine) {
		m.Spec.ObjectMeta.Labels = map[string]string{"changed": "1", "unchanged": "1"}
		m.Spec.Taints = []corev1.Taint{{Key: "t", Value: "v", Effect: corev1.TaintEffectNoExecute}}
	})
	h.eventually("applied", nodeHas(h, node.Name, func(n *corev1.Node) error {
		if n.Labels["changed"] != "1" || n.Labels["unchanged"] != "1" || !hasTaint(n, "t", "v", corev1.TaintEffectNoExecute) {
			return fmt.Errorf("labels %v taints %v", n.Labels, n.Spec.Taints)
		}
		return nil
	}))

	// While nodelink is down, someone changes a label and the taint nodelink
	// applied, and the Machine drops them (while the Machine still declares
	// an entry, nodelink enforces the Machine's value).
	h.stop()
	h.updateNode(node.Name, func(n *corev1.Node) {
		n.Labels["changed"] = "2"
		for i := range n.Spec.Taints {
			if n.Spec.Taints[i].Key == "t" {
				n.Spec.Taints[i].Value = "other"
			}
		}
	})
	h.updateMachine("m", func(m *machinev1beta1.Machine) {
		m.Spec.ObjectMeta.Labels = nil
		m.Spec.Taints = nil
	})
	h.start()
	h.eventually("unchanged label removed", nodeHas(h, node.Name, func(n *corev1.Node) error {
		if _, ok := n.Labels["unchanged"]; ok {
			return fmt.Errorf("labels %v", n.Labels)
		}
		return nil
	}))
	n := h.node(node.Name)
	if n.Labels["changed"] != "2" {
		t.Errorf("foreign value reverted or removed: %v", n.Labels)
	}
	if !hasTaint(n, "t", "other", corev1.TaintEffectNoExecute) {
		t.Errorf("foreign taint value removed: %v", n.Spec.Taints)
	}
	if _, ok := n.Annotations[LastAppliedAnnotation]; ok {
		t.Errorf("last-applied kept although nothing is applied: %v", n.Annotations)
	}
}

func TestTaintValueCorrected(t *testing.T) {
	h := newHarness(t)
	pid := "kubemark://" + h.ns + "/m"
	node := h.createNode("n", pid, []string{h.ip4(1)}, func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "old", Effect: corev1.TaintEffectNoSchedule}}
	})
	h.createMachine("m", pid, nil, func(m *machinev1beta1.Machine) {
		m.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "new", Effect: corev1.TaintEffectNoSchedule}}
	})
	h.eventually("corrected", nodeHas(h, node.Name, func(n *corev1.Node) error {
		if !hasTaint(n, "dedicated", "new", corev1.TaintEffectNoSchedule) || countTaints(n, "dedicated", corev1.TaintEffectNoSchedule) != 1 {
			return fmt.Errorf("taints %v", n.Spec.Taints)
		}
		return nil
	}))
	// A foreign edit of a value the Machine declares is corrected again.
	h.updateNode(node.Name, func(n *corev1.Node) {
		for i := range n.Spec.Taints {
			if n.Spec.Taints[i].Key == "dedicated" {
				n.Spec.Taints[i].Value = "tampered"
			}
		}
	})
	h.eventually("corrected again", nodeHas(h, node.Name, func(n *corev1.Node) error {
		if !hasTaint(n, "dedicated", "new", corev1.TaintEffectNoSchedule) {
			return fmt.Errorf("taints %v", n.Spec.Taints)
		}
		return nil
	}))
}

func TestRestartMakesNoWrites(t *testing.T) {
	h := newHarness(t)
	pid := "kubemark://" + h.ns + "/m"
	node := h.createNode("n", pid, []string{h.ip4(1)})
	h.createMachine("m", pid, nil, func(m *machinev1beta1.Machine) {
		m.Spec.ObjectMeta.Labels = map[string]string{"a": "1"}
		m.Spec.ObjectMeta.Annotations = map[string]string{"b": "2"}
		m.Spec.Taints = []corev1.Taint{{Key: "t", Effect: corev1.TaintEffectPreferNoSchedule}}
	})
	h.eventually("linked", linked(h, "m", node))
	h.eventually("synced", nodeHas(h, node.Name, func(n *corev1.Node) error {
		if n.Labels["a"] != "1" || n.Annotations["b"] != "2" || !hasTaint(n, "t", "", corev1.TaintEffectPreferNoSchedule) {
			return fmt.Errorf("node %v %v %v", n.Labels, n.Annotations, n.Spec.Taints)
		}
		return nil
	}))
	h.settled()
	h.stop()
	h.ct.Reset()
	h.start() // the initial list reconciles every node
	h.expectNoWrites(node.Name)
}

// TestNodeDeletedKeepsNodeRef: a Machine whose Node is deleted keeps naming
// it (the MachineHealthCheck then sees "Node gone", as with OpenShift's
// nodelink); the Node coming back under the same name is linked again.
func TestNodeDeletedKeepsNodeRef(t *testing.T) {
	h := newHarness(t)
	pid := "kubemark://" + h.ns + "/m"
	node := h.createNode("n", pid, []string{h.ip4(1)}, func(n *corev1.Node) {
		n.Finalizers = []string{"test.example.com/hold"}
	})
	h.createMachine("m", pid, nil)
	h.eventually("linked", linked(h, "m", node))
	wantRef := corev1.ObjectReference{Kind: "Node", Name: node.Name, UID: node.UID}

	// Being deleted: left alone (no sync, nodeRef kept).
	if err := h.c.Delete(h.ctx, h.node(node.Name)); err != nil {
		t.Fatal(err)
	}
	h.eventually("deletion started", nodeHas(h, node.Name, func(n *corev1.Node) error {
		if n.DeletionTimestamp == nil {
			return fmt.Errorf("no deletionTimestamp")
		}
		return nil
	}))
	h.settled() // the controller's cache shows the deletion too (the check above read the API server)
	h.ct.Reset()
	h.updateMachine("m", func(m *machinev1beta1.Machine) { m.Spec.ObjectMeta.Labels = map[string]string{"late": "1"} })
	h.expectNoWrites(node.Name)
	if m := h.machine("m"); m.Status.NodeRef == nil {
		t.Fatal("nodeRef cleared while the node still exists")
	}

	// Gone: nodelink processes the deletion and writes nothing; the nodeRef
	// still names the deleted Node.
	h.ct.Reset()
	h.updateNode(node.Name, func(n *corev1.Node) { n.Finalizers = nil })
	h.eventually("node gone", func() error {
		err := h.c.Get(h.ctx, types.NamespacedName{Name: node.Name}, &corev1.Node{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %v", err)
	})
	h.expectNoWrites(node.Name)
	if ref := h.machine("m").Status.NodeRef; ref == nil || *ref != wantRef {
		t.Fatalf("nodeRef = %+v, want the deleted node %+v", ref, wantRef)
	}

	// The Node comes back under the same name (a new UID): linked again.
	again := h.createNode("n", pid, []string{h.ip4(1)})
	if again.UID == node.UID {
		t.Fatal("recreated node has the old UID")
	}
	h.eventually("relinked", linked(h, "m", again))
}

func TestNodeRecreatedUpdatesNodeRefUID(t *testing.T) {
	h := newHarness(t)
	pid := "kubemark://" + h.ns + "/m"
	node := h.createNode("n", pid, []string{h.ip4(1)})
	h.createMachine("m", pid, nil)
	h.eventually("linked", linked(h, "m", node))
	// Delete and recreate quickly, while nodelink may not have seen the gap.
	if err := h.c.Delete(h.ctx, node); err != nil {
		t.Fatal(err)
	}
	h.eventually("node gone", func() error {
		err := h.c.Get(h.ctx, types.NamespacedName{Name: node.Name}, &corev1.Node{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %v", err)
	})
	again := h.createNode("n", pid, []string{h.ip4(1)})
	h.eventually("relinked with the new UID", linked(h, "m", again))
}

// TestNodeRefToMissingNodeIsKept: nodelink never clears a nodeRef, neither
// one naming a Node that does not exist (e.g. deleted while nodelink was
// down) nor one naming an existing Node the Machine does not match.
func TestNodeRefToMissingNodeIsKept(t *testing.T) {
	h := newHarness(t)
	missing := corev1.ObjectReference{Kind: "Node", Name: h.name("never-existed"), UID: "0000"}
	h.createMachine("m", "", nil, func(m *machinev1beta1.Machine) {
		m.Status.NodeRef = missing.DeepCopy()
	})
	other := h.createNode("other", "", []string{h.ip4(7)})
	h.createMachine("keep", "", nil, func(m *machinev1beta1.Machine) {
		m.Status.NodeRef = &corev1.ObjectReference{Kind: "Node", Name: other.Name, UID: other.UID}
	})
	h.ct.Reset()
	h.expectNoWrites(other.Name, missing.Name)
	if ref := h.machine("m").Status.NodeRef; ref == nil || *ref != missing {
		t.Errorf("nodeRef to a missing node = %+v, want %+v", ref, missing)
	}
	if m := h.machine("keep"); m.Status.NodeRef == nil {
		t.Error("nodeRef to an existing node was cleared")
	}
}

// TestDeletingMachineIsNotLinkedToANodeThatReusedItsIP: a Machine being
// deleted (held by a finalizer, as the machine controller holds it while it
// drains and deletes status.nodeRef) keeps its own Node, and a new Node that
// reused its InternalIP is never linked to it, before or after its own Node
// is gone; the new Node goes to the replacement Machine that has the IP.
func TestDeletingMachineIsNotLinkedToANodeThatReusedItsIP(t *testing.T) {
	h := newHarness(t)
	ip := h.ip4(1)
	oldNode := h.createNode("old", "", []string{ip})
	h.createMachine("m", "", []string{ip}, func(m *machinev1beta1.Machine) {
		m.Finalizers = []string{"test.example.com/hold"}
	})
	t.Cleanup(func() {
		m := &machinev1beta1.Machine{}
		if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: "m"}, m); err == nil {
			m.Finalizers = nil
			_ = h.c.Update(context.Background(), m)
		}
	})
	h.eventually("linked to the old node", linked(h, "m", oldNode))

	if err := h.c.Delete(h.ctx, h.machine("m")); err != nil {
		t.Fatal(err)
	}
	// Once nodelink has seen the deletion, a Node that reuses the IP must
	// not take the old one's place.
	h.eventually("nodelink's cache shows the machine deleting", func() error {
		m := &machinev1beta1.Machine{}
		if err := h.cached.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: "m"}, m); err != nil {
			return err
		}
		if m.DeletionTimestamp == nil {
			return fmt.Errorf("no deletionTimestamp yet")
		}
		return nil
	})
	oldRef := corev1.ObjectReference{Kind: "Node", Name: oldNode.Name, UID: oldNode.UID}

	// A new Node reports the same InternalIP while the old one still exists.
	h.ct.Reset()
	newNode := h.createNode("new", "", []string{ip})
	h.expectNoWrites(newNode.Name, oldNode.Name)
	if ref := h.machine("m").Status.NodeRef; ref == nil || *ref != oldRef {
		t.Fatalf("nodeRef = %+v, want the old node %+v", ref, oldRef)
	}
	if got, ok := h.node(newNode.Name).Annotations[machinenode.MachineAnnotation]; ok {
		t.Fatalf("new node annotated %s=%s", machinenode.MachineAnnotation, got)
	}

	// The old Node is deleted (as the machine controller does): the nodeRef
	// keeps naming it, and the new Node is still not linked.
	h.ct.Reset()
	if err := h.c.Delete(h.ctx, oldNode); err != nil {
		t.Fatal(err)
	}
	h.eventually("old node gone", func() error {
		err := h.c.Get(h.ctx, types.NamespacedName{Name: oldNode.Name}, &corev1.Node{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %v", err)
	})
	h.expectNoWrites(newNode.Name, oldNode.Name)
	if ref := h.machine("m").Status.NodeRef; ref == nil || *ref != oldRef {
		t.Fatalf("nodeRef = %+v, want the deleted old node %+v", ref, oldRef)
	}
	if got, ok := h.node(newNode.Name).Annotations[machinenode.MachineAnnotation]; ok {
		t.Fatalf("new node annotated %s=%s", machinenode.MachineAnnotation, got)
	}

	// The replacement Machine with the IP gets the new Node: the deleting
	// Machine does not make the match ambiguous.
	h.createMachine("replacement", "", []string{ip})
	h.eventually("replacement linked", linked(h, "replacement", newNode))
	if ev := h.rec.find(ReasonAmbiguousMatch); len(ev) != 0 {
		t.Errorf("ambiguous-match events: %v", ev)
	}
	if ref := h.machine("m").Status.NodeRef; ref == nil || *ref != oldRef {
		t.Errorf("deleting machine's nodeRef = %+v, want %+v", ref, oldRef)
	}
}
