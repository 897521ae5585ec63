// Command scale is the MachineSet scale benchmark (`make bench`; with
// --scenario=rollout, the MachineDeployment rollout benchmark): against a
// cluster running the machine, nodelink and machineset controllers with the
// kubemark provider, it scales one MachineSet 0→N and N→0 and prints how long
// each took, how many Machine create requests the API server served (exactly
// N, or the run fails) and the API requests per Machine by verb, read from
// the API server's own request counters.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/nodeutil"
	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
)

// poolLabel marks the benchmark's Machines (and selects them).
const poolLabel = "machine.openshift.io/cluster-api-machineset"

type options struct {
	kubeconfig string
	namespace  string
	name       string
	replicas   int
	timeout    time.Duration
	// scenario is "scale" (a MachineSet 0→N→0) or "rollout" (a
	// MachineDeployment of N whose template changes).
	scenario                 string
	maxSurge, maxUnavailable string
}

func main() {
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster (admin: reads the API server's /metrics)")
	flag.StringVar(&o.namespace, "namespace", "openshift-machine-api", "namespace of the Machine API")
	flag.StringVar(&o.name, "name", "bench", "name of the MachineSet to create")
	flag.IntVar(&o.replicas, "replicas", 500, "replicas to scale to")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "limit for each phase")
	flag.StringVar(&o.scenario, "scenario", "scale", "scale: a MachineSet 0→replicas→0; rollout: a MachineDeployment of replicas Machines whose template changes")
	flag.StringVar(&o.maxSurge, "max-surge", "10", "the rollout's maxSurge (a number or a percentage)")
	flag.StringVar(&o.maxUnavailable, "max-unavailable", "0", "the rollout's maxUnavailable (a number or a percentage)")
	flag.Parse()
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	ctrllog.SetLogger(logr.Discard())
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("loading the kubeconfig (--kubeconfig or $KUBECONFIG): %w", err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	s := scheme.New()
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	// The benchmark observes through informers, so measuring adds no load
	// beyond one watch per kind.
	selector := labels.SelectorFromSet(labels.Set{poolLabel: o.name})
	informers, err := cache.New(cfg, cache.Options{Scheme: s, ByObject: map[client.Object]cache.ByObject{
		&machinev1beta1.Machine{}: {Label: selector, Namespaces: map[string]cache.Config{o.namespace: {}}},
		&corev1.Node{}:            {},
	}})
	if err != nil {
		return err
	}
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		return fmt.Errorf("informers did not sync")
	}
	stages := newStageRecorder()
	machineInformer, err := informers.GetInformer(ctx, &machinev1beta1.Machine{})
	if err != nil {
		return err
	}
	nodeInformer, err := informers.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return err
	}
	if _, err := machineInformer.AddEventHandler(stages.machineHandler()); err != nil {
		return err
	}
	if _, err := nodeInformer.AddEventHandler(stages.nodeHandler()); err != nil {
		return err
	}

	if o.scenario == "rollout" {
		return runRollout(ctx, o, c, kube, informers)
	}
	ms := newMachineSet(o)
	if err := c.Delete(ctx, ms); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting a leftover MachineSet: %w", err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, o.timeout, true, func(ctx context.Context) (bool, error) {
		n, err := count(ctx, informers, o, func(*machinev1beta1.Machine, *corev1.Node) bool { return true })
		return n == 0, err
	}); err != nil {
		return fmt.Errorf("waiting for leftover Machines to go: %w", err)
	}
	ms = newMachineSet(o)
	if err := c.Create(ctx, ms); err != nil {
		return fmt.Errorf("creating MachineSet %s: %w", o.name, err)
	}
	defer func() { _ = c.Delete(context.Background(), ms) }()

	token, err := metricsToken(ctx, c, o.namespace)
	if err != nil {
		return err
	}
	targets, err := componentTargets(ctx, c, o.namespace)
	if err != nil {
		return err
	}
	compBefore, err := componentCounts(ctx, targets, token)
	if err != nil {
		return err
	}
	before, err := requestCounts(ctx, kube)
	if err != nil {
		return err
	}
	start := time.Now()
	stages.reset(start)
	if err := scale(ctx, c, ms, o.replicas); err != nil {
		return err
	}
	var allCreated time.Duration
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, o.timeout, true, func(ctx context.Context) (bool, error) {
		if allCreated == 0 {
			n, err := count(ctx, informers, o, func(*machinev1beta1.Machine, *corev1.Node) bool { return true })
			if err != nil {
				return false, err
			}
			if n >= o.replicas {
				allCreated = time.Since(start)
			}
		}
		n, err := count(ctx, informers, o, runningWithReadyNode)
		return n == o.replicas, err
	})
	up := time.Since(start)
	if err != nil {
		return fmt.Errorf("scale 0→%d: not all Running with Ready Nodes after %s: %w", o.replicas, up.Round(time.Millisecond), err)
	}
	mid, err := requestCounts(ctx, kube)
	if err != nil {
		return err
	}
	compMid, err := componentCounts(ctx, targets, token)
	if err != nil {
		return err
	}

	start = time.Now()
	if err := scale(ctx, c, ms, 0); err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, o.timeout, true, func(ctx context.Context) (bool, error) {
		return gone(ctx, informers, o)
	})
	down := time.Since(start)
	if err != nil {
		return fmt.Errorf("scale %d→0: Machines or Nodes left after %s: %w", o.replicas, down.Round(time.Millisecond), err)
	}
	after, err := requestCounts(ctx, kube)
	if err != nil {
		return err
	}
	compAfter, err := componentCounts(ctx, targets, token)
	if err != nil {
		return err
	}

	upReq, downReq := diff(mid, before), diff(after, mid)
	creates := upReq[key{verb: "POST", resource: "machines"}]
	fmt.Printf("MachineSet %s/%s, %d replicas\n", o.namespace, o.name, o.replicas)
	fmt.Printf("  0→%d: all created in %.2fs, all Running with Ready Nodes in %.2fs\n", o.replicas, allCreated.Seconds(), up.Seconds())
	fmt.Printf("  %d→0: all Machines and Nodes gone in %.2fs\n", o.replicas, down.Seconds())
	fmt.Printf("  Machine create requests accepted: %d (expected %d); rejected by the API server and retried: %d\n",
		creates, o.replicas, upReq[key{verb: "POST", resource: "machines", rejected: true}])
	stages.report(o.replicas)
	report("scale up", upReq, o.replicas)
	reportComponents("scale up", compMid, compBefore, o.replicas)
	report("scale down", downReq, o.replicas)
	reportComponents("scale down", compAfter, compMid, o.replicas)
	if creates != o.replicas {
		return fmt.Errorf("%d Machine create requests for %d replicas", creates, o.replicas)
	}
	return nil
}

