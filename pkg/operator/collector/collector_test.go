package collector_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/collector"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// sample is one gathered series: its labels (sorted "k=v,...") and value.
type sample struct {
	labels string
	value  float64
}

// gather collects c once into name → samples (sorted by labels).
func gather(t *testing.T, c prometheus.Collector) map[string][]sample {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering (the pedantic registry checks every series against Describe): %v", err)
	}
	out := map[string][]sample{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			out[f.GetName()] = append(out[f.GetName()], sample{strings.Join(ls, ","), m.GetGauge().GetValue()})
		}
		sort.Slice(out[f.GetName()], func(i, j int) bool { return out[f.GetName()][i].labels < out[f.GetName()][j].labels })
	}
	return out
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "collector-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// startCache starts a cache configured as the operator's (CacheOptions:
// namespace, stripped Machines and MachineSets) with cfg's identity.
func startCache(t *testing.T, cfg *rest.Config, ns string) cache.Cache {
	t.Helper()
	opts := operator.CacheOptions(ns)
	opts.Scheme = env.Scheme
	c, err := cache.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Run(t, c)
	if !c.WaitForCacheSync(t.Context()) {
		t.Fatal("cache did not start")
	}
	return c
}

// machineIn creates a Machine and sets its status (a subresource).
func machineIn(t *testing.T, ns, name string, mutate func(m *machinev1beta1.Machine)) *machinev1beta1.Machine {
	t.Helper()
	ctx := context.Background()
	m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	m.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: []byte(`{"kind":"Test","big":"` + strings.Repeat("x", 2000) + `"}`)}
	mutate(m)
	status := m.Status
	if err := env.Client.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	m.Status = status
	if err := env.Client.Status().Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	return m
}

