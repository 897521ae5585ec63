//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/nodeutil"
)

// The NodeMaintenance contract (medik8s' node-maintenance-operator API). The
// Go types are not used here on purpose: the suite talks to the API as a
// user would, through unstructured objects.
var nodeMaintenanceGVK = schema.GroupVersionKind{Group: "nodemaintenance.medik8s.io", Version: "v1beta1", Kind: "NodeMaintenance"}

const (
	nodeMaintenanceCRD          = "nodemaintenances.nodemaintenance.medik8s.io"
	nodeMaintenanceTaintKey     = "medik8s.io/drain"
	excludeFromRemediationLabel = "remediation.medik8s.io/exclude-from-remediation"
)

// setKubemarkHealth adds the health simulation policy to the kubemark
// providerSpec of spec (see the kubemark provider: the node stops being kept
// Ready and its Ready condition turns Unknown).
func setKubemarkHealth(t *testing.T, spec *machinev1beta1.MachineSpec, health map[string]any) {
	t.Helper()
	v := providerSpecOf(t, spec)
	v["health"] = health
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encoding providerSpec: %v", err)
	}
	spec.ProviderSpec.Value = &runtime.RawExtension{Raw: raw}
}

// runningMachinesOf lists the Machines controlled by ms that are not being
// deleted and are Running with a nodeRef. Unlike waitMachineSetReady it does
// not require the node to be Ready: the health tests' nodes turn unhealthy
// a few seconds after they register.
func runningMachinesOf(ctx context.Context, ms *machinev1beta1.MachineSet) ([]machinev1beta1.Machine, error) {
	owned, err := machinesControlledBy(ctx, ms)
	if err != nil {
		return nil, err
	}
	var running []machinev1beta1.Machine
	for _, m := range owned {
		if m.DeletionTimestamp == nil && m.Status.Phase != nil && *m.Status.Phase == "Running" && m.Status.NodeRef != nil {
			running = append(running, m)
		}
	}
	return running, nil
}

// newMachineHealthCheck returns an MHC selecting the Machines of the test
// MachineSet name (label e2e-machineset=name) that are unhealthy when their
// node's Ready condition is Unknown or False for longer than timeout.
func newMachineHealthCheck(name string, timeout time.Duration, maxUnhealthy intstr.IntOrString) *machinev1beta1.MachineHealthCheck {
	return &machinev1beta1.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: operandNamespace()},
		Spec: machinev1beta1.MachineHealthCheckSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{machineSetLabel: name}},
			UnhealthyConditions: []machinev1beta1.UnhealthyCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Timeout: metav1.Duration{Duration: timeout}},
				{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Timeout: metav1.Duration{Duration: timeout}},
			},
			MaxUnhealthy: &maxUnhealthy,
		},
	}
}

// createMachineHealthCheck creates mhc and deletes it when the test ends.
// Registered after the MachineSet's cleanup, it runs first, so the MHC stops
// remediating before the MachineSet is torn down.
func createMachineHealthCheck(ctx context.Context, t *testing.T, mhc *machinev1beta1.MachineHealthCheck) {
	t.Helper()
	if err := cluster.Create(ctx, mhc); err != nil {
		t.Fatalf("creating machinehealthcheck %s: %v", mhc.Name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		deleteAndWaitGone(ctx, t, "machinehealthcheck "+mhc.Name, mhc)
	})
}

func mhcCondition(mhc *machinev1beta1.MachineHealthCheck, ct machinev1beta1.ConditionType) *machinev1beta1.Condition {
	for i := range mhc.Status.Conditions {
		if mhc.Status.Conditions[i].Type == ct {
			return &mhc.Status.Conditions[i]
		}
	}
	return nil
}

