package machine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/apply/applytest"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
)

var env *testenv.Env

// TestMain starts one API server for the package. Set MACHINE_TEST_LOG=1 to
// see the controller's logs.
func TestMain(m *testing.M) { testenv.MainWith(m, &env, testenv.Options{LogEnv: "MACHINE_TEST_LOG"}) }

// recorder is the shared fake; count returns how many events have reason.
type recorder struct{ testenv.Recorder }

func (r *recorder) count(reason string) int { return r.Count(reason) }

// fixture is one test's namespace, fake provider and reconciler (called
// directly, against the envtest API server, through a request-counting
// client).
type fixture struct {
	t       *testing.T
	ctx     context.Context
	ns      string
	act     *fakeActuator
	r       *Reconciler
	counter *applytest.CountingTransport
	rec     *recorder
	clock   *testenv.Clock
}

func fastBackoff() workqueue.TypedRateLimiter[types.NamespacedName] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](50*time.Millisecond, 500*time.Millisecond)
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := ctrl.LoggerInto(context.Background(), ctrl.Log.WithName(t.Name()))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "machine-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	counter := applytest.NewCountingTransport()
	cfg := counter.Install(env.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ctx: ctx, ns: ns.Name, act: &fakeActuator{Groups: []string{testGroup}}, counter: counter, rec: &recorder{}, clock: &testenv.Clock{}}
	f.r = NewReconciler(Options{
		Client: c, APIReader: c, Actuator: f.act, Recorder: f.rec, Clock: f.clock,
		KubeClient: kube,
	})
	f.r.waitBackoff = fastBackoff()
	f.r.drainBackoff = fastBackoff()
	return f
}

// testGroup is the providerSpec API group the fixture's fake provider serves.
const testGroup = "test.example.com"

func providerSpec() machinev1beta1.ProviderSpec {
	return machinev1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: []byte(`{"apiVersion":"test.example.com/v1","kind":"TestProviderSpec","size":"small"}`)}}
}

// machine creates a Machine in the fixture's namespace.
func (f *fixture) machine(name string, mutate ...func(*machinev1beta1.Machine)) *machinev1beta1.Machine {
	f.t.Helper()
	m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name}}
	m.Spec.ProviderSpec = providerSpec()
	for _, mu := range mutate {
		mu(m)
	}
	status := m.Status
	if err := env.Client.Create(f.ctx, m); err != nil {
		f.t.Fatal(err)
	}
	if !equalStatus(status, machinev1beta1.MachineStatus{}) {
		m.Status = status
		if err := env.Client.Status().Update(f.ctx, m); err != nil {
			f.t.Fatal(err)
		}
	}
	return m
}

func equalStatus(a, b machinev1beta1.MachineStatus) bool {
	return fmt.Sprintf("%+v", a) == fmt.Sprintf("%+v", b)
}

// nodeName returns a cluster-unique node name for this test.
func (f *fixture) nodeName(name string) string { return f.ns + "-" + name }

// node creates a Node with the given Ready status and labels.
func (f *fixture) node(name string, ready corev1.ConditionStatus, labels map[string]string) *corev1.Node {
	f.t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := env.Client.Create(f.ctx, n); err != nil {
		f.t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: "Test", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := env.Client.Status().Update(f.ctx, n); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = env.Client.Delete(context.Background(), n) })
	return n
}

// runningMachine creates a Node and a Running Machine linked to it (as
// nodelink would), with the finalizer, providerID and addresses; the fake
// provider reports the instance.
func (f *fixture) runningMachine(name string, mutate ...func(*machinev1beta1.Machine)) (*machinev1beta1.Machine, *corev1.Node) {
	f.t.Helper()
	n := f.node(f.nodeName(name), corev1.ConditionTrue, nil)
	return f.machineOnNode(name, n, mutate...), n
}

func (f *fixture) machineOnNode(name string, n *corev1.Node, mutate ...func(*machinev1beta1.Machine)) *machinev1beta1.Machine {
	f.t.Helper()
	f.act.Set(func(a *fakeActuator) { a.ExistsValue = true; a.DeleteRemovesInstance = true })
	all := append([]func(*machinev1beta1.Machine){func(m *machinev1beta1.Machine) {
		m.Finalizers = []string{machinev1beta1.MachineFinalizer}
		m.Spec.ProviderID = ptr.To("test://" + f.ns + "/" + name)
		m.Status.Phase = ptr.To(machinev1beta1.PhaseRunning)
		m.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}
		m.Status.NodeRef = &corev1.ObjectReference{Kind: "Node", Name: n.Name, UID: n.UID}
	}}, mutate...)
	return f.machine(name, all...)
}