func withPhase(phase string, providerID, node string) func(*machinev1beta1.Machine) {
	return func(m *machinev1beta1.Machine) {
		if phase != "" {
			m.Status.Phase = ptr.To(phase)
		}
		if providerID != "" {
			m.Spec.ProviderID = ptr.To(providerID)
		}
		if node != "" {
			m.Status.NodeRef = &corev1.ObjectReference{Kind: "Node", Name: node}
		}
		m.Status.Conditions = []machinev1beta1.Condition{{Type: "InstanceExists", Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	}
}

func machineSetIn(t *testing.T, ns, name string, replicas int32, st machinev1beta1.MachineSetStatus) *machinev1beta1.MachineSet {
	t.Helper()
	ctx := context.Background()
	ms := &machinev1beta1.MachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	ms.Spec.Replicas = ptr.To(replicas)
	ms.Spec.Selector.MatchLabels = map[string]string{"set": name}
	ms.Spec.Template.Labels = map[string]string{"set": name}
	if err := env.Client.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	ms.Status = st
	if err := env.Client.Status().Update(ctx, ms); err != nil {
		t.Fatal(err)
	}
	return ms
}

func ts(o client.Object) float64 { return float64(o.GetCreationTimestamp().Unix()) }

// TestSeries: every series with OpenShift's labels and this cluster's values,
// for a Machine in each phase, from a cache set up like the operator's.
func TestSeries(t *testing.T) {
	ns := newNamespace(t)
	other := newNamespace(t)
	provisioning := machineIn(t, ns, "provisioning", withPhase(machinev1beta1.PhaseProvisioning, "", ""))
	provisioned := machineIn(t, ns, "provisioned", withPhase(machinev1beta1.PhaseProvisioned, "aws:///us-east-1a/i-1", ""))
	running := machineIn(t, ns, "running", withPhase(machinev1beta1.PhaseRunning, "aws:///us-east-1a/i-2", "node-2"))
	failed := machineIn(t, ns, "failed", withPhase(machinev1beta1.PhaseFailed, "", ""))
	deleting := machineIn(t, ns, "deleting", func(m *machinev1beta1.Machine) {
		withPhase(machinev1beta1.PhaseDeleting, "aws:///us-east-1a/i-3", "node-3")(m)
		m.Finalizers = []string{"test.example.com/hold"}
	})
	if err := env.Client.Delete(context.Background(), deleting); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Patch(context.Background(), deleting, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)))
	})
	machineIn(t, ns, "new", withPhase("", "", "")) // no phase yet: counted, no timestamp series
	machineIn(t, other, "elsewhere", withPhase(machinev1beta1.PhaseRunning, "x", "y"))
	workers := machineSetIn(t, ns, "workers", 3, machinev1beta1.MachineSetStatus{Replicas: 3, ReadyReplicas: 2, AvailableReplicas: 1})
	machineSetIn(t, other, "elsewhere", 1, machinev1beta1.MachineSetStatus{})

	c := startCache(t, env.Config, ns)
	col := collector.New(c, ns)

	const v1beta1 = "machine.openshift.io/v1beta1"
	info := func(m *machinev1beta1.Machine, providerID, node, phase string) sample {
		return sample{fmt.Sprintf("api_version=%s,name=%s,namespace=%s,node=%s,phase=%s,spec_provider_id=%s", v1beta1, m.Name, ns, node, phase, providerID), ts(m)}
	}
	nameNS := "name=workers,namespace=" + ns
	want := map[string][]sample{
		"mapi_mao_collector_up":                      {{"kind=mapi_machine_items", 1}, {"kind=mapi_machineset_items", 1}},
		"mapi_machine_items":                         {{"", 6}},
		"mapi_machineset_items":                      {{"", 1}},
		"mapi_machine_set_status_replicas":           {{nameNS, 3}},
		"mapi_machine_set_status_replicas_ready":     {{nameNS, 2}},
		"mapi_machine_set_status_replicas_available": {{nameNS, 1}},
		"mapi_machine_set_spec_replicas":             {{nameNS, 3}},
		"mapi_machineset_created_timestamp_seconds":  {{"api_version=" + v1beta1 + "," + nameNS, ts(workers)}},
		"mapi_machine_created_timestamp_seconds": {
			info(deleting, "aws:///us-east-1a/i-3", "node-3", "Deleting"),
			info(failed, "", "", "Failed"),
			info(provisioned, "aws:///us-east-1a/i-1", "", "Provisioned"),
			info(provisioning, "", "", "Provisioning"),
			info(running, "aws:///us-east-1a/i-2", "node-2", "Running"),
		},
	}
	poll.Eventually(t, 20*time.Second, "the collector's series", poll.Check(func() error {
		got := gather(t, col)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("\n got %v\nwant %v", got, want)
		}
		return nil
	}))

	// The phase label follows the Machine; a deleted MachineSet's series go.
	running.Status.Phase = ptr.To(machinev1beta1.PhaseFailed)
	if err := env.Client.Status().Update(context.Background(), running); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(context.Background(), workers); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 20*time.Second, "the changed series", poll.Check(func() error {
		got := gather(t, col)
		var phases []string
		for _, s := range got["mapi_machine_created_timestamp_seconds"] {
			if strings.Contains(s.labels, "name=running,") {
				phases = append(phases, s.labels)
			}
		}
		if len(phases) != 1 || !strings.Contains(phases[0], "phase=Failed") {
			return fmt.Errorf("series of the Machine running: %v", phases)
		}
		if n := got["mapi_machineset_items"]; len(n) != 1 || n[0].value != 0 || len(got["mapi_machine_set_status_replicas"]) != 0 {
			return fmt.Errorf("MachineSet series after its deletion: %v, %v", n, got["mapi_machine_set_status_replicas"])
		}
		return nil
	}))

	// The cache holds the stripped objects only (collector.Transform).
	m := &machinev1beta1.Machine{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(provisioned), m); err != nil {
		t.Fatal(err)
	}
	if m.Spec.ProviderSpec.Value != nil || len(m.Status.Conditions) != 0 || len(m.ManagedFields) != 0 ||
		m.Spec.ProviderID == nil || *m.Spec.ProviderID != "aws:///us-east-1a/i-1" || m.ResourceVersion == "" {
		t.Errorf("cached Machine is not stripped to what the collector reads: %+v", m)
	}
}