func newMachineSet(o options) *machinev1beta1.MachineSet {
	lbls := map[string]string{
		"machine.openshift.io/cluster-api-cluster": "kubemark",
		poolLabel: o.name,
	}
	tmplLabels := map[string]string{"machine.openshift.io/cluster-api-machine-role": "worker"}
	for k, v := range lbls {
		tmplLabels[k] = v
	}
	return &machinev1beta1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: o.name, Namespace: o.namespace},
		Spec: machinev1beta1.MachineSetSpec{
			Replicas: new(int32),
			Selector: metav1.LabelSelector{MatchLabels: lbls},
			Template: machinev1beta1.MachineTemplateSpec{
				ObjectMeta: machinev1beta1.ObjectMeta{Labels: tmplLabels},
				Spec: machinev1beta1.MachineSpec{ProviderSpec: machinev1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: []byte(
					`{"apiVersion":"kubemark.machine-api-operator.io/v1alpha1","kind":"KubemarkMachineProviderSpec","cpu":"2","memory":"4Gi","pods":110}`,
				)}}},
			},
		},
	}
}

func scale(ctx context.Context, c client.Client, ms *machinev1beta1.MachineSet, replicas int) error {
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	if err := c.Patch(ctx, ms, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("scaling to %d: %w", replicas, err)
	}
	return nil
}

func runningWithReadyNode(m *machinev1beta1.Machine, n *corev1.Node) bool {
	if m.Status.Phase == nil || *m.Status.Phase != "Running" || m.DeletionTimestamp != nil {
		return false
	}
	return nodeutil.IsReady(n)
}

// count counts the benchmark's Machines for which ok holds; the Node passed
// is the one of the Machine's nodeRef (nil if none or not found).
func count(ctx context.Context, r client.Reader, o options, ok func(*machinev1beta1.Machine, *corev1.Node) bool) (int, error) {
	var machines machinev1beta1.MachineList
	if err := r.List(ctx, &machines, client.InNamespace(o.namespace), client.MatchingLabels{poolLabel: o.name}); err != nil {
		return 0, err
	}
	n := 0
	for i := range machines.Items {
		m := &machines.Items[i]
		var node *corev1.Node
		if m.Status.NodeRef != nil {
			node = &corev1.Node{}
			if err := r.Get(ctx, client.ObjectKey{Name: m.Status.NodeRef.Name}, node); err != nil {
				node = nil
			}
		}
		if ok(m, node) {
			n++
		}
	}
	return n, nil
}

