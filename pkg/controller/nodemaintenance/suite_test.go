package nodemaintenance

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	nmv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

var (
	env  *testenv.Env
	kube kubernetes.Interface
	rec  = newRecorder()
	// clk is the controller's Options.Clock. Requeues still wait real time: a test that advances
	// the clock wakes the controller itself (wakeNode).
	clk = &testenv.Clock{}
)

// TestMain starts one API server and one manager running the controller.
// Set NODEMAINTENANCE_TEST_LOG=1 to see the controller's logs.
func TestMain(m *testing.M) {
	testenv.MainWith(m, &env, testenv.Options{LogEnv: "NODEMAINTENANCE_TEST_LOG", Before: startController})
}

// startController creates the lease namespace (the install does, not the controller) and runs the
// controller in one manager for the package.
func startController(e *testenv.Env) (stop func(), err error) {
	if kube, err = kubernetes.NewForConfig(e.Config); err != nil {
		return nil, err
	}
	leaseNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: DefaultLeaseNamespace}}
	if err := e.Client.Create(context.Background(), leaseNS); err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{Scheme: e.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return nil, err
	}
	r := NewReconciler(Options{KubeClient: kube, Recorder: rec, Clock: clk, PollInterval: 200 * time.Millisecond})
	if err := r.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: 2}); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		}
	}, nil
}

// recorder is the shared fake with events as "<object name> <type> <reason>: <note>"; wait
// waits for events of reasons about name, waitExact for the given events, has tells whether one of
// reason about name was recorded.
type recorder struct{ testenv.Recorder }

func newRecorder() *recorder {
	return &recorder{testenv.Recorder{Format: func(e testenv.Event) string {
		return e.Object + " " + e.Type + " " + e.Reason + ": " + e.Note
	}}}
}

func (r *recorder) wait(t *testing.T, name string, reasons ...string) {
	t.Helper()
	r.Wait(t, waitTimeout, name, reasons...)
}

func (r *recorder) waitExact(t *testing.T, events ...string) {
	t.Helper()
	r.WaitExact(t, waitTimeout, events...)
}

func (r *recorder) has(name, reason string) bool { return r.Has(reason, name) }

const waitTimeout = 30 * time.Second

func createNode(t *testing.T, name string, mutate ...func(*corev1.Node)) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, f := range mutate {
		f(n)
	}
	if err := env.Client.Create(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), n) })
}

func getNode(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	return n
}

func createNamespace(t *testing.T, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if name == "" {
		ns.GenerateName = "nm-"
	}
	if err := env.Client.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return ns.Name
}

// createPod creates a pod bound to node, owned by a ReplicaSet (as a
// controller), with no termination grace period so that an eviction
// deletes it at once (envtest has no kubelet).
func createPod(t *testing.T, ns, name, node string, labels map[string]string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "0a7d1f1c-0000-4000-8000-000000000001", Controller: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers:                    []corev1.Container{{Name: "c", Image: "example.com/c"}},
		},
	}
	for _, f := range mutate {
		f(p)
	}
	if err := env.Client.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	// Running (the eviction API ignores PDBs for Pending pods), not Ready.
	p.Status.Phase = corev1.PodRunning
	if err := env.Client.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// setPodReady gives the pod a Ready condition of status s.
func setPodReady(t *testing.T, p *corev1.Pod, s corev1.ConditionStatus) {
	t.Helper()
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: s}}
	if err := env.Client.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

// createPDB creates a PodDisruptionBudget selecting labels, with the status
// the disruption controller (absent in envtest) would write.
func createPDB(t *testing.T, ns, name string, labels map[string]string, allowed int32) *policyv1.PodDisruptionBudget {
	t.Helper()
	ctx := context.Background()
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: labels},
		},
	}
	if err := env.Client.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	setPDBAllowed(t, pdb, allowed)
	return pdb
}

func setPDBAllowed(t *testing.T, pdb *policyv1.PodDisruptionBudget, allowed int32) {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pdb), pdb); err != nil {
		t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation,
		DisruptionsAllowed: allowed,
		// The pods are not Ready (no kubelet): keep the budget unmet so that
		// their eviction depends on disruptionsAllowed alone.
		CurrentHealthy: 0,
		DesiredHealthy: 1,
		ExpectedPods:   2,
	}
	if err := env.Client.Status().Update(ctx, pdb); err != nil {
		t.Fatal(err)
	}
}

func createNM(t *testing.T, name, node string, mutate ...func(*nmv1beta1.NodeMaintenance)) *nmv1beta1.NodeMaintenance {
	t.Helper()
	nm := &nmv1beta1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       nmv1beta1.NodeMaintenanceSpec{NodeName: node, Reason: "test"},
	}
	for _, f := range mutate {
		f(nm)
	}
	if err := env.Client.Create(context.Background(), nm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteNM(t, name, true) })
	return nm
}

// deleteNM deletes a NodeMaintenance and, if wait, waits until it is gone.
func deleteNM(t *testing.T, name string, wait bool) {
	t.Helper()
	nm := &nmv1beta1.NodeMaintenance{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Delete(context.Background(), nm); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if !wait {
		return
	}
	poll.Eventually(t, waitTimeout, "NodeMaintenance "+name+" to be gone", func(ctx context.Context) (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Name: name}, nm)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("get: %v, finalizers %v", err, nm.Finalizers)
	})
}

func getNM(t *testing.T, name string) *nmv1beta1.NodeMaintenance {
	t.Helper()
	nm := &nmv1beta1.NodeMaintenance{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, nm); err != nil {
		t.Fatal(err)
	}
	return nm
}

// waitPhase waits until the NodeMaintenance is in phase and check (may be
// nil) accepts its status.
func waitPhase(t *testing.T, name string, phase nmv1beta1.MaintenancePhase, check func(nmv1beta1.NodeMaintenanceStatus) bool) *nmv1beta1.NodeMaintenance {
	t.Helper()
	var nm *nmv1beta1.NodeMaintenance
	poll.Eventually(t, waitTimeout, fmt.Sprintf("NodeMaintenance %s in phase %s", name, phase), func(ctx context.Context) (bool, error) {
		nm = &nmv1beta1.NodeMaintenance{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, nm); err != nil {
			return false, err
		}
		if nm.Status.Phase == phase && (check == nil || check(nm.Status)) {
			return true, nil
		}
		return false, fmt.Errorf("status %+v", nm.Status)
	})
	return nm
}

// podGone returns nil when the pod no longer exists, else why not.
func podGone(p *corev1.Pod) error {
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), &corev1.Pod{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("pod %s/%s still there (get: %v)", p.Namespace, p.Name, err)
}

// taintKeys lists the node's taint keys, leaving out the not-ready taint
// the API server's admission puts on new nodes.
func taintKeys(n *corev1.Node) []string {
	var out []string
	for _, t := range n.Spec.Taints {
		if t.Key != corev1.TaintNodeNotReady {
			out = append(out, t.Key)
		}
	}
	return out
}