// refusedLists counts, per resource, the requests the API server refused
// with 403 Forbidden.
type refusedLists struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *refusedLists) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusForbidden {
			r.mu.Lock()
			if r.n == nil {
				r.n = map[string]int{}
			}
			r.n[path.Base(req.URL.Path)]++
			r.mu.Unlock()
		}
		return resp, err
	})
}

func (r *refusedLists) count(resource string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[resource]
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestCollectorDownWhenListingFails: an identity that may not list Machines
// and MachineSets gets mapi_mao_collector_up 0 for both kinds and no other
// series (the informers never sync); so does a cache that cannot give an
// informer at all.
func TestCollectorDownWhenListingFails(t *testing.T) {
	ns := newNamespace(t)
	machineIn(t, ns, "running", withPhase(machinev1beta1.PhaseRunning, "p", "n"))
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":nobody"}
	refused := &refusedLists{}
	cfg.WrapTransport = refused.wrap
	col := collector.New(startCache(t, cfg, ns), ns)
	want := map[string][]sample{"mapi_mao_collector_up": {{"kind=mapi_machine_items", 0}, {"kind=mapi_machineset_items", 0}}}
	// The first scrape starts the informers; after each has tried (and was
	// refused) twice, the collector still reports both kinds down.
	if got := gather(t, col); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("first scrape: got %v, want %v", got, want)
	}
	poll.Eventually(t, 30*time.Second, "two refused lists of Machines and of MachineSets", poll.Check(func() error {
		if m, ms := refused.count("machines"), refused.count("machinesets"); m < 2 || ms < 2 {
			return fmt.Errorf("refused lists: %d of machines, %d of machinesets", m, ms)
		}
		return nil
	}))
	if got := gather(t, col); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after refused lists: got %v, want %v", got, want)
	}

	broken := collector.New(failingSource{}, ns)
	if got := gather(t, broken); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("informer error: got %v, want %v", got, want)
	}
	unsynced := collector.New(failingSource{informer: unsyncedInformer{}}, ns)
	if got := gather(t, unsynced); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("unsynced informer: got %v, want %v", got, want)
	}
}

// failingSource has no informer (err) or one that never syncs.
type failingSource struct{ informer cache.Informer }

func (f failingSource) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	if f.informer == nil {
		return nil, errors.New(`no matches for kind "Machine" in version "machine.openshift.io/v1beta1"`)
	}
	return f.informer, nil
}

func (f failingSource) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("List must not be called before the informer synced")
}

type unsyncedInformer struct{ cache.Informer }

func (unsyncedInformer) HasSynced() bool { return false }

// TestServedWhileRunning: as a manager runnable, the collector is in
// controller-runtime's registry (which the metrics server serves) while it
// runs, with the informers warm for the first scrape, and out of it after.
func TestServedWhileRunning(t *testing.T) {
	ns := newNamespace(t)
	col := collector.New(startCache(t, env.Config, ns), ns)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- col.Start(ctx) }()
	served := func() (float64, bool) {
		families, err := ctrlmetrics.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() == "mapi_mao_collector_up" {
				v := 1.0
				for _, m := range f.GetMetric() {
					v = min(v, m.GetGauge().GetValue())
				}
				return v, true
			}
		}
		return 0, false
	}
	poll.Eventually(t, 20*time.Second, "mapi_mao_collector_up 1 in controller-runtime's registry", poll.Check(func() error {
		if v, ok := served(); !ok || v != 1 {
			return fmt.Errorf("served %v, value %v", ok, v)
		}
		return nil
	}))
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, ok := served(); ok {
		t.Error("still registered after the collector stopped")
	}
}