func intOrNil(p *int) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// TestMachineHealthCheckRemediates: a MachineSet's Machine whose node stops
// being Ready is deleted by the MachineHealthCheck once the condition has
// held for its timeout, and the MachineSet replaces it.
func TestMachineHealthCheckRemediates(t *testing.T) {
	ctx := kubemarkTest(t, 4*time.Minute)
	name := "e2e-mhc-" + rand.String(5)
	ms := newKubemarkMachineSet(name, 1)
	setKubemarkHealth(t, &ms.Spec.Template.Spec, map[string]any{"mode": "Once", "unhealthyAfter": "15s"})
	createMachineSet(ctx, t, ms)

	var first machinev1beta1.Machine
	waitFor(ctx, t, "the machine of machineset "+name+" Running with a node", func(ctx context.Context) (bool, error) {
		running, err := runningMachinesOf(ctx, ms)
		if err != nil || len(running) != 1 {
			return false, err
		}
		first = running[0]
		return true, nil
	})
	node := first.Status.NodeRef.Name
	t.Logf("first machine %s, node %s", first.Name, node)

	const timeout = 10 * time.Second
	mhc := newMachineHealthCheck(name, timeout, intstr.FromString("100%"))
	createMachineHealthCheck(ctx, t, mhc)
	waitFor(ctx, t, "machinehealthcheck "+name+" status.expectedMachines 1", func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(mhc), mhc); err != nil {
			return false, err
		}
		return mhc.Status.ExpectedMachines != nil && *mhc.Status.ExpectedMachines == 1, nil
	})

	// Follow the node's Ready condition and the Machine until the Machine is
	// being deleted (or already gone).
	var (
		notReadySince  time.Time // the Ready condition's lastTransitionTime
		notReadySeenAt time.Time // when this test first saw it non-True
		notReadyStatus corev1.ConditionStatus
		deletedAt      time.Time // the Machine's deletionTimestamp, else when it was seen gone
		deletionSeenAt time.Time
	)
	waitFor(ctx, t, "machine "+first.Name+" remediated (being deleted or gone)", func(ctx context.Context) (bool, error) {
		if notReadySeenAt.IsZero() {
			n := &corev1.Node{}
			if err := cluster.Get(ctx, client.ObjectKey{Name: node}, n); client.IgnoreNotFound(err) != nil {
				return false, err
			} else if err == nil {
				if c := nodeutil.ReadyCondition(n); c != nil && c.Status != corev1.ConditionTrue {
					notReadySince, notReadySeenAt, notReadyStatus = c.LastTransitionTime.Time, time.Now(), c.Status
				}
			}
		}
		m := &machinev1beta1.Machine{}
		err := cluster.Get(ctx, client.ObjectKeyFromObject(&first), m)
		switch {
		case apierrors.IsNotFound(err):
			deletedAt, deletionSeenAt = time.Now(), time.Now()
			return true, nil
		case err != nil:
			return false, err
		case m.DeletionTimestamp != nil:
			deletedAt, deletionSeenAt = m.DeletionTimestamp.Time, time.Now()
			return true, nil
		}
		return false, nil
	})
	if notReadySeenAt.IsZero() {
		t.Errorf("machine %s was deleted but its node %s was never seen with Ready non-True: remediated while healthy?", first.Name, node)
	} else {
		t.Logf("node %s Ready=%s since %s; machine deletionTimestamp %s: %s after the transition (MHC timeout %s); seen non-Ready → seen deleting: %s",
			node, notReadyStatus, notReadySince.Format(time.RFC3339), deletedAt.Format(time.RFC3339),
			deletedAt.Sub(notReadySince).Round(time.Second), timeout, deletionSeenAt.Sub(notReadySeenAt).Round(100*time.Millisecond))
	}

	// The MachineSet replaces it. The replacement turns unhealthy 15 s after
	// registering too; only the first remediation is asserted.
	var replacement machinev1beta1.Machine
	waitFor(ctx, t, "a replacement machine of machineset "+name+" Running", func(ctx context.Context) (bool, error) {
		running, err := runningMachinesOf(ctx, ms)
		if err != nil {
			return false, err
		}
		for _, m := range running {
			if m.Name != first.Name {
				replacement = m
				return true, nil
			}
		}
		return false, nil
	})
	t.Logf("replacement machine %s, node %s, %s after the first machine's deletion", replacement.Name,
		replacement.Status.NodeRef.Name, replacement.CreationTimestamp.Sub(deletedAt).Round(time.Second))
	if err := cluster.Get(ctx, client.ObjectKeyFromObject(mhc), mhc); err == nil {
		t.Logf("machinehealthcheck status: expectedMachines %s currentHealthy %s remediationsAllowed %d",
			intOrNil(mhc.Status.ExpectedMachines), intOrNil(mhc.Status.CurrentHealthy), mhc.Status.RemediationsAllowed)
	}
}