// gone is true when no benchmark Machine and no Node named after one is left
// (kubemark Nodes are named after their Machine: generateName "<name>-").
func gone(ctx context.Context, r client.Reader, o options) (bool, error) {
	n, err := count(ctx, r, o, func(*machinev1beta1.Machine, *corev1.Node) bool { return true })
	if err != nil || n > 0 {
		return false, err
	}
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes); err != nil {
		return false, err
	}
	for _, node := range nodes.Items {
		if strings.HasPrefix(node.Name, o.name+"-") {
			return false, nil
		}
	}
	return true, nil
}

// key identifies an API request counter: verb, resource, subresource, and
// whether the API server accepted it (a 429 from priority and fairness, which
// client-go retries, counts as a separate, rejected request).
type key struct {
	verb, resource, subresource string
	rejected                    bool
}

// requestCounts reads apiserver_request_total from the API server's metrics,
// summed over everything but verb, resource and subresource.
func requestCounts(ctx context.Context, kube kubernetes.Interface) (map[key]int, error) {
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's /metrics (needs an admin kubeconfig): %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("parsing the API server's metrics: %w", err)
	}
	out := map[key]int{}
	fam := families["apiserver_request_total"]
	if fam == nil {
		return nil, fmt.Errorf("the API server exposes no apiserver_request_total")
	}
	for _, m := range fam.Metric {
		code := label(m, "code")
		k := key{label(m, "verb"), label(m, "resource"), label(m, "subresource"), code == "429" || strings.HasPrefix(code, "5")}
		out[k] += int(m.GetCounter().GetValue())
	}
	return out, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func diff(after, before map[key]int) map[key]int {
	out := map[key]int{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// Stages of a Machine's life during the scale-up, in order.
var stageNames = []string{"Machine created", "Node registered", "nodeRef set", "Node Ready", "Machine Running"}

// stageRecorder notes, from informer events, when each Machine first reached
// each stage, so the report shows where the time goes.
type stageRecorder struct {
	mu    sync.Mutex
	start time.Time
	at    map[string]map[string]time.Duration // stage → machine (node) name → time since start
}

func newStageRecorder() *stageRecorder {
	r := &stageRecorder{}
	r.reset(time.Now())
	return r
}

func (r *stageRecorder) reset(start time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.start = start
	r.at = map[string]map[string]time.Duration{}
	for _, s := range stageNames {
		r.at[s] = map[string]time.Duration{}
	}
}

func (r *stageRecorder) note(stage, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.at[stage][name]; !ok {
		r.at[stage][name] = time.Since(r.start)
	}
}

func (r *stageRecorder) onMachine(obj any) {
	m, ok := obj.(*machinev1beta1.Machine)
	if !ok {
		return
	}
	r.note("Machine created", m.Name)
	if m.Status.NodeRef != nil {
		r.note("nodeRef set", m.Name)
	}
	if m.Status.Phase != nil && *m.Status.Phase == "Running" {
		r.note("Machine Running", m.Name)
	}
}

func (r *stageRecorder) onNode(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	r.note("Node registered", n.Name)
	if nodeutil.IsReady(n) {
		r.note("Node Ready", n.Name)
	}
}

func (r *stageRecorder) machineHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    r.onMachine,
		UpdateFunc: func(_, obj any) { r.onMachine(obj) },
	}
}

func (r *stageRecorder) nodeHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    r.onNode,
		UpdateFunc: func(_, obj any) { r.onNode(obj) },
	}
}

// report prints, per stage, when half, 90% and all of the Machines had
// reached it (seconds since the scale request).
func (r *stageRecorder) report(machines int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Printf("  scale up by stage (s since the scale request: 50%% / 90%% / 100%% of the Machines):\n")
	for _, s := range stageNames {
		var ts []time.Duration
		for name, d := range r.at[s] {
			if _, ok := r.at["Machine created"][name]; ok {
				ts = append(ts, d)
			}
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		q := func(f float64) string {
			i := int(f*float64(machines)) - 1
			if i < 0 || i >= len(ts) {
				return "   -  "
			}
			return fmt.Sprintf("%6.2f", ts[i].Seconds())
		}
		fmt.Printf("    %-16s %s / %s / %s\n", s, q(0.5), q(0.9), q(1.0))
	}
}
