package kubemark

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubemarkv1alpha1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/kubemark/v1alpha1"
	"github.com/machine-api-operator/machine-api-operator/pkg/nodeutil"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

const testNamespace = "kubemark-test"

var machineSeq atomic.Int64

// setup creates the test namespace (and kube-node-lease, should the API
// server not have yet) and returns an actuator on a fake clock.
func setup(t *testing.T, opts Options) (*Actuator, *clocktesting.FakePassiveClock) {
	t.Helper()
	ctx := t.Context()
	for _, ns := range []string{testNamespace, corev1.NamespaceNodeLease} {
		err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	clock := clocktesting.NewFakePassiveClock(time.Now())
	opts.Client = env.Client
	opts.Clock = clock
	return NewActuator(opts), clock
}

// newMachine creates a Machine with the given providerSpec fields (JSON
// members after apiVersion and kind) in the API server, so it has a UID and a
// creationTimestamp.
func newMachine(t *testing.T, specFields string) *machinev1beta1.Machine {
	t.Helper()
	raw := `{"apiVersion":"kubemark.machine-api-operator.io/v1alpha1","kind":"KubemarkMachineProviderSpec"`
	if specFields != "" {
		raw += "," + specFields
	}
	raw += "}"
	m := &machinev1beta1.Machine{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%.40s-%d", strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")), machineSeq.Add(1)),
			Namespace: testNamespace,
			Labels: map[string]string{
				machinev1beta1.MachineClusterIDLabel:            "kubemark",
				"machine.openshift.io/cluster-api-machine-role": "worker",
			},
		},
		Spec: machinev1beta1.MachineSpec{
			ObjectMeta:   machinev1beta1.ObjectMeta{Labels: map[string]string{"node-role.kubernetes.io/worker": "", "pool": "a"}},
			ProviderSpec: machinev1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: []byte(raw)}},
		},
	}
	if err := env.Client.Create(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = env.Client.Delete(ctx, m)
		_ = env.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: m.Name}})
		_ = env.Client.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: corev1.NamespaceNodeLease}})
	})
	return m
}

func getNode(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatalf("getting node %s: %v", name, err)
	}
	return n
}

