//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machine"
	"github.com/machine-api-operator/machine-api-operator/pkg/nodeutil"
)

// kubemarkTest starts a test that needs the kubemark provider (else it is skipped): its context
// ends after timeout, or when the test and its cleanups are done.
func kubemarkTest(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	requireKubemark(ctx, t)
	return ctx
}

// requireKubemark skips machine tests on clusters whose platform has no
// kubemark provider (they would create no instances).
func requireKubemark(ctx context.Context, t *testing.T) {
	t.Helper()
	if p := expectedOperand(ctx, t).platform; p != "External/kubemark" {
		t.Skipf("platform %s: the machine tests need the kubemark platform", p)
	}
}

// newKubemarkMachine returns a kubemark Machine whose node carries pool as
// the label e2e-pool.
func newKubemarkMachine(name, pool string) *machinev1beta1.Machine {
	return &machinev1beta1.Machine{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: operandNamespace(),
			Labels:    map[string]string{"machine.openshift.io/cluster-api-cluster": "kubemark", "e2e-pool": pool},
		},
		Spec: machinev1beta1.MachineSpec{
			ObjectMeta: machinev1beta1.ObjectMeta{Labels: map[string]string{"e2e-pool": pool}},
			ProviderSpec: machinev1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: []byte(
				`{"apiVersion":"kubemark.machine-api-operator.io/v1alpha1","kind":"KubemarkMachineProviderSpec","cpu":"4","memory":"8Gi","pods":110}`)}},
		},
	}
}

// waitRunning waits until the Machine is Running with a Ready node and
// returns the node name and how long it took from creation.
func waitRunning(ctx context.Context, t *testing.T, m *machinev1beta1.Machine) (string, time.Duration) {
	t.Helper()
	var node string
	waitFor(ctx, t, "machine "+m.Name+" Running with a Ready node", func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
			return false, err
		}
		if m.Status.Phase == nil || *m.Status.Phase != "Running" || m.Status.NodeRef == nil {
			return false, nil
		}
		n := &corev1.Node{}
		if err := cluster.Get(ctx, client.ObjectKey{Name: m.Status.NodeRef.Name}, n); err != nil {
			return false, err
		}
		node = n.Name
		if !nodeutil.IsReady(n) {
			return false, fmt.Errorf("node %s Ready condition %+v", n.Name, nodeutil.ReadyCondition(n))
		}
		return true, nil
	})
	return node, time.Since(m.CreationTimestamp.Time)
}

// createMachine creates m and deletes it when the test ends.
func createMachine(ctx context.Context, t *testing.T, m *machinev1beta1.Machine) {
	t.Helper()
	if err := cluster.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	deleteMachineOnCleanup(t, m)
}

// deleteMachines deletes those of machines not being deleted yet.
func deleteMachines(ctx context.Context, machines []machinev1beta1.Machine) error {
	for i := range machines {
		if machines[i].DeletionTimestamp == nil {
			if err := cluster.Delete(ctx, &machines[i]); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	return nil
}

func deleteMachineOnCleanup(t *testing.T, m *machinev1beta1.Machine) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = cluster.Delete(ctx, m)
	})
}

// TestMachineBecomesRunning: a kubemark Machine gets a Ready node and the
// Running phase; nodelink links them both ways.
func TestMachineBecomesRunning(t *testing.T) {
	ctx := kubemarkTest(t, 2*time.Minute)
	m := newKubemarkMachine("e2e-run-"+rand.String(5), "run")
	createMachine(ctx, t, m)
	node, took := waitRunning(ctx, t, m)
	t.Logf("machine Running with Ready node %s %s after creation", node, took.Round(100*time.Millisecond))

	// The machine controller sets nodeRef as soon as its provider's Node exists (Running);
	// nodelink annotates and labels the Node on its own watch, a moment later.
	n := &corev1.Node{}
	want := fmt.Sprintf("%s/%s", m.Namespace, m.Name)
	waitFor(ctx, t, "node "+node+" annotated with its Machine and labelled e2e-pool=run by nodelink", func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			return false, err
		}
		return n.Annotations["machine.openshift.io/machine"] == want && n.Labels["e2e-pool"] == "run", nil
	})
	// The machine controller writes spec.providerID after the status write
	// (pkg/controller/machine persistProviderID), and nodelink may link the
	// Node by its internal IP first: Running can come a moment earlier.
	waitFor(ctx, t, "machine "+m.Name+" spec.providerID", func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
			return false, err
		}
		return m.Spec.ProviderID != nil, nil
	})
	if n.Spec.ProviderID != *m.Spec.ProviderID {
		t.Errorf("providerID: machine %q, node %q", *m.Spec.ProviderID, n.Spec.ProviderID)
	}
}

