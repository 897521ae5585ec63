package machinehealthcheck

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

var env *testenv.Env

// Test remediation kinds, installed as extra CRDs.
const (
	remGroup   = "remediation.test.io"
	remVersion = "v1alpha1"
)

// TestMain starts one API server for the package, with a test external
// remediation API. MHC_TEST_LOG=1 shows the controller's logs.
func TestMain(m *testing.M) {
	testenv.MainWith(m, &env, testenv.Options{LogEnv: "MHC_TEST_LOG", ExtraCRDs: []*apiextensionsv1.CustomResourceDefinition{
		testCRD("TestRemediationTemplate", "testremediationtemplates"),
		testCRD("TestRemediation", "testremediations"),
	}})
}

func testCRD(kind, plural string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + remGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: remGroup,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: remVersion, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
}

const (
	waitTimeout = 30 * time.Second
	// soon: requeues due within this count as work still to do when a test
	// waits for the controller to settle (the timers of the tests' Node
	// conditions and backoffs are minutes away).
	soon = 10 * time.Second
)

// recorder is the shared fake; find returns the events of reason (about object name, when not
// empty) as "Type Reason Object: note".
type recorder struct{ testenv.Recorder }

func (r *recorder) find(reason, name string) []string { return r.Find(reason, name) }

// requestCounter counts the API requests (watches excluded) sent through
// the controller's rest.Config, remembering the last few.
type requestCounter struct {
	n    atomic.Int64
	mu   sync.Mutex
	last []string
}

type countingTransport struct {
	rt http.RoundTripper
	c  *requestCounter
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Query().Get("watch") != "true" {
		t.c.n.Add(1)
		t.c.mu.Lock()
		t.c.last = append(t.c.last, req.Method+" "+req.URL.Path)
		if len(t.c.last) > 20 {
			t.c.last = t.c.last[1:]
		}
		t.c.mu.Unlock()
	}
	return t.rt.RoundTrip(req)
}

func (c *requestCounter) reset() {
	c.n.Store(0)
	c.mu.Lock()
	c.last = nil
	c.mu.Unlock()
}

func (c *requestCounter) recent() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.last...)
}

// harness runs the controller in its own manager for one test namespace.
// The test writes through h.c (not counted).
type harness struct {
	t        *testing.T
	ctx      context.Context
	ns       string
	c        client.Client
	cached   client.Client // the manager's cache-backed client
	wt       *testenv.WorkTracker
	rec      *recorder
	requests *requestCounter
	stopFn   func() // stops the running manager
}

// newHarness starts the controller; opts adjust its Options (Namespace and
// Recorder are set).
func newHarness(t *testing.T, opts ...func(*Options)) *harness {
	t.Helper()
	h := &harness{
		t:        t,
		ctx:      t.Context(),
		ns:       testenv.CreateNamespace(t, env.Client, "mhc-"),
		c:        env.Client,
		rec:      &recorder{},
		wt:       testenv.NewWorkTracker(),
		requests: &requestCounter{},
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 500, 1000
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt: rt, c: h.requests} }
	nsOnly := cache.ByObject{Namespaces: map[string]cache.Config{h.ns: {}}}
	mgr := env.NewManager(t, cfg, cache.Options{ByObject: map[client.Object]cache.ByObject{
		&machinev1beta1.Machine{}:            nsOnly,
		&machinev1beta1.MachineHealthCheck{}: nsOnly,
	}})
	o := Options{Namespace: h.ns, Recorder: h.rec}
	for _, f := range opts {
		f(&o)
	}
	r := NewReconciler(o)
	h.cached = mgr.GetClient()
	testenv.Setup(t, mgr, h.wt, r)
	h.stopFn = testenv.StartManager(t, mgr)
	t.Cleanup(h.stop)
	return h
}

func (h *harness) stop() {
	if h.stopFn != nil {
		h.stopFn()
		h.stopFn = nil
	}
}

func (h *harness) eventually(what string, f func() error) {
	h.t.Helper()
	poll.Eventually(h.t, waitTimeout, what, poll.Check(f))
}