func getLease(t *testing.T, name string) *coordinationv1.Lease {
	t.Helper()
	l := &coordinationv1.Lease{}
	err := env.Client.Get(t.Context(), leaseKey(name), l)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func providerStatus(t *testing.T, m *machinev1beta1.Machine) *kubemarkv1alpha1.KubemarkMachineProviderStatus {
	t.Helper()
	if m.Status.ProviderStatus == nil {
		t.Fatal("no providerStatus")
	}
	st := &kubemarkv1alpha1.KubemarkMachineProviderStatus{}
	if err := json.Unmarshal(m.Status.ProviderStatus.Raw, st); err != nil {
		t.Fatal(err)
	}
	if st.APIVersion != kubemarkv1alpha1.GroupVersion.String() || st.Kind != kubemarkv1alpha1.ProviderStatusKind {
		t.Errorf("providerStatus type %s %s", st.APIVersion, st.Kind)
	}
	return st
}

// requeue asserts that err is a RequeueAfterError and returns its delay.
func requeue(t *testing.T, err error) time.Duration {
	t.Helper()
	r, ok := provider.AsRequeueAfter(err)
	if !ok {
		t.Fatalf("want a RequeueAfterError, got %v", err)
	}
	return r.After
}

func TestCreateRegistersNode(t *testing.T) {
	a, _ := setup(t, Options{})
	ctx := t.Context()
	m := newMachine(t, `"cpu":"4","memory":"8Gi","pods":50`)

	if ok, err := a.Exists(ctx, m); err != nil || ok {
		t.Fatalf("Exists before Create: %v, %v", ok, err)
	}
	if err := a.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	n := getNode(t, m.Name)
	wantID := "kubemark://" + testNamespace + "/" + m.Name
	if n.Spec.ProviderID != wantID {
		t.Errorf("node providerID %q, want %q", n.Spec.ProviderID, wantID)
	}
	for k, v := range map[string]string{
		"kubernetes.io/hostname":           m.Name,
		"kubernetes.io/os":                 "linux",
		"kubernetes.io/arch":               "amd64",
		"node.kubernetes.io/instance-type": "kubemark",
		"node-role.kubernetes.io/worker":   "",
		"pool":                             "a",
	} {
		if got, ok := n.Labels[k]; !ok || got != v {
			t.Errorf("node label %s = %q (present %v), want %q", k, got, ok, v)
		}
	}
	if _, ok := n.Labels[machinev1beta1.MachineClusterIDLabel]; ok {
		t.Error("the Machine's own labels were copied to the node")
	}
	if n.Annotations[KwokNodeAnnotation] != "fake" {
		t.Errorf("node annotations %v", n.Annotations)
	}
	for _, rl := range []corev1.ResourceList{n.Status.Capacity, n.Status.Allocatable} {
		if rl.Cpu().Cmp(resource.MustParse("4")) != 0 || rl.Memory().Cmp(resource.MustParse("8Gi")) != 0 || rl.Pods().Value() != 50 {
			t.Errorf("node resources %v", rl)
		}
	}
	for _, mf := range n.ManagedFields {
		if mf.Subresource == "status" {
			t.Errorf("registering took a separate status write: %+v", mf)
		}
	}
	ip := NodeIP(testNamespace, m.Name, 0).String()
	wantAddrs := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: m.Name}}
	if fmt.Sprint(n.Status.Addresses) != fmt.Sprint(wantAddrs) {
		t.Errorf("node addresses %v, want %v", n.Status.Addresses, wantAddrs)
	}

	// The Machine fields the provider owns.
	if m.Spec.ProviderID == nil || *m.Spec.ProviderID != wantID {
		t.Errorf("machine providerID %v", m.Spec.ProviderID)
	}
	if fmt.Sprint(m.Status.Addresses) != fmt.Sprint(wantAddrs) {
		t.Errorf("machine addresses %v, want %v", m.Status.Addresses, wantAddrs)
	}
	st := providerStatus(t, m)
	if st.NodeName != m.Name || st.State != kubemarkv1alpha1.InstanceRunning || st.RegisteredAt == nil ||
		!st.RegisteredAt.Equal(&n.CreationTimestamp) || st.NextHealthTransition != nil {
		t.Errorf("providerStatus %+v", st)
	}

	if ok, err := a.Exists(ctx, m); err != nil || !ok {
		t.Fatalf("Exists after Create: %v, %v", ok, err)
	}
	// Create again (a retry after a lost response) adopts the node unchanged.
	rv := n.ResourceVersion
	m2 := m.DeepCopy()
	m2.Spec.ProviderID, m2.Status.Addresses, m2.Status.ProviderStatus = nil, nil, nil
	if err := a.Create(ctx, m2); err != nil {
		t.Fatal(err)
	}
	if getNode(t, m.Name).ResourceVersion != rv {
		t.Error("second Create changed the node")
	}
	if *m2.Spec.ProviderID != wantID || fmt.Sprint(m2.Status.Addresses) != fmt.Sprint(wantAddrs) {
		t.Errorf("second Create: machine %v %v", *m2.Spec.ProviderID, m2.Status.Addresses)
	}
	// Update on a healthy node without a health policy changes nothing and
	// does not ask to be called back.
	if err := a.Update(ctx, m2); err != nil {
		t.Fatalf("Update: %v", err)
	}
	if getNode(t, m.Name).ResourceVersion != rv {
		t.Error("Update changed a healthy node")
	}
}

