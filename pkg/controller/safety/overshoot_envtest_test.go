package safety

import (
	"fmt"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
)

// startOvershoot runs the overshoot controller for ns with a 1s period.
func startOvershoot(t *testing.T, ns string) *recorder {
	t.Helper()
	return startOvershootEvery(t, ns, time.Second)
}

// startOvershootEvery runs the overshoot controller for ns with period.
func startOvershootEvery(t *testing.T, ns string, period time.Duration) *recorder {
	t.Helper()
	mgr := env.NewManager(t, nil, cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}})
	rec := &recorder{}
	c := NewOvershootController(OvershootOptions{SafetyUp: 2, SafetyDown: 1, Period: period}, ns)
	c.events.Recorder = rec
	testenv.Setup(t, mgr, nil, c)
	testenv.Run(t, mgr)
	return rec
}

func newSet(t *testing.T, ns, name string, replicas int32, owner *mdv1beta1.MachineDeployment) *machinev1beta1.MachineSet {
	t.Helper()
	ms := &machinev1beta1.MachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	ms.Spec.Replicas = ptr.To(replicas)
	ms.Spec.Selector.MatchLabels = map[string]string{"set": name}
	ms.Spec.Template.Labels = map[string]string{"set": name}
	if owner != nil {
		ms.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, mdv1beta1.GroupVersion.WithKind("MachineDeployment"))}
	}
	if err := env.Client.Create(t.Context(), ms); err != nil {
		t.Fatal(err)
	}
	// As the MachineSet controller (not running here) would: the spec is
	// acted on, so the overshoot may freeze the set.
	ms.Status.ObservedGeneration = ms.Generation
	if err := env.Client.Status().Update(t.Context(), ms); err != nil {
		t.Fatal(err)
	}
	return ms
}

// addMachines creates n Machines owned by ms, behind its controller's back.
func addMachines(t *testing.T, ms *machinev1beta1.MachineSet, n int) []*machinev1beta1.Machine {
	t.Helper()
	var out []*machinev1beta1.Machine
	for range n {
		m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{
			Namespace: ms.Namespace, GenerateName: ms.Name + "-", Labels: ms.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ms, machinev1beta1.GroupVersion.WithKind("MachineSet"))},
		}}
		if err := env.Client.Create(t.Context(), m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// frozenState reads an object's freeze label and Frozen condition.
func frozenState(t *testing.T, obj client.Object) (label bool, cond *machinev1beta1.Condition) {
	t.Helper()
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	conds, err := conditionsOf(obj)
	if err != nil {
		t.Fatal(err)
	}
	return obj.GetLabels()[mdv1beta1.FreezeLabel] == "True", conditions.Get(*conds, mdv1beta1.FrozenCondition)
}

func waitFrozen(t *testing.T, obj client.Object, wantReason, wantMessage string) {
	t.Helper()
	eventually(t, obj.GetName()+" frozen", func() error {
		label, cond := frozenState(t, obj)
		if !label || cond == nil || cond.Status != "True" || cond.Reason != wantReason || (wantMessage != "" && cond.Message != wantMessage) {
			return fmt.Errorf("label %v, condition %+v", label, cond)
		}
		return nil
	})
}

// waitEvents waits until exactly n events of reason about name are recorded.
func waitEvents(t *testing.T, rec *recorder, reason, name string, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d %s events", n, reason), func() error {
		if got := rec.find(reason, name); len(got) != n {
			return fmt.Errorf("%s events %q, want %d", reason, got, n)
		}
		return nil
	})
}

func waitUnfrozen(t *testing.T, obj client.Object) {
	t.Helper()
	eventually(t, obj.GetName()+" unfrozen", func() error {
		if label, cond := frozenState(t, obj); label || cond != nil {
			return fmt.Errorf("label %v, condition %+v", label, cond)
		}
		return nil
	})
}