// TestMachineDeletionDrains deletes a Machine running pods of a Deployment
// with a PodDisruptionBudget: the pods are evicted and rescheduled on another
// machine's node, then the Node and the Machine go away. Watches (not samples)
// prove that the Machine reported Drained=True/Drained before it was removed
// and that the number of healthy pods never fell below the budget's floor
// (a drain that deleted the pods or the Node without evictions breaks it).
func TestMachineDeletionDrains(t *testing.T) {
	ctx := kubemarkTest(t, 3*time.Minute)
	pool := "drain-" + rand.String(5)
	first := newKubemarkMachine("e2e-"+pool+"-a", pool)
	createMachine(ctx, t, first)
	firstNode, _ := waitRunning(ctx, t, first)

	w := newGuardedWorkload(ctx, t, "web", pool, 2, 1)
	waitFor(ctx, t, "2 pods Running on "+firstNode, func(ctx context.Context) (bool, error) {
		n, err := w.runningOn(ctx, firstNode)
		return n == 2, err
	})

	second := newKubemarkMachine("e2e-"+pool+"-b", pool)
	createMachine(ctx, t, second)
	secondNode, _ := waitRunning(ctx, t, second)

	floor := w.healthyFloor(ctx, t)
	healthy := w.watchHealthy(ctx, t)
	conditions := watchMachine(ctx, t, first)

	start := time.Now()
	if err := cluster.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "pods rescheduled to "+secondNode, func(ctx context.Context) (bool, error) {
		n, err := w.runningOn(ctx, secondNode)
		return n == 2, err
	})
	waitFor(ctx, t, "node "+firstNode+" removed", func(ctx context.Context) (bool, error) {
		err := cluster.Get(ctx, client.ObjectKey{Name: firstNode}, &corev1.Node{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	waitFor(ctx, t, "machine "+first.Name+" removed", func(ctx context.Context) (bool, error) {
		err := cluster.Get(ctx, client.ObjectKeyFromObject(first), &machinev1beta1.Machine{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	t.Logf("machine drained and deleted in %s", time.Since(start).Round(100*time.Millisecond))

	drained := conditions.drainedBeforeRemoval(ctx, t)
	// DrainSkipped and DrainTimedOut are True too, without evictions.
	if drained.Reason != machine.ReasonDrained {
		t.Errorf("Drained=True with reason %q (%s), want %q: every pod evicted", drained.Reason, drained.Message, machine.ReasonDrained)
	}
	fewest, when := healthy.lowest(ctx, t, w)
	t.Logf("healthy pods never fewer than %d (at %s); the budget's floor is %d", fewest, when, floor)
	if fewest < floor {
		t.Errorf("healthy pods fell to %d (%s), below the PodDisruptionBudget's floor %d", fewest, when, floor)
	}
	d := &appsv1.Deployment{}
	if err := cluster.Get(ctx, client.ObjectKeyFromObject(w.deploy), d); err != nil || d.Status.AvailableReplicas != 2 {
		t.Errorf("deployment available replicas %d (err %v), want 2", d.Status.AvailableReplicas, err)
	}
}

// machineWatch follows one Machine's Drained condition from a watch.
type machineWatch struct {
	mu sync.Mutex
	// drained is the first Drained=True condition seen.
	drained *machinev1beta1.Condition
	// drainedBeforeGone: drained was seen before the Machine was removed.
	removed, drainedBeforeGone bool
	err                        error
}

// watchMachine starts watching m (from its current resourceVersion) until
// the test ends.
func watchMachine(ctx context.Context, t *testing.T, m *machinev1beta1.Machine) *machineWatch {
	t.Helper()
	list := &machinev1beta1.MachineList{}
	sel := client.MatchingFields{"metadata.name": m.Name}
	if err := cluster.List(ctx, list, client.InNamespace(m.Namespace), sel); err != nil || len(list.Items) != 1 {
		t.Fatalf("listing machine %s: %d found (%v)", m.Name, len(list.Items), err)
	}
	mw := &machineWatch{}
	mw.observe(watch.Added, &list.Items[0])
	watchFrom(t, &machinev1beta1.MachineList{}, list.ResourceVersion, func(ev watch.Event) {
		if ev.Type == watch.Error {
			mw.mu.Lock()
			mw.err = apierrors.FromObject(ev.Object)
			mw.mu.Unlock()
			return
		}
		if m, ok := ev.Object.(*machinev1beta1.Machine); ok {
			mw.observe(ev.Type, m)
		}
	}, client.InNamespace(m.Namespace), sel)
	return mw
}

func (mw *machineWatch) observe(typ watch.EventType, m *machinev1beta1.Machine) {
	mw.mu.Lock()
	defer mw.mu.Unlock()
	if c := drainedCondition(m); c != nil && c.Status == corev1.ConditionTrue && mw.drained == nil {
		mw.drained = c
	}
	if typ == watch.Deleted {
		mw.removed = true
		mw.drainedBeforeGone = mw.drained != nil
	}
}

// drainedBeforeRemoval waits until the watch has seen the Machine removed
// and returns the Drained=True condition it had before; it fails the test
// when there was none.
func (mw *machineWatch) drainedBeforeRemoval(ctx context.Context, t *testing.T) machinev1beta1.Condition {
	t.Helper()
	waitFor(ctx, t, "the machine watch saw the removal", func(context.Context) (bool, error) {
		mw.mu.Lock()
		defer mw.mu.Unlock()
		return mw.removed, mw.err
	})
	mw.mu.Lock()
	defer mw.mu.Unlock()
	if !mw.drainedBeforeGone {
		t.Fatalf("the machine was removed without ever reporting Drained=True")
	}
	return *mw.drained
}

// TestInvalidProviderSpecFails: a providerSpec with an unknown field marks
// the Machine Failed with reason InvalidConfiguration and a message naming
// the field; no node is created.
func TestInvalidProviderSpecFails(t *testing.T) {
	ctx := kubemarkTest(t, 2*time.Minute)
	m := newKubemarkMachine("e2e-invalid-"+rand.String(5), "invalid")
	m.Spec.ProviderSpec.Value.Raw = []byte(`{"apiVersion":"kubemark.machine-api-operator.io/v1alpha1","kind":"KubemarkMachineProviderSpec","cpus":"4"}`)
	if err := cluster.Create(ctx, m); err != nil {
		// Where the validating webhook is served, admission refuses it
		// (TestWebhooksRefuseInvalidObjects); the controller-side check is
		// then proven by the machine controller's envtests.
		if !strings.Contains(err.Error(), "cpus") {
			t.Fatalf("creating machine %s: %v (want success, or a refusal naming the field cpus)", m.Name, err)
		}
		t.Logf("admission refused the invalid machine: %v", err)
		return
	}
	deleteMachineOnCleanup(t, m)
	waitFor(ctx, t, "machine "+m.Name+" Failed", func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
			return false, err
		}
		return m.Status.Phase != nil && *m.Status.Phase == "Failed", nil
	})
	if m.Status.ErrorReason == nil || *m.Status.ErrorReason != machinev1beta1.InvalidConfigurationMachineError {
		t.Errorf("errorReason = %v, want InvalidConfiguration", m.Status.ErrorReason)
	}
	if m.Status.ErrorMessage == nil || !strings.Contains(*m.Status.ErrorMessage, "cpus") {
		t.Errorf("errorMessage = %v, want it to name the field cpus", m.Status.ErrorMessage)
	}
	if err := cluster.Get(ctx, client.ObjectKey{Name: m.Name}, &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Errorf("a node exists for the invalid machine (err %v)", err)
	}
}

// guardedWorkload is a Deployment of pause pods pinned to the nodes of a
// machine pool (node label e2e-pool), guarded by a PodDisruptionBudget, in a
// namespace of its own that is removed when the test ends.
type guardedWorkload struct {
	ns     string
	labels map[string]string
	deploy *appsv1.Deployment
}

// Options (mutations of the pod spec) apply before the Deployment is created.
func newGuardedWorkload(ctx context.Context, t *testing.T, name, pool string, replicas, maxUnavailable int32, options ...func(*corev1.PodSpec)) *guardedWorkload {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-" + name + "-"}}
	if err := cluster.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Delete(context.Background(), ns) })
	labels := map[string]string{"app": "e2e-" + name}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"e2e-pool": pool},
					Containers:   []corev1.Container{{Name: name, Image: "registry.k8s.io/pause:3.10"}},
				},
			},
		},
	}
	for _, o := range options {
		o(&deploy.Spec.Template.Spec)
	}
	if err := cluster.Create(ctx, deploy); err != nil {
		t.Fatal(err)
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(maxUnavailable)),
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
		},
	}
	if err := cluster.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	return &guardedWorkload{ns: ns.Name, labels: labels, deploy: deploy}
}

