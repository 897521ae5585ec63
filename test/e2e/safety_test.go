//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/safety"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/render"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider/kubemark"
)

// frozenCondition returns the MachineSet's Frozen condition (the safety
// controller uses the MachineDeployment API's type on both), or nil.
func frozenCondition(ms *machinev1beta1.MachineSet) *machinev1beta1.Condition {
	for i := range ms.Status.Conditions {
		if ms.Status.Conditions[i].Type == mdv1beta1.FrozenCondition {
			return &ms.Status.Conditions[i]
		}
	}
	return nil
}

// hasEvent says whether an event with reason was recorded on the object
// named name of kind.
func hasEvent(ctx context.Context, kind, name, reason string) (bool, error) {
	events := &corev1.EventList{}
	if err := cluster.List(ctx, events, client.InNamespace(operandNamespace())); err != nil {
		return false, err
	}
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name && e.Reason == reason {
			return true, nil
		}
	}
	return false, nil
}

// TestOvershootFreeze: Machines created behind a MachineSet's back with its
// ownerReference and template labels, as a runaway creator makes them, bring
// a set of 1 to 2×1+2 = 4 and beyond: the set gets the label freeze=True,
// Frozen=True OverShootingReplicaCount and the event FrozeMachineSet, and
// while frozen it does not replace its own Machine when that is deleted.
// Deleting the extra Machines brings the count under the low threshold: the
// deletions are evaluated at once and thaw the set (UnfrozeMachineSet); it makes
// its Machine again. The extras carry a foreign controller reference: with
// none the MachineSet controller, which is not the runaway here, would adopt
// them and delete them as surplus; the overshoot count, MCM's, takes any
// ownerReference. Breaks if: the MachineSet controller ignored the freeze
// (a replacement Machine appears while frozen).
func TestOvershootFreeze(t *testing.T) {
	ctx := kubemarkTest(t, 8*time.Minute)
	name := "e2e-overshoot-" + rand.String(5)
	ms := newKubemarkMachineSet(name, 1)
	createMachineSet(ctx, t, ms)
	own := waitMachineSetReady(ctx, t, ms, 1)[0]

	// The runaway's own object, the extras' controller.
	runaway := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name + "-runaway", Namespace: ms.Namespace}}
	if err := cluster.Create(ctx, runaway); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Delete(context.Background(), runaway) })
	const threshold = 2*1 + safety.DefaultSafetyUp
	// One beyond the threshold, so that deleting the set's own Machine
	// leaves the count at the threshold: the freeze holds.
	extras := make([]*machinev1beta1.Machine, threshold)
	for i := range extras {
		m := &machinev1beta1.Machine{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("%s-extra-%d", name, i), Namespace: ms.Namespace, Labels: ms.Spec.Template.Labels,
				OwnerReferences: []metav1.OwnerReference{
					{APIVersion: machinev1beta1.GroupVersion.String(), Kind: "MachineSet", Name: ms.Name, UID: ms.UID},
					{APIVersion: "v1", Kind: "ConfigMap", Name: runaway.Name, UID: runaway.UID, Controller: ptr.To(true)},
				},
			},
			Spec: *ms.Spec.Template.Spec.DeepCopy(),
		}
		if err := cluster.Create(ctx, m); err != nil {
			t.Fatalf("creating extra machine %s: %v", m.Name, err)
		}
		deleteMachineOnCleanup(t, m)
		extras[i] = m
	}
	start := time.Now()
	waitFor(ctx, t, fmt.Sprintf("machineset %s frozen (label, Frozen=True %s, event %s)", name, safety.ReasonOverShootingReplicaCount, safety.EventFrozeMachineSet), func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(ms), ms); err != nil {
			return false, err
		}
		c := frozenCondition(ms)
		if ms.Labels[mdv1beta1.FreezeLabel] != mdv1beta1.FreezeLabelValue || c == nil || c.Status != corev1.ConditionTrue || c.Reason != safety.ReasonOverShootingReplicaCount {
			return false, fmt.Errorf("labels %v, Frozen condition %+v", ms.Labels, c)
		}
		return hasEvent(ctx, "MachineSet", name, safety.EventFrozeMachineSet)
	})
	t.Logf("frozen %s after the last extra machine was created; message: %s", time.Since(start).Round(100*time.Millisecond), frozenCondition(ms).Message)

	// Frozen: the set's own Machine deleted is not replaced. The MachineSet
	// controller writes its status after acting, so once the status shows 0
	// replicas any replacement would already exist.
	if err := cluster.Delete(ctx, own); err != nil {
		t.Fatal(err)
	}
	waitGone(ctx, t, "machine "+own.Name, own)
	waitFor(ctx, t, "machineset "+name+" status: 0 replicas", func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(ms), ms); err != nil {
			return false, err
		}
		return ms.Status.Replicas == 0, nil
	})
	owned, err := machinesControlledBy(ctx, ms)
	if err != nil {
		t.Fatal(err)
	}
	if len(owned) != 0 {
		t.Errorf("frozen machineset %s created %v", name, machineNames(owned))
	}
	if ms.Labels[mdv1beta1.FreezeLabel] != mdv1beta1.FreezeLabelValue {
		t.Errorf("machineset %s thawed at %d machines (threshold %d): labels %v", name, threshold, threshold, ms.Labels)
	}

	for _, m := range extras {
		if err := cluster.Delete(ctx, m); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	start = time.Now()
	waitFor(ctx, t, fmt.Sprintf("machineset %s thawed (no label, no Frozen=True, event %s)", name, safety.EventUnfrozeMachineSet), func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(ms), ms); err != nil {
			return false, err
		}
		if c := frozenCondition(ms); ms.Labels[mdv1beta1.FreezeLabel] != "" || (c != nil && c.Status == corev1.ConditionTrue) {
			return false, fmt.Errorf("labels %v, Frozen condition %+v", ms.Labels, c)
		}
		return hasEvent(ctx, "MachineSet", name, safety.EventUnfrozeMachineSet)
	})
	t.Logf("thawed %s after the extra machines were deleted", time.Since(start).Round(100*time.Millisecond))
	for _, m := range extras {
		waitGone(ctx, t, "extra machine "+m.Name, m)
	}
	waitMachineSetReady(ctx, t, ms, 1)
}