// whenSettled waits until the controller has handled every change made so
// far (its cache has the Nodes and the test's Machines and
// MachineHealthChecks as the API server has them, and no reconcile is running
// or due soon), then checks f.
func (h *harness) whenSettled(what string, f func() error) {
	h.t.Helper()
	h.wt.Settle(h.t, waitTimeout, soon,
		testenv.CaughtUp(h.c, h.cached, &corev1.NodeList{}),
		testenv.CaughtUp(h.c, h.cached, &machinev1beta1.MachineList{}, client.InNamespace(h.ns)),
		testenv.CaughtUp(h.c, h.cached, &machinev1beta1.MachineHealthCheckList{}, client.InNamespace(h.ns)))
	if err := f(); err != nil {
		h.t.Fatalf("%s: %v", what, err)
	}
}

var unhealthyConditions = []machinev1beta1.UnhealthyCondition{
	{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Timeout: metav1.Duration{Duration: 5 * time.Minute}},
	{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Timeout: metav1.Duration{Duration: 5 * time.Minute}},
}

// newMHC creates a MachineHealthCheck selecting mhc=<name>.
func (h *harness) newMHC(name string, mutate ...func(*machinev1beta1.MachineHealthCheck)) *machinev1beta1.MachineHealthCheck {
	h.t.Helper()
	mhc := &machinev1beta1.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name},
		Spec: machinev1beta1.MachineHealthCheckSpec{
			Selector:            metav1.LabelSelector{MatchLabels: map[string]string{"mhc": name}},
			UnhealthyConditions: unhealthyConditions,
		},
	}
	for _, f := range mutate {
		f(mhc)
	}
	if err := h.c.Create(h.ctx, mhc); err != nil {
		h.t.Fatal(err)
	}
	return mhc
}

// poke makes the controller reconcile MachineHealthCheck name now (an
// annotation change), as a requeue would when the fake clock has advanced.
func (h *harness) poke(name string) {
	h.t.Helper()
	h.patchMHC(name, func(m *machinev1beta1.MachineHealthCheck) {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations["test/poke"] = fmt.Sprint(time.Now().UnixNano())
	})
}

func (h *harness) mhc(name string) *machinev1beta1.MachineHealthCheck {
	h.t.Helper()
	return testenv.Get[machinev1beta1.MachineHealthCheck](h.t, h.c, h.ns, name)
}

func (h *harness) patchMHC(name string, f func(*machinev1beta1.MachineHealthCheck)) {
	h.t.Helper()
	mhc := h.mhc(name)
	base := mhc.DeepCopy()
	f(mhc)
	if err := h.c.Patch(h.ctx, mhc, client.MergeFrom(base)); err != nil {
		h.t.Fatal(err)
	}
}

// machineOpts describe a test Machine.
type machineOpts struct {
	mhc    string            // label mhc=<mhc>
	owned  bool              // a controller ownerReference (a MachineSet of its own)
	owner  string            // a controller ownerReference to the MachineSet of this name (shared)
	node   string            // status.nodeRef.name
	failed bool              // status.phase Failed
	labels map[string]string // extra labels
}

func (h *harness) newMachine(name string, o machineOpts) *machinev1beta1.Machine {
	h.t.Helper()
	m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name, Labels: map[string]string{"mhc": o.mhc}}}
	for k, v := range o.labels {
		m.Labels[k] = v
	}
	if o.owned && o.owner == "" {
		o.owner = "ms-" + name // each Machine its own MachineSet: no backoff between them
	}
	if o.owner != "" {
		m.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "machine.openshift.io/v1beta1", Kind: "MachineSet", Name: o.owner,
			UID: types.UID(h.ns + "-" + o.owner), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}}
	}
	if err := h.c.Create(h.ctx, m); err != nil {
		h.t.Fatal(err)
	}
	if o.node != "" || o.failed {
		base := m.DeepCopy()
		if o.node != "" {
			m.Status.NodeRef = &corev1.ObjectReference{Kind: "Node", Name: o.node}
		}
		if o.failed {
			m.Status.Phase = ptr.To(machinev1beta1.PhaseFailed)
		}
		if err := h.c.Status().Patch(h.ctx, m, client.MergeFrom(base)); err != nil {
			h.t.Fatal(err)
		}
	}
	return m
}

