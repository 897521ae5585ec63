package machine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// blockedDrains is how many Machines' drains a PodDisruptionBudget blocks: as
// many as the controller has workers by default, so a drain that held its
// worker for the drain (or for an attempt of it) would leave none.
const blockedDrains = DefaultMaxConcurrentReconciles

// provisionBound is how long the new Machine may take to be provisioned
// while the drains are blocked. Provisioning it is two reconciles (a few
// requests each, well under a second even with -race); before, each blocked
// drain held a worker for a 20s drain attempt, so with every worker held the
// new Machine waited for one to end. 5s separates the two with room for a
// loaded machine.
const provisionBound = 5 * time.Second

// 50 Machines whose drains a PodDisruptionBudget blocks never delay the
// provisioning of a new Machine with the default worker count: each drain
// reconcile is one eviction pass that returns, so workers stay free.
func TestBlockedDrainsDoNotStarveProvisioning(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	mgr := env.NewManager(t, cfg, cache.Options{DefaultNamespaces: map[string]cache.Config{f.ns: {}}})
	// An instance exists once the Machine has a providerID; Create gives the
	// new Machine one.
	act := &fakeActuator{Groups: []string{testGroup}, CreateSetsInstance: true, ProviderID: "test://" + f.ns + "/new",
		ExistsHook: func(_ context.Context, m *machinev1beta1.Machine) (bool, error) {
			return m.Spec.ProviderID != nil && *m.Spec.ProviderID != "", nil
		}}
	r := NewReconciler(Options{Client: mgr.GetClient(), Actuator: act, Recorder: f.rec, Namespace: f.ns})
	wt := testenv.NewWorkTracker()
	// MaxConcurrentReconciles unset: the controller's default.
	testenv.Setup(t, mgr, wt, r)

	blocked := map[string]string{"app": "blocked"}
	machines := make([]*machinev1beta1.Machine, blockedDrains)
	nodes := make([]*corev1.Node, blockedDrains)
	errs := make([]error, blockedDrains)
	var wg sync.WaitGroup
	for i := range machines {
		wg.Go(func() {
			machines[i], nodes[i], errs[i] = f.runningMachineWithPod(fmt.Sprintf("blocked-%02d", i), blocked)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	f.blockingPDB("blocked", blocked, blockedDrains)
	// Delete them all before the controller starts: every drain starts at
	// once and is blocked.
	for i := range machines {
		wg.Go(func() { errs[i] = env.Client.Delete(f.ctx, machines[i]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}

	testenv.Run(t, mgr)
	poll.Eventually(t, 15*time.Second, "every drain to have started (node cordoned) and a reconcile of each to have returned", func(context.Context) (bool, error) {
		nodeList := &corev1.NodeList{}
		if err := env.Client.List(f.ctx, nodeList); err != nil {
			return false, err
		}
		cordoned := map[string]bool{}
		for _, n := range nodeList.Items {
			cordoned[n.Name] = n.Spec.Unschedulable
		}
		for i, m := range machines {
			if !cordoned[nodes[i].Name] || wt.Reconciles(request(m)) == 0 {
				return false, fmt.Errorf("machine %s: node cordoned %v, %d reconciles", m.Name, cordoned[nodes[i].Name], wt.Reconciles(request(m)))
			}
		}
		return true, nil
	})

	// A new Machine is provisioned promptly while all of them stay blocked.
	start := time.Now()
	m := f.machine("new")
	poll.Eventually(t, provisionBound, "the new Machine to be provisioned", func(context.Context) (bool, error) {
		got := f.mustGet(m)
		return got.Spec.ProviderID != nil && phaseOf(got) == machinev1beta1.PhaseProvisioned, nil
	})
	t.Logf("new Machine provisioned after %s with %d drains blocked", time.Since(start).Round(time.Millisecond), blockedDrains)
	for _, bm := range machines {
		got := f.mustGet(bm)
		if conditions.IsTrue(got.Status.Conditions, DrainedCondition) || f.getPod(bm.Name) == nil {
			t.Fatalf("drain of %s no longer blocked: %+v", bm.Name, got.Status.Conditions)
		}
	}

	// Each blocked drain reports its eviction results: the pod and the PDB.
	poll.Eventually(t, 15*time.Second, "every Machine to name the PodDisruptionBudget that blocks it", func(context.Context) (bool, error) {
		for _, bm := range machines {
			c := conditions.Get(f.mustGet(bm).Status.Conditions, DrainedCondition)
			want := fmt.Sprintf("evicting %s/%s: blocked by PodDisruptionBudget %[1]s/blocked", f.ns, bm.Name)
			if c == nil || c.Reason != ReasonDrainInProgress || !strings.Contains(c.Message, want) {
				return false, fmt.Errorf("machine %s: Drained condition %+v", bm.Name, c)
			}
		}
		return true, nil
	})
	if n := act.Calls(opDelete); n != 0 {
		t.Errorf("an instance was deleted although its drain is blocked: %d Delete calls", n)
	}
}

// runningMachineWithPod creates, without failing the test (it runs in a
// goroutine), a Node, a Running Machine linked to it and a Running, Ready pod
// on it with the given labels.
func (f *fixture) runningMachineWithPod(name string, labels map[string]string) (*machinev1beta1.Machine, *corev1.Node, error) {
	ctx := f.ctx
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: f.nodeName(name)}}
	if err := env.Client.Create(ctx, n); err != nil {
		return nil, nil, err
	}
	f.t.Cleanup(func() { _ = env.Client.Delete(context.Background(), n) })
	m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name, Finalizers: []string{machinev1beta1.MachineFinalizer}}}
	m.Spec.ProviderSpec = providerSpec()
	m.Spec.ProviderID = ptr.To("test://" + f.ns + "/" + name)
	if err := env.Client.Create(ctx, m); err != nil {
		return nil, nil, err
	}
	m.Status.Phase = ptr.To(machinev1beta1.PhaseRunning)
	m.Status.NodeRef = &corev1.ObjectReference{Kind: "Node", Name: n.Name, UID: n.UID}
	if err := env.Client.Status().Update(ctx, m); err != nil {
		return nil, nil, err
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{NodeName: n.Name, TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{Name: "c", Image: "registry.example.com/app:1"}}},
	}
	if err := env.Client.Create(ctx, p); err != nil {
		return nil, nil, err
	}
	// Running and Ready: the PodDisruptionBudget counts it as healthy.
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if err := env.Client.Status().Update(ctx, p); err != nil {
		return nil, nil, err
	}
	return m, n, nil
}

func request(m *machinev1beta1.Machine) reconcile.Request {
	return reconcile.Request{NamespacedName: client.ObjectKeyFromObject(m)}
}