// orphanPeriod reads --machine-safety-orphan-vms-period from the operand's
// machine-controller container (the default when absent).
func orphanPeriod(ctx context.Context, t *testing.T) time.Duration {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := cluster.Get(ctx, client.ObjectKey{Namespace: operandNamespace(), Name: config.OperandDeploymentName}, d); err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name != render.MachineContainer {
			continue
		}
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "--machine-safety-orphan-vms-period="); ok {
				p, err := time.ParseDuration(v)
				if err != nil {
					t.Fatalf("container %s: %s: %v", c.Name, a, err)
				}
				return p
			}
		}
	}
	return safety.DefaultOrphanPeriod
}

// TestOrphanInstanceCollected: a kubemark Node with the cluster's providerID
// scheme and the provider's ownership mark, whose Machine does not exist, is
// deleted by the orphan collector, no sooner than one orphan period after its
// creation and within two periods and a margin, while the Nodes of Machines
// and an unmarked Node stay. Breaks if: the operator stopped rendering the
// kubemark platform's 1m period (the 15m default is too slow for the suite),
// the kubemark provider listed no Nodes, or it listed unmarked ones.
func TestOrphanInstanceCollected(t *testing.T) {
	ctx := kubemarkTest(t, 8*time.Minute)
	period := orphanPeriod(ctx, t)
	if period > 2*time.Minute {
		t.Fatalf("orphan period %s on the kubemark platform, want the operator's 1m (pkg/operator/render): longer is too slow for the suite", period)
	}
	name := "e2e-orphan-" + rand.String(5)
	ms := newKubemarkMachineSet(name, 2)
	createMachineSet(ctx, t, ms)
	kept := map[string]types.UID{}
	for _, m := range waitMachineSetReady(ctx, t, ms, 2) {
		n := &corev1.Node{}
		if err := cluster.Get(ctx, client.ObjectKey{Name: nodeOf(t, m)}, n); err != nil {
			t.Fatal(err)
		}
		kept[n.Name] = n.UID
	}

	// The orphan carries the provider's ownership mark, of a Machine that never existed; its unmarked twin
	// (an installer's or another tool's Node) is never collected.
	orphan := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-orphan", Labels: map[string]string{"e2e-pool": name},
			Annotations: map[string]string{kubemark.OwnerAnnotation: operandNamespace() + "/" + name + "-orphan/" + string(uuid.NewUUID())}},
		Spec: corev1.NodeSpec{ProviderID: kubemark.ProviderID(operandNamespace(), name+"-orphan")},
	}
	unmarked := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-unmarked", Labels: map[string]string{"e2e-pool": name}},
		Spec:       corev1.NodeSpec{ProviderID: kubemark.ProviderID(operandNamespace(), name+"-unmarked")},
	}
	for _, n := range []*corev1.Node{orphan, unmarked} {
		if err := cluster.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cluster.Delete(context.Background(), n) })
	}
	created := orphan.CreationTimestamp.Time
	wctx, wcancel := context.WithTimeout(ctx, 2*period+90*time.Second)
	defer wcancel()
	waitGone(wctx, t, fmt.Sprintf("orphan node %s (providerID %s)", orphan.Name, orphan.Spec.ProviderID), orphan)
	took := time.Since(created)
	t.Logf("orphan node collected %s after its creation (period %s)", took.Round(time.Second), period)
	// creationTimestamp has second precision, rounded down.
	if took < period-time.Second {
		t.Errorf("orphan node deleted %s after its creation, before the period %s", took.Round(time.Second), period)
	}
	kept[unmarked.Name] = unmarked.UID
	for node, uid := range kept {
		n := &corev1.Node{}
		if err := cluster.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			t.Errorf("node %s of a machine: %v", node, err)
		} else if n.UID != uid || n.DeletionTimestamp != nil {
			t.Errorf("node %s of a machine was deleted (uid %s, was %s; deletionTimestamp %v)", node, n.UID, uid, n.DeletionTimestamp)
		}
	}
}