// exists reports whether the Machine exists (being deleted or not).
func (h *harness) exists(name string) bool {
	h.t.Helper()
	err := h.c.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: name}, &machinev1beta1.Machine{})
	if err != nil && !apierrors.IsNotFound(err) {
		h.t.Fatal(err)
	}
	return err == nil
}

func (h *harness) waitGone(name string) {
	h.t.Helper()
	h.eventually("Machine "+name+" deleted", func() error {
		if h.exists(name) {
			return fmt.Errorf("still exists")
		}
		return nil
	})
}

// createNode creates a Node <ns>-<suffix> with the given Ready status and
// transition time; it is deleted when the test ends.
func (h *harness) createNode(suffix string, ready corev1.ConditionStatus, since time.Time, mutate ...func(*corev1.Node)) string {
	h.t.Helper()
	testenv.CreateNode(h.t, h.c, h.ns+"-"+suffix, ready, since, mutate...)
	return h.ns + "-" + suffix
}

func (h *harness) setNodeReady(name string, ready corev1.ConditionStatus, since time.Time) {
	h.t.Helper()
	testenv.MustSetNodeReady(h.t, h.c, name, ready, since)
}

func (h *harness) patchNode(name string, f func(*corev1.Node)) {
	h.t.Helper()
	n := &corev1.Node{}
	if err := h.c.Get(h.ctx, types.NamespacedName{Name: name}, n); err != nil {
		h.t.Fatal(err)
	}
	base := n.DeepCopy()
	f(n)
	if err := h.c.Patch(h.ctx, n, client.MergeFrom(base)); err != nil {
		h.t.Fatal(err)
	}
}

// waitStatus waits until the MHC's status has these counts and check (if
// any) accepts it.
func (h *harness) waitStatus(name string, expected, healthy int, allowed int32, check func(machinev1beta1.MachineHealthCheckStatus) error) machinev1beta1.MachineHealthCheckStatus {
	h.t.Helper()
	var st machinev1beta1.MachineHealthCheckStatus
	h.eventually("status of "+name, func() error {
		st = h.mhc(name).Status
		if st.ExpectedMachines == nil || st.CurrentHealthy == nil ||
			*st.ExpectedMachines != expected || *st.CurrentHealthy != healthy || st.RemediationsAllowed != allowed {
			return fmt.Errorf("status %s, want expected/healthy/allowed %d/%d/%d", statusString(st), expected, healthy, allowed)
		}
		if check != nil {
			return check(st)
		}
		return nil
	})
	return st
}

func statusString(st machinev1beta1.MachineHealthCheckStatus) string {
	s := fmt.Sprintf("expected=%v healthy=%v allowed=%d", ptrVal(st.ExpectedMachines), ptrVal(st.CurrentHealthy), st.RemediationsAllowed)
	for _, c := range st.Conditions {
		s += fmt.Sprintf(" %s=%s/%s", c.Type, c.Status, c.Reason)
	}
	return s
}

func ptrVal(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// hasCondition returns a check that t has status and reason.
func hasCondition(t machinev1beta1.ConditionType, status corev1.ConditionStatus, reason string) func(machinev1beta1.MachineHealthCheckStatus) error {
	return func(st machinev1beta1.MachineHealthCheckStatus) error {
		c := conditions.Get(st.Conditions, t)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("condition %s = %+v, want %s/%s", t, c, status, reason)
		}
		return nil
	}
}

func gaugeValue(vec *prometheus.GaugeVec, name, namespace string) (float64, bool) {
	return metricValue(vec, name, namespace)
}

func metricValue(c prometheus.Collector, name, namespace string) (float64, bool) {
	ch := make(chan prometheus.Metric, 1000)
	c.Collect(ch)
	close(ch)
	for m := range ch {
		d := &dto.Metric{}
		if err := m.Write(d); err != nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range d.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["name"] == name && labels["namespace"] == namespace {
			if d.GetGauge() != nil {
				return d.GetGauge().GetValue(), true
			}
			return d.GetCounter().GetValue(), true
		}
	}
	return 0, false
}