// TestCreateDefaultsAndUniqueIP runs with Nodes read directly (a LIST per
// Create) and from an informer cache with the InternalIP index, as
// machine-controller-manager does.
func TestCreateDefaultsAndUniqueIP(t *testing.T) {
	for _, cached := range []bool{false, true} {
		t.Run(map[bool]string{false: "direct", true: "cached"}[cached], func(t *testing.T) {
			ctx := t.Context()
			var opts Options
			if cached {
				opts.NodeReader = indexedNodeCache(t)
			}
			a, _ := setup(t, opts)
			m := newMachine(t, "")
			// Another node already has this machine's first-choice IP.
			taken := NodeIP(testNamespace, m.Name, 0).String()
			squatter := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: m.Name + "-squatter"}}
			if err := env.Client.Create(ctx, squatter); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), squatter) })
			squatter.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: taken}}
			if err := env.Client.Status().Update(ctx, squatter); err != nil {
				t.Fatal(err)
			}
			if cached {
				waitCached(t, opts.NodeReader, taken)
			}

			if err := a.Create(ctx, m); err != nil {
				t.Fatal(err)
			}
			n := getNode(t, m.Name)
			if got := n.Status.Addresses[0].Address; got == taken || got != NodeIP(testNamespace, m.Name, 1).String() {
				t.Errorf("InternalIP %s; taken %s, want the second candidate %s", got, taken, NodeIP(testNamespace, m.Name, 1))
			}
			if c := n.Status.Capacity; c.Cpu().String() != "2" || c.Memory().String() != "4Gi" || c.Pods().String() != "110" {
				t.Errorf("default capacity %v", c)
			}
			if cached {
				// Exists reads the cache: true once the new Node is in it.
				poll.Eventually(t, 10*time.Second, "Exists true through the cache", func(ctx context.Context) (bool, error) {
					return a.Exists(ctx, m)
				})
			}
		})
	}
}

// indexedNodeCache starts an informer cache of Nodes with the
// IndexNodeInternalIP index, stopped when the test ends.
func indexedNodeCache(t *testing.T) client.Reader {
	t.Helper()
	c, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := RegisterIndexes(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	testenv.Run(t, c)
	if _, err := c.GetInformer(t.Context(), &corev1.Node{}); err != nil {
		t.Fatal(err)
	}
	if !c.WaitForCacheSync(t.Context()) {
		t.Fatal("node cache did not sync")
	}
	return c
}

// waitCached waits until the cache's index knows a Node with InternalIP ip.
func waitCached(t *testing.T, r client.Reader, ip string) {
	t.Helper()
	poll.Eventually(t, 10*time.Second, "the node with InternalIP "+ip+" in the cache", func(ctx context.Context) (bool, error) {
		nodes := &corev1.NodeList{}
		if err := r.List(ctx, nodes, client.MatchingFields{IndexNodeInternalIP: ip}); err != nil {
			return false, err
		}
		return len(nodes.Items) == 1, fmt.Errorf("%d nodes", len(nodes.Items))
	})
}

func TestCreateBootDelay(t *testing.T) {
	a, clock := setup(t, Options{})
	ctx := t.Context()
	m := newMachine(t, `"bootDelay":"1h"`)
	created := m.CreationTimestamp.Time

	clock.SetTime(created.Add(10 * time.Minute))
	after := requeue(t, a.Create(ctx, m))
	if after != 50*time.Minute {
		t.Errorf("requeue after %s, want 50m", after)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: m.Name}, &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Fatalf("node registered while booting: %v", err)
	}
	if m.Spec.ProviderID != nil || len(m.Status.Addresses) > 0 {
		t.Errorf("booting machine got providerID %v addresses %v", m.Spec.ProviderID, m.Status.Addresses)
	}
	if st := providerStatus(t, m); st.State != kubemarkv1alpha1.InstanceBooting || st.NodeName != "" {
		t.Errorf("booting providerStatus %+v", st)
	}
	if ok, err := a.Exists(ctx, m); err != nil || ok {
		t.Fatalf("Exists while booting: %v, %v", ok, err)
	}

	// A restarted controller (a new Actuator) counts from the same
	// creationTimestamp.
	a2 := NewActuator(Options{Client: env.Client, Clock: clock})
	clock.SetTime(created.Add(59 * time.Minute))
	if after := requeue(t, a2.Create(ctx, m)); after != time.Minute {
		t.Errorf("after restart: requeue after %s, want 1m", after)
	}

	clock.SetTime(created.Add(time.Hour))
	if err := a2.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	getNode(t, m.Name)
	if st := providerStatus(t, m); st.State != kubemarkv1alpha1.InstanceRunning {
		t.Errorf("providerStatus after boot %+v", st)
	}
}