// TestOvershootFreezesAndUnfreezes: a standalone MachineSet of 1 is frozen
// when 4 Machines (2×1+2) back it, and unfrozen at 3 (4−1); the unfreeze
// annotation lifts a freeze and is removed. Breaks if: the freeze compared
// with > instead of >= (4 would not freeze).
func TestOvershootFreezesAndUnfreezes(t *testing.T) {
	ns := newNamespace(t)
	rec := startOvershoot(t, ns)
	ms := newSet(t, ns, "web", 1, nil)
	machines := addMachines(t, ms, 3)
	// The message names the count it froze at: 4, not 3.
	machines = append(machines, addMachines(t, ms, 1)...)
	waitFrozen(t, ms, ReasonOverShootingReplicaCount, "The number of machines backing MachineSet: web is 4 >= 4 which is the Max-ScaleUp-Limit")
	waitEvents(t, rec, EventFrozeMachineSet, "web", 1) // recorded after the write

	if err := env.Client.Delete(t.Context(), machines[0]); err != nil {
		t.Fatal(err)
	}
	waitUnfrozen(t, ms)
	waitEvents(t, rec, EventUnfrozeMachineSet, "web", 1)

	// Frozen again, then lifted by the annotation (it comes back while the
	// count stays high: the event and the removed annotation show the lift).
	addMachines(t, ms, 1)
	waitFrozen(t, ms, ReasonOverShootingReplicaCount, "")
	if err := env.Client.Patch(t.Context(), ms, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+UnfreezeAnnotation+`":"True"}}}`))); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the unfreeze annotation handled", func() error {
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(ms), ms); err != nil {
			return err
		}
		if _, ok := ms.Annotations[UnfreezeAnnotation]; ok {
			return fmt.Errorf("annotation still there")
		}
		if got := rec.find(EventUnfrozeMachineSet, "web"); len(got) != 2 {
			return fmt.Errorf("UnfrozeMachineSet events %q, want two", got)
		}
		return nil
	})
}

// TestOvershootFreezesTheDeployment: a MachineSet of a MachineDeployment of
// 2 with maxSurge 1 freezes at 2+1+2 = 5 Machines, and its
// MachineDeployment with it; both thaw together. Breaks if: the set's
// thresholds ignored the MachineDeployment (2×2+2 = 6 would not freeze at 5).
func TestOvershootFreezesTheDeployment(t *testing.T) {
	ns := newNamespace(t)
	rec := startOvershoot(t, ns)
	md := &mdv1beta1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "md"}}
	md.Spec.Replicas = ptr.To(int32(2))
	md.Spec.Selector.MatchLabels = map[string]string{"set": "md-a"}
	md.Spec.Template.Labels = map[string]string{"set": "md-a"}
	surge := intstr.FromInt32(1)
	md.Spec.Strategy = mdv1beta1.MachineDeploymentStrategy{Type: mdv1beta1.RollingUpdateStrategy,
		RollingUpdate: &mdv1beta1.RollingUpdateMachineDeployment{MaxSurge: &surge}}
	if err := env.Client.Create(t.Context(), md); err != nil {
		t.Fatal(err)
	}
	md.Status.ObservedGeneration = md.Generation // as its controller (not running here) would
	if err := env.Client.Status().Update(t.Context(), md); err != nil {
		t.Fatal(err)
	}
	ms := newSet(t, ns, "md-a", 2, md)
	machines := addMachines(t, ms, 5)
	waitFrozen(t, ms, ReasonOverShootingReplicaCount, "The number of machines backing MachineSet: md-a is 5 >= 5 which is the Max-ScaleUp-Limit")
	waitFrozen(t, md, ReasonOverShootingReplicaCount, "")

	// The unfreeze annotation on the deployment reaches its set: both thaw
	// (and freeze again, the count being what it is) and it is removed.
	if err := env.Client.Patch(t.Context(), md, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+UnfreezeAnnotation+`":"True"}}}`))); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deployment's unfreeze annotation handled", func() error {
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(md), md); err != nil {
			return err
		}
		if _, ok := md.Annotations[UnfreezeAnnotation]; ok {
			return fmt.Errorf("annotation still on the MachineDeployment")
		}
		if len(rec.find(EventUnfrozeMachineDeployment, "md")) == 0 || len(rec.find(EventUnfrozeMachineSet, "md-a")) == 0 {
			return fmt.Errorf("no unfreeze events yet: %q", rec.all())
		}
		return nil
	})
	waitFrozen(t, ms, ReasonOverShootingReplicaCount, "")

	for _, m := range machines[:2] {
		if err := env.Client.Delete(t.Context(), m); err != nil {
			t.Fatal(err)
		}
	}
	waitUnfrozen(t, ms)
	waitUnfrozen(t, md)
}

// TestDeletionThawsAtOnce: with an hour between periodic evaluations, a
// frozen set still thaws as soon as a deletion brings its count under the
// low threshold. Breaks if: the controller did not watch Machine deletions
// (the set would stay frozen until the next period).
func TestDeletionThawsAtOnce(t *testing.T) {
	ns := newNamespace(t)
	startOvershootEvery(t, ns, time.Hour)
	ms := newSet(t, ns, "api", 1, nil)
	machines := addMachines(t, ms, 4)
	waitFrozen(t, ms, ReasonOverShootingReplicaCount, "")
	if err := env.Client.Delete(t.Context(), machines[0]); err != nil {
		t.Fatal(err)
	}
	waitUnfrozen(t, ms)
}