// TestMachineHealthCheckShortCircuit: when more Machines are unhealthy than
// maxUnhealthy allows, the MachineHealthCheck says RemediationAllowed=False
// TooManyUnhealthy and deletes none of them.
func TestMachineHealthCheckShortCircuit(t *testing.T) {
	ctx := kubemarkTest(t, 4*time.Minute)
	name := "e2e-mhc-short-" + rand.String(5)
	ms := newKubemarkMachineSet(name, 3)
	setKubemarkHealth(t, &ms.Spec.Template.Spec, map[string]any{"mode": "Once", "unhealthyAfter": "10s"})
	createMachineSet(ctx, t, ms)

	var machines []machinev1beta1.Machine
	waitFor(ctx, t, "3 machines of machineset "+name+" Running with a node", func(ctx context.Context) (bool, error) {
		var err error
		machines, err = runningMachinesOf(ctx, ms)
		return len(machines) == 3, err
	})
	names := map[string]bool{}
	for _, m := range machines {
		names[m.Name] = true
	}

	// The MHC is created only once every node has been non-Ready for longer
	// than its timeout, so that it sees 3 unhealthy Machines from its first
	// pass. Created earlier, the nodes' failures (a second or so apart) could
	// let it count a single unhealthy Machine and, legitimately, remediate it.
	const timeout = 10 * time.Second
	waitFor(ctx, t, fmt.Sprintf("the 3 nodes non-Ready for more than %s", timeout), func(ctx context.Context) (bool, error) {
		for _, m := range machines {
			n := &corev1.Node{}
			if err := cluster.Get(ctx, client.ObjectKey{Name: m.Status.NodeRef.Name}, n); err != nil {
				return false, err
			}
			c := nodeutil.ReadyCondition(n)
			if c == nil || c.Status == corev1.ConditionTrue || time.Since(c.LastTransitionTime.Time) <= timeout+2*time.Second {
				return false, nil
			}
		}
		return true, nil
	})

	deletions := watchDeletions(ctx, t, ms)
	mhc := newMachineHealthCheck(name, timeout, intstr.FromInt32(1))
	createMachineHealthCheck(ctx, t, mhc)

	// None of the 3 Machines may be deleted: the set of Machines the
	// MachineSet controls stays exactly the original 3, none deleting (a
	// deletion missed between two polls would leave a replacement or a
	// missing name behind).
	intact := func(ctx context.Context) error {
		owned, err := machinesControlledBy(ctx, ms)
		if err != nil {
			return err
		}
		if len(owned) != len(names) {
			return fmt.Errorf("machineset %s controls %v, want exactly the original 3", name, machineNames(owned))
		}
		for _, m := range owned {
			if !names[m.Name] {
				return fmt.Errorf("machineset %s controls %s, a replacement: one of the unhealthy machines was deleted", name, m.Name)
			}
			if m.DeletionTimestamp != nil {
				return fmt.Errorf("machine %s is being deleted although remediation is short-circuited", m.Name)
			}
		}
		return nil
	}

	waitFor(ctx, t, "machinehealthcheck "+name+" RemediationAllowed=False TooManyUnhealthy, 3 expected machines", func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(mhc), mhc); err != nil {
			return false, err
		}
		c := mhcCondition(mhc, machinev1beta1.RemediationAllowedCondition)
		return c != nil && c.Status == corev1.ConditionFalse && c.Reason == machinev1beta1.TooManyUnhealthyReason &&
			mhc.Status.ExpectedMachines != nil && *mhc.Status.ExpectedMachines == 3, nil
	})
	c := mhcCondition(mhc, machinev1beta1.RemediationAllowedCondition)
	t.Logf("RemediationAllowed=False %s: %s; expectedMachines %s currentHealthy %s remediationsAllowed %d", c.Reason, c.Message,
		intOrNil(mhc.Status.ExpectedMachines), intOrNil(mhc.Status.CurrentHealthy), mhc.Status.RemediationsAllowed)
	if mhc.Status.RemediationsAllowed != 0 {
		t.Errorf("status.remediationsAllowed = %d, want 0 while short-circuited", mhc.Status.RemediationsAllowed)
	}
	if err := intact(ctx); err != nil {
		t.Fatal(err)
	}

	// The attempt: with maxUnhealthy 2 the 3 unhealthy Machines are still too
	// many; the MHC's next pass reports the new limit, and must delete none
	// of them. The watch started before the MHC existed has seen every
	// deletion, even one between two polls.
	if err := cluster.Patch(ctx, mhc, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"maxUnhealthy":2}}`))); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "machinehealthcheck "+name+" to report its pass with maxUnhealthy 2", func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(mhc), mhc); err != nil {
			return false, err
		}
		c := mhcCondition(mhc, machinev1beta1.RemediationAllowedCondition)
		if c == nil || c.Status != corev1.ConditionFalse || c.Reason != machinev1beta1.TooManyUnhealthyReason {
			return false, fmt.Errorf("RemediationAllowed %+v while all 3 machines are unhealthy", c)
		}
		return strings.Contains(c.Message, "maxUnhealthy 2"), fmt.Errorf("message %q", c.Message)
	})
	deletions.check(ctx, t)
	if err := intact(ctx); err != nil {
		t.Fatal(err)
	}
}

// deletionWatch records, from a watch, the Machines of a MachineSet that
// were marked for deletion or removed.
type deletionWatch struct {
	mu      sync.Mutex
	deleted []string
	seen    map[string]string // name → last resourceVersion seen
	err     error
	opts    []client.ListOption // select the MachineSet's Machines
}

// watchDeletions starts recording the deletions of ms's Machines.
func watchDeletions(ctx context.Context, t *testing.T, ms *machinev1beta1.MachineSet) *deletionWatch {
	t.Helper()
	opts := []client.ListOption{client.InNamespace(ms.Namespace), client.MatchingLabels(ms.Spec.Selector.MatchLabels)}
	list := &machinev1beta1.MachineList{}
	if err := cluster.List(ctx, list, opts...); err != nil {
		t.Fatal(err)
	}
	d := &deletionWatch{seen: map[string]string{}, opts: opts}
	for _, m := range list.Items {
		d.seen[m.Name] = m.ResourceVersion
	}
	watchFrom(t, &machinev1beta1.MachineList{}, list.ResourceVersion, func(ev watch.Event) {
		d.mu.Lock()
		defer d.mu.Unlock()
		m, ok := ev.Object.(*machinev1beta1.Machine)
		switch {
		case ev.Type == watch.Error:
			d.err = apierrors.FromObject(ev.Object)
		case !ok:
		case ev.Type == watch.Deleted:
			d.deleted = append(d.deleted, m.Name+" (removed)")
			delete(d.seen, m.Name)
		default:
			if m.DeletionTimestamp != nil {
				d.deleted = append(d.deleted, m.Name)
			}
			d.seen[m.Name] = m.ResourceVersion
		}
	}, opts...)
	return d
}

// check waits until the watch has caught up with the Machines as they are
// now, then fails the test when it saw any deleted.
func (d *deletionWatch) check(ctx context.Context, t *testing.T) {
	t.Helper()
	waitCaughtUp(ctx, t, "machine", func(ctx context.Context) (map[string]string, error) {
		list := &machinev1beta1.MachineList{}
		if err := cluster.List(ctx, list, d.opts...); err != nil {
			return nil, err
		}
		now := map[string]string{}
		for _, m := range list.Items {
			now[m.Name] = m.ResourceVersion
		}
		return now, nil
	}, func() (map[string]string, error) {
		d.mu.Lock()
		defer d.mu.Unlock()
		return maps.Clone(d.seen), d.err
	})
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.deleted) > 0 {
		t.Fatalf("machines deleted although remediation is short-circuited: %v", d.deleted)
	}
}

// newNodeMaintenance returns a NodeMaintenance for node, as unstructured.
func newNodeMaintenance(name, node, reason string) *unstructured.Unstructured {
	nm := &unstructured.Unstructured{}
	nm.SetGroupVersionKind(nodeMaintenanceGVK)
	nm.SetName(name)
	nm.Object["spec"] = map[string]any{"nodeName": node, "reason": reason}
	return nm
}

// requireNodeMaintenanceAPI fails (the CRD is part of the product, so this is
// not a skip) when the NodeMaintenance API is not served.
func requireNodeMaintenanceAPI(t *testing.T) {
	t.Helper()
	if _, err := cluster.RESTMapper().RESTMapping(nodeMaintenanceGVK.GroupKind(), nodeMaintenanceGVK.Version); err != nil {
		t.Fatalf("the NodeMaintenance API %s is not served: is the CRD %s installed (it is part of the payload)? %v",
			nodeMaintenanceGVK.GroupVersion(), nodeMaintenanceCRD, err)
	}
}

// podsOn counts the workload's pods bound to node, whatever their
// phase, terminating ones included.
func (w *guardedWorkload) podsOn(ctx context.Context, node string) (int, error) {
	pods := &corev1.PodList{}
	if err := cluster.List(ctx, pods, client.InNamespace(w.ns), client.MatchingLabels(w.labels)); err != nil {
		return 0, err
	}
	n := 0
	for _, p := range pods.Items {
		if p.Spec.NodeName == node {
			n++
		}
	}
	return n, nil
}

func hasDrainTaint(n *corev1.Node) bool {
	for _, taint := range n.Spec.Taints {
		if taint.Key == nodeMaintenanceTaintKey && taint.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

// TestNodeMaintenanceDrains: a NodeMaintenance cordons, taints and labels its
// node and evicts the pods (honouring their PodDisruptionBudget) onto the rest
// of the pool; deleting it makes the node schedulable again and removes the
// taint and label.
func TestNodeMaintenanceDrains(t *testing.T) {
	ctx := kubemarkTest(t, 4*time.Minute)
	requireNodeMaintenanceAPI(t)
	name := "e2e-nm-" + rand.String(5)
	ms := newKubemarkMachineSet(name, 2)
	createMachineSet(ctx, t, ms)
	machines := waitMachineSetReady(ctx, t, ms, 2)
	nodes := []string{nodeOf(t, machines[0]), nodeOf(t, machines[1])}

	w := newGuardedWorkload(ctx, t, "maint", name, 2, 1)
	waitFor(ctx, t, "the workload's 2 pods Running in pool "+name+" and available", func(ctx context.Context) (bool, error) {
		total := 0
		for _, n := range nodes {
			c, err := w.runningOn(ctx, n)
			if err != nil {
				return false, err
			}
			total += c
		}
		d := &appsv1.Deployment{}
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(w.deploy), d); err != nil {
			return false, err
		}
		return total == 2 && d.Status.AvailableReplicas == 2, nil
	})
	target, other := nodes[0], nodes[1]
	if c, err := w.runningOn(ctx, target); err != nil {
		t.Fatal(err)
	} else if c == 0 {
		target, other = other, target
	}
	before, _ := w.runningOn(ctx, target)
	t.Logf("maintenance of node %s (%d workload pods), the pool's other node is %s", target, before, other)

	nm := newNodeMaintenance(name, target, "e2e: drain test")
	if err := cluster.Create(ctx, nm); err != nil {
		t.Fatalf("creating NodeMaintenance %s for node %s: %v", name, target, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := cluster.Delete(ctx, newNodeMaintenance(name, target, "")); client.IgnoreNotFound(err) != nil {
			t.Errorf("deleting NodeMaintenance %s: %v", name, err)
		}
	})
	start := time.Now()

	reportedFailed := false
	waitFor(ctx, t, "NodeMaintenance "+name+" phase Succeeded", func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(nm), nm); err != nil {
			return false, err
		}
		phase, _, _ := unstructured.NestedString(nm.Object, "status", "phase")
		if phase == "Failed" && !reportedFailed {
			lastErr, _, _ := unstructured.NestedString(nm.Object, "status", "lastError")
			t.Logf("phase Failed (lastError %q); waiting in case the drain is retried", lastErr)
			reportedFailed = true
		}
		return phase == "Succeeded", nil
	})
	status, _, _ := unstructured.NestedMap(nm.Object, "status")
	t.Logf("NodeMaintenance Succeeded %s after creation; status %v", time.Since(start).Round(100*time.Millisecond), status)
	// medik8s's status on success. Breaks if: the success keeps the pending pods or lastError of a pass before.
	for _, field := range []string{"pendingPods", "pendingPodsRefs", "lastError"} {
		if v, ok := status[field]; ok {
			t.Errorf("status.%s = %v on success, want none (medik8s clears it)", field, v)
		}
	}
	if p, _, _ := unstructured.NestedInt64(nm.Object, "status", "drainProgress"); p != 100 {
		t.Errorf("status.drainProgress = %d on success, want 100", p)
	}

	waitFor(ctx, t, "node "+target+" cordoned, tainted "+nodeMaintenanceTaintKey+":NoSchedule, labelled "+excludeFromRemediationLabel, func(ctx context.Context) (bool, error) {
		n := &corev1.Node{}
		if err := cluster.Get(ctx, client.ObjectKey{Name: target}, n); err != nil {
			return false, err
		}
		return n.Spec.Unschedulable && hasDrainTaint(n) && n.Labels[excludeFromRemediationLabel] == "true", nil
	})
	// medik8s's order: the maintenance taints first. Breaks if: they are appended after the node's own.
	if n := (&corev1.Node{}); cluster.Get(ctx, client.ObjectKey{Name: target}, n) == nil &&
		(len(n.Spec.Taints) < 2 || n.Spec.Taints[0].Key != "node.kubernetes.io/unschedulable" || n.Spec.Taints[1].Key != nodeMaintenanceTaintKey) {
		t.Errorf("node %s taints = %v, want node.kubernetes.io/unschedulable and %s first", target, n.Spec.Taints, nodeMaintenanceTaintKey)
	}
	waitFor(ctx, t, "no workload pod on "+target+", 2 Running on "+other+" and available", func(ctx context.Context) (bool, error) {
		onTarget, err := w.podsOn(ctx, target)
		if err != nil || onTarget != 0 {
			return false, err
		}
		onOther, err := w.runningOn(ctx, other)
		if err != nil || onOther != 2 {
			return false, err
		}
		d := &appsv1.Deployment{}
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(w.deploy), d); err != nil {
			return false, err
		}
		return d.Status.AvailableReplicas == 2, nil
	})

	if err := cluster.Delete(ctx, nm); err != nil {
		t.Fatalf("deleting NodeMaintenance %s: %v", name, err)
	}
	waitGone(ctx, t, "NodeMaintenance "+name, nm)
	waitFor(ctx, t, "node "+target+" schedulable, taint and label removed", func(ctx context.Context) (bool, error) {
		n := &corev1.Node{}
		if err := cluster.Get(ctx, client.ObjectKey{Name: target}, n); err != nil {
			return false, err
		}
		_, labelled := n.Labels[excludeFromRemediationLabel]
		return !n.Spec.Unschedulable && !hasDrainTaint(n) && !labelled, nil
	})
	// medik8s records UncordonNode "Uncordon a node" on the Node (cluster-scoped: its events are in default),
	// a core/v1 Event from source NodeMaintenance. Breaks if: the event names another reporter.
	waitFor(ctx, t, "event UncordonNode on node "+target, func(ctx context.Context) (bool, error) {
		events := &corev1.EventList{}
		if err := cluster.List(ctx, events, client.InNamespace(metav1.NamespaceDefault)); err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Kind == "Node" && e.InvolvedObject.Name == target && e.Reason == "UncordonNode" && e.Message == "Uncordon a node" &&
				e.Source.Component == "NodeMaintenance" && e.ReportingController == "NodeMaintenance" {
				return true, nil
			}
		}
		return false, nil
	})
}