// runningOn counts the workload's Running pods on node.
func (w *guardedWorkload) runningOn(ctx context.Context, node string) (int, error) {
	pods, err := w.pods(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range pods.Items {
		if p.Spec.NodeName == node && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n, nil
}

// healthyFloor waits until the workload's PodDisruptionBudget has counted
// every replica and returns its floor, status.desiredHealthy (at least 1, or
// the drain would not be guarded).
func (w *guardedWorkload) healthyFloor(ctx context.Context, t *testing.T) int {
	t.Helper()
	pdb := &policyv1.PodDisruptionBudget{}
	waitFor(ctx, t, "the PodDisruptionBudget counts every replica healthy", func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: w.deploy.Name}, pdb); err != nil {
			return false, err
		}
		st := pdb.Status
		if st.ObservedGeneration != pdb.Generation || st.ExpectedPods != *w.deploy.Spec.Replicas || st.CurrentHealthy != st.ExpectedPods {
			return false, fmt.Errorf("status %+v", st)
		}
		return true, nil
	})
	if pdb.Status.DesiredHealthy < 1 {
		t.Fatalf("PodDisruptionBudget floor %d: it guards nothing", pdb.Status.DesiredHealthy)
	}
	return int(pdb.Status.DesiredHealthy)
}

// healthyWatch follows, from a watch, which of a workload's pods count as
// healthy for its PodDisruptionBudget (Ready and not being deleted, as the
// disruption controller counts them), and the fewest healthy at any moment.
type healthyWatch struct {
	mu      sync.Mutex
	healthy map[string]bool
	fewest  int
	when    string // the event that brought the count to fewest
	err     error
}