func TestExistsDeleteIdempotent(t *testing.T) {
	a, _ := setup(t, Options{})
	ctx := t.Context()
	m := newMachine(t, "")

	// Deleting what was never created is fine.
	if err := a.Delete(ctx, m); err != nil {
		t.Fatalf("Delete before Create: %v", err)
	}
	if err := a.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Exists(ctx, m); err != nil || !ok {
		t.Fatalf("Exists: %v, %v", ok, err)
	}
	for i := range 2 {
		if err := a.Delete(ctx, m); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
		if ok, err := a.Exists(ctx, m); err != nil || ok {
			t.Fatalf("Exists after Delete #%d: %v, %v", i+1, ok, err)
		}
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: m.Name}, &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Errorf("node still there: %v", err)
	}
	// Update on a machine whose node is gone is an error (to retry), not a
	// panic or a success.
	if err := a.Update(ctx, m); err == nil || provider.IsInvalidConfiguration(err) {
		t.Errorf("Update without a node: %v", err)
	}
}

func TestForeignNode(t *testing.T) {
	a, _ := setup(t, Options{})
	ctx := t.Context()
	m := newMachine(t, "")
	foreign := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: m.Name},
		Spec:       corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-0123"},
	}
	if err := env.Client.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}

	if ok, err := a.Exists(ctx, m); err != nil || ok {
		t.Errorf("Exists with a foreign node: %v, %v", ok, err)
	}
	err := a.Create(ctx, m)
	if err == nil || !IsForeignNode(err) || provider.IsInvalidConfiguration(err) {
		t.Fatalf("Create with a foreign node: %v", err)
	}
	for _, want := range []string{m.Name, "aws:///us-east-1a/i-0123", "not this machine's node", "belongs to something else"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if m.Spec.ProviderID != nil {
		t.Errorf("machine providerID set to %q", *m.Spec.ProviderID)
	}
	if err := a.Update(ctx, m); !IsForeignNode(err) {
		t.Errorf("Update with a foreign node: %v", err)
	}
	if err := a.Delete(ctx, m); err != nil {
		t.Errorf("Delete with a foreign node: %v", err)
	}
	if n := getNode(t, m.Name); n.UID != foreign.UID || n.Spec.ProviderID != foreign.Spec.ProviderID {
		t.Error("the foreign node was changed or replaced")
	}
}