// pod creates a pod bound to node (no kubelet: the test sets it Running and
// Ready, so PodDisruptionBudgets count it as healthy).
func (f *fixture) pod(name, node string, labels map[string]string, grace int64) *corev1.Pod {
	f.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: &grace,
			Containers:                    []corev1.Container{{Name: "c", Image: "registry.example.com/app:1"}},
		},
	}
	if err := env.Client.Create(f.ctx, p); err != nil {
		f.t.Fatal(err)
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if err := env.Client.Status().Update(f.ctx, p); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// blockingPDB creates a PDB with maxUnavailable 0 over labels and sets its
// status as the disruption controller (absent in envtest) would: 0
// disruptions allowed.
func (f *fixture) blockingPDB(name string, labels map[string]string, healthy int32) *policyv1.PodDisruptionBudget {
	f.t.Helper()
	p := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
		},
	}
	if err := env.Client.Create(f.ctx, p); err != nil {
		f.t.Fatal(err)
	}
	p.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: p.Generation,
		DisruptionsAllowed: 0,
		CurrentHealthy:     healthy,
		DesiredHealthy:     healthy,
		ExpectedPods:       healthy,
	}
	if err := env.Client.Status().Update(f.ctx, p); err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *fixture) reconcile(m *machinev1beta1.Machine) (ctrl.Result, error) {
	f.t.Helper()
	return f.r.Reconcile(f.ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(m)})
}

// mustReconcile reconciles and fails the test on an error.
func (f *fixture) mustReconcile(m *machinev1beta1.Machine) ctrl.Result {
	f.t.Helper()
	res, err := f.reconcile(m)
	if err != nil {
		f.t.Fatalf("reconcile: %v", err)
	}
	return res
}

// get re-reads the Machine; nil when it is gone.
func (f *fixture) get(m *machinev1beta1.Machine) *machinev1beta1.Machine {
	f.t.Helper()
	got := &machinev1beta1.Machine{}
	if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(m), got); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		f.t.Fatal(err)
	}
	return got
}

func (f *fixture) mustGet(m *machinev1beta1.Machine) *machinev1beta1.Machine {
	f.t.Helper()
	got := f.get(m)
	if got == nil {
		f.t.Fatalf("machine %s is gone", m.Name)
	}
	return got
}

// patchMachine changes spec/metadata with a merge patch (as a user would).
func (f *fixture) patchMachine(m *machinev1beta1.Machine, mutate func(*machinev1beta1.Machine)) {
	f.t.Helper()
	cur := f.mustGet(m)
	base := cur.DeepCopy()
	mutate(cur)
	if err := env.Client.Patch(f.ctx, cur, client.MergeFrom(base)); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) deleteMachine(m *machinev1beta1.Machine) {
	f.t.Helper()
	if err := env.Client.Delete(f.ctx, m); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) getNode(name string) *corev1.Node {
	f.t.Helper()
	n := &corev1.Node{}
	if err := env.Client.Get(f.ctx, client.ObjectKey{Name: name}, n); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		f.t.Fatal(err)
	}
	return n
}

func (f *fixture) getPod(name string) *corev1.Pod {
	f.t.Helper()
	p := &corev1.Pod{}
	if err := env.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, p); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		f.t.Fatal(err)
	}
	return p
}

// wantCondition checks a condition's status, reason and message fragments.
func wantCondition(t *testing.T, m *machinev1beta1.Machine, typ machinev1beta1.ConditionType, status corev1.ConditionStatus, reason string, msgParts ...string) *machinev1beta1.Condition {
	t.Helper()
	c := conditions.Get(m.Status.Conditions, typ)
	if c == nil {
		t.Fatalf("no %s condition in %+v", typ, m.Status.Conditions)
	}
	if c.Status != status || c.Reason != reason {
		t.Fatalf("%s = %s/%s (%q), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
	}
	for _, p := range msgParts {
		if !strings.Contains(c.Message, p) {
			t.Errorf("%s message %q does not contain %q", typ, c.Message, p)
		}
	}
	return c
}

func wantPhase(t *testing.T, m *machinev1beta1.Machine, phase string) {
	t.Helper()
	if got := phaseOf(m); got != phase {
		t.Fatalf("phase = %q, want %q (conditions %+v)", got, phase, m.Status.Conditions)
	}
}

func wantCalls(t *testing.T, a *fakeActuator, want map[string]int) {
	t.Helper()
	got := a.AllCalls()
	for _, op := range []string{opCreate, opUpdate, opExists, opDelete} {
		if got[op] != want[op] {
			t.Errorf("provider calls = %v, want %v", got, want)
			return
		}
	}
}

func rawJSON(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

// metricValue reads a counter or the sample count of a histogram.
func metricValue(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	close(ch)
	var total float64
	for m := range ch {
		d := &dto.Metric{}
		if err := m.Write(d); err != nil {
			t.Fatal(err)
		}
		switch {
		case d.Counter != nil:
			total += d.Counter.GetValue()
		case d.Histogram != nil:
			total += float64(d.Histogram.GetSampleCount())
		}
	}
	return total
}