// podHealthy is the disruption controller's notion of a healthy pod.
func podHealthy(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// watchHealthy starts following the workload's pods until the test ends.
func (w *guardedWorkload) watchHealthy(ctx context.Context, t *testing.T) *healthyWatch {
	t.Helper()
	pods, err := w.pods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hw := &healthyWatch{healthy: map[string]bool{}}
	for i := range pods.Items {
		hw.healthy[pods.Items[i].Name] = podHealthy(&pods.Items[i])
	}
	hw.fewest, hw.when = hw.count(), "the start"
	watchFrom(t, &corev1.PodList{}, pods.ResourceVersion, func(ev watch.Event) {
		hw.mu.Lock()
		defer hw.mu.Unlock()
		p, ok := ev.Object.(*corev1.Pod)
		switch {
		case ev.Type == watch.Error:
			hw.err = apierrors.FromObject(ev.Object)
			return
		case !ok:
			return
		case ev.Type == watch.Deleted:
			delete(hw.healthy, p.Name)
		default:
			hw.healthy[p.Name] = podHealthy(p)
		}
		if n := hw.count(); n < hw.fewest {
			hw.fewest, hw.when = n, fmt.Sprintf("%s pod %s", ev.Type, p.Name)
		}
	}, client.InNamespace(w.ns), client.MatchingLabels(w.labels))
	return hw
}

func (hw *healthyWatch) count() int {
	n := 0
	for _, ok := range hw.healthy {
		if ok {
			n++
		}
	}
	return n
}

// lowest waits until the watch has caught up with the workload's pods as
// they are now (so it observed every earlier change) and returns the fewest
// healthy pods it saw and when.
func (hw *healthyWatch) lowest(ctx context.Context, t *testing.T, w *guardedWorkload) (int, string) {
	t.Helper()
	waitCaughtUp(ctx, t, "pod", func(ctx context.Context) (map[string]bool, error) {
		pods, err := w.pods(ctx)
		if err != nil {
			return nil, err
		}
		now := map[string]bool{}
		for i := range pods.Items {
			now[pods.Items[i].Name] = podHealthy(&pods.Items[i])
		}
		return now, nil
	}, func() (map[string]bool, error) {
		hw.mu.Lock()
		defer hw.mu.Unlock()
		return maps.Clone(hw.healthy), hw.err
	})
	hw.mu.Lock()
	defer hw.mu.Unlock()
	return hw.fewest, hw.when
}

// pods lists the workload's pods.
func (w *guardedWorkload) pods(ctx context.Context) (*corev1.PodList, error) {
	pods := &corev1.PodList{}
	return pods, cluster.List(ctx, pods, client.InNamespace(w.ns), client.MatchingLabels(w.labels))
}

// TestForeignProviderSpecUntouched: a Machine whose providerSpec belongs to
// another provider (AWS) is never acted on by this cluster's (kubemark)
// machine controller: no phase, no finalizer, no Node; only the condition
// ProviderSupported=False/UnsupportedProvider says which provider it needs.
// Deleting it is immediate (no finalizer of ours holds it).
func TestForeignProviderSpecUntouched(t *testing.T) {
	ctx := kubemarkTest(t, 2*time.Minute)
	m := newKubemarkMachine("e2e-foreign-"+rand.String(5), "foreign")
	m.Spec.ProviderSpec.Value.Raw = []byte(`{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig","instanceType":"m6i.large"}`)
	if err := cluster.Create(ctx, m); err != nil {
		// Admission may refuse a providerSpec of another platform: then
		// the controller never sees it either.
		if !strings.Contains(err.Error(), "providerSpec") {
			t.Fatalf("creating machine %s: %v (want success, or a refusal naming providerSpec)", m.Name, err)
		}
		t.Logf("admission refused the foreign machine: %v", err)
		return
	}
	deleteMachineOnCleanup(t, m)
	waitFor(ctx, t, "machine "+m.Name+" ProviderSupported=False/UnsupportedProvider", func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
			return false, err
		}
		for _, c := range m.Status.Conditions {
			if c.Type == machine.ProviderSupportedCondition {
				if c.Status != corev1.ConditionFalse || c.Reason != machine.ReasonUnsupportedProvider || !strings.Contains(c.Message, "AWSMachineProviderConfig") {
					return false, fmt.Errorf("condition %+v", c)
				}
				return true, nil
			}
		}
		return false, nil
	})
	if m.Status.Phase != nil || len(m.Finalizers) != 0 || m.Status.ErrorReason != nil {
		t.Errorf("the foreign machine was touched: phase %v, finalizers %v, errorReason %v", ptr.Deref(m.Status.Phase, ""), m.Finalizers, m.Status.ErrorReason)
	}
	if err := cluster.Get(ctx, client.ObjectKey{Name: m.Name}, &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Errorf("a node exists for the foreign machine (err %v)", err)
	}
	if err := cluster.Delete(ctx, m); err != nil {
		t.Fatal(err)
	}
	waitGone(ctx, t, "machine "+m.Name, m)
}