func TestCreateInvalidConfiguration(t *testing.T) {
	a, _ := setup(t, Options{})
	ctx := t.Context()
	m := newMachine(t, `"cpu":"-1","health":{"mode":"Sometimes"}`)
	err := a.Create(ctx, m)
	if !provider.IsInvalidConfiguration(err) {
		t.Fatalf("want InvalidConfiguration, got %v", err)
	}
	for _, want := range []string{`providerSpec.value.cpu: Invalid value: "-1": must be positive`, `providerSpec.value.health.mode: Unsupported value: "Sometimes"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: m.Name}, &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Errorf("node created for an invalid machine: %v", err)
	}
	if ok, err := a.Exists(ctx, m); err != nil || ok {
		t.Errorf("Exists: %v, %v", ok, err)
	}
}

// kwokLike stands in for kwok in tests without it: the node Ready and a
// Lease held by kwok, renewed at renew.
func kwokLike(t *testing.T, n *corev1.Node, renew time.Time) {
	t.Helper()
	ctx := t.Context()
	now := metav1.Now()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}
	if err := env.Client.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	rt := metav1.NewMicroTime(renew)
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Namespace: corev1.NamespaceNodeLease},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: new("kwok-controller-1"), LeaseDurationSeconds: new(int32(40)), RenewTime: &rt},
	}
	if err := env.Client.Create(ctx, lease); err != nil {
		t.Fatal(err)
	}
}

func assertUnhealthy(t *testing.T, name string, since time.Time) *corev1.Node {
	t.Helper()
	n := getNode(t, name)
	if _, ok := n.Annotations[KwokNodeAnnotation]; ok {
		t.Errorf("unhealthy node still has the kwok annotation: %v", n.Annotations)
	}
	if got := n.Annotations[SimulatedUnhealthyAnnotation]; got != since.UTC().Format(time.RFC3339) {
		t.Errorf("annotation %s = %q, want %s", SimulatedUnhealthyAnnotation, got, since.UTC().Format(time.RFC3339))
	}
	c := nodeutil.ReadyCondition(n)
	if c == nil || c.Status == corev1.ConditionTrue {
		t.Fatalf("unhealthy node Ready condition %+v", c)
	}
	if c.Status != corev1.ConditionUnknown || c.Reason != ReadyReasonSimulatedUnhealthy || !c.LastTransitionTime.Time.Equal(since) {
		t.Errorf("Ready condition %+v, want Unknown/%s since %s", c, ReadyReasonSimulatedUnhealthy, since)
	}
	return n
}

func TestHealthOnce(t *testing.T) {
	a, clock := setup(t, Options{})
	ctx := t.Context()
	m := newMachine(t, `"health":{"unhealthyAfter":"10m"}`)
	if err := a.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	n := getNode(t, m.Name)
	reg := n.CreationTimestamp.Time
	kwokRenew := reg.Add(9*time.Minute + 30*time.Second)
	kwokLike(t, n, kwokRenew)
	if st := providerStatus(t, m); st.NextHealthTransition == nil || !st.NextHealthTransition.Time.Equal(reg.Add(10*time.Minute)) {
		t.Errorf("providerStatus after Create %+v", st)
	}

	// Healthy: come back when it turns unhealthy.
	clock.SetTime(reg.Add(4 * time.Minute))
	if after := requeue(t, a.Update(ctx, m)); after != 6*time.Minute {
		t.Errorf("healthy: requeue after %s, want 6m", after)
	}
	if getNode(t, m.Name).Annotations[KwokNodeAnnotation] != "fake" {
		t.Error("healthy node lost the kwok annotation")
	}

	// Unhealthy: kwok's lease taken over, annotation removed, Ready Unknown.
	clock.SetTime(reg.Add(10*time.Minute + 5*time.Second))
	if after := requeue(t, a.Update(ctx, m)); after != DefaultReassertInterval {
		t.Errorf("unhealthy: requeue after %s, want %s", after, DefaultReassertInterval)
	}
	since := reg.Add(10 * time.Minute)
	n = assertUnhealthy(t, m.Name, since)
	lease := getLease(t, m.Name)
	if lease == nil || *lease.Spec.HolderIdentity != LeaseHolderIdentity || !lease.Spec.RenewTime.Time.Equal(kwokRenew) ||
		*lease.Spec.LeaseDurationSeconds != 1<<31-1 || *lease.Spec.LeaseTransitions != 1 {
		t.Errorf("lease after failure %+v", lease)
	}
	st := providerStatus(t, m)
	if st.State != kubemarkv1alpha1.InstanceUnhealthy || st.NextHealthTransition != nil {
		t.Errorf("providerStatus %+v", st)
	}

	// Reasserting changes nothing.
	nodeRV, leaseRV := n.ResourceVersion, lease.ResourceVersion
	clock.SetTime(reg.Add(time.Hour))
	requeue(t, a.Update(ctx, m))
	if getNode(t, m.Name).ResourceVersion != nodeRV || getLease(t, m.Name).ResourceVersion != leaseRV {
		t.Error("reasserting an unhealthy node wrote to it")
	}

	// A heartbeat kwok had scheduled before the failure sets Ready again; the
	// next Update undoes it with the same lastTransitionTime.
	n = getNode(t, m.Name)
	n.Status.Conditions[0] = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}
	if err := env.Client.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	requeue(t, a.Update(ctx, m))
	assertUnhealthy(t, m.Name, since)

	// Delete removes the node and the lease it holds.
	if err := a.Delete(ctx, m); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Exists(ctx, m); err != nil || ok {
		t.Errorf("Exists after Delete: %v, %v", ok, err)
	}
	if l := getLease(t, m.Name); l != nil {
		t.Errorf("lease left after Delete: %+v", l.Spec)
	}
}

func TestHealthPeriodic(t *testing.T) {
	a, clock := setup(t, Options{ReassertInterval: 10 * time.Minute})
	ctx := t.Context()
	m := newMachine(t, `"health":{"mode":"Periodic","unhealthyAfter":"10m","unhealthyFor":"5m"}`)
	if err := a.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	n := getNode(t, m.Name)
	reg := n.CreationTimestamp.Time
	kwokLike(t, n, reg.Add(9*time.Minute))

	// First failure, 10m..15m.
	clock.SetTime(reg.Add(11 * time.Minute))
	if after := requeue(t, a.Update(ctx, m)); after != 4*time.Minute {
		t.Errorf("unhealthy: requeue after %s, want 4m (the recovery)", after)
	}
	assertUnhealthy(t, m.Name, reg.Add(10*time.Minute))
	lease := getLease(t, m.Name)
	if lease == nil || *lease.Spec.HolderIdentity != LeaseHolderIdentity || *lease.Spec.LeaseDurationSeconds != 6*60 {
		// renewed by kwok at 9m, expires at 15m: 6 minutes.
		t.Errorf("lease %+v", lease)
	}
	if st := providerStatus(t, m); st.State != kubemarkv1alpha1.InstanceUnhealthy || !st.NextHealthTransition.Time.Equal(reg.Add(15*time.Minute)) {
		t.Errorf("providerStatus %+v", st)
	}

	// Recovered at 15m: the lease is released, the node handed back to kwok.
	clock.SetTime(reg.Add(15 * time.Minute))
	if after := requeue(t, a.Update(ctx, m)); after != 10*time.Minute {
		t.Errorf("recovered: requeue after %s, want 10m", after)
	}
	n = getNode(t, m.Name)
	if n.Annotations[KwokNodeAnnotation] != "fake" {
		t.Errorf("recovered node annotations %v", n.Annotations)
	}
	if _, ok := n.Annotations[SimulatedUnhealthyAnnotation]; ok {
		t.Error("recovered node still marked unhealthy")
	}
	if l := getLease(t, m.Name); l != nil {
		t.Errorf("lease not released: %+v", l.Spec)
	}
	if st := providerStatus(t, m); st.State != kubemarkv1alpha1.InstanceRunning || !st.NextHealthTransition.Time.Equal(reg.Add(25*time.Minute)) {
		t.Errorf("providerStatus %+v", st)
	}
	// Healthy again: nothing more to do.
	rv := n.ResourceVersion
	clock.SetTime(reg.Add(20 * time.Minute))
	requeue(t, a.Update(ctx, m))
	if getNode(t, m.Name).ResourceVersion != rv {
		t.Error("Update wrote to a healthy node")
	}

	// Second failure, 25m..30m, with no Lease at all (no kwok): the provider
	// creates one owned by the node, expiring at the recovery.
	clock.SetTime(reg.Add(26 * time.Minute))
	requeue(t, a.Update(ctx, m))
	assertUnhealthy(t, m.Name, reg.Add(25*time.Minute))
	lease = getLease(t, m.Name)
	if lease == nil || *lease.Spec.HolderIdentity != LeaseHolderIdentity || !lease.Spec.RenewTime.Time.Equal(reg.Add(25*time.Minute)) ||
		*lease.Spec.LeaseDurationSeconds != 5*60 || len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].UID != n.UID ||
		lease.Spec.LeaseTransitions != nil { // a new Lease has had no holder before
		t.Errorf("created lease %+v %+v", lease.ObjectMeta.OwnerReferences, lease.Spec)
	}
}

// TestCreateReleasesStaleLease: a Lease the provider held for an earlier
// node of the Machine (its providerStatus names one) is removed before the
// new node registers, so kwok can manage it; for a Machine that never had a
// node, Create reads no Lease (an older Machine's Lease went with its Node).
// Breaks if: Create released the Lease for every Machine (a Lease GET per
// Machine; the second row's lease would be gone) or for none (the first
// row's lease would be kept).
func TestCreateReleasesStaleLease(t *testing.T) {
	for _, tc := range []struct {
		name           string
		registeredOnce bool
		wantKept       bool
	}{
		{name: "recreated", registeredOnce: true},
		{name: "new", wantKept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := setup(t, Options{})
			ctx := t.Context()
			m := newMachine(t, "")
			if tc.registeredOnce {
				setProviderStatus(m, &kubemarkv1alpha1.KubemarkMachineProviderStatus{NodeName: m.Name, State: kubemarkv1alpha1.InstanceUnhealthy})
			}
			rt := metav1.NewMicroTime(time.Now())
			stale := &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: corev1.NamespaceNodeLease},
				Spec:       coordinationv1.LeaseSpec{HolderIdentity: new(LeaseHolderIdentity), LeaseDurationSeconds: new(int32(1<<31 - 1)), RenewTime: &rt},
			}
			if err := env.Client.Create(ctx, stale); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), stale) })
			if err := a.Create(ctx, m); err != nil {
				t.Fatal(err)
			}
			if l := getLease(t, m.Name); (l != nil) != tc.wantKept {
				t.Errorf("lease kept = %v, want %v", l != nil, tc.wantKept)
			}
		})
	}
}
