package machineset

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/deletepolicy"
)

// TestScaling: 3 Machines built from the template; scale to 5, then down to
// 4 (the annotated Machine goes) and 1 (the one with a Node stays).
func TestScaling(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	createsBefore := counterValue(MachineCreatesTotal.WithLabelValues(ResultSuccess))
	deletesBefore := counterValue(MachineDeletesTotal.WithLabelValues(ResultSuccess))
	ms := h.newMachineSet("workers", 3)
	got := h.waitOwned(ms, 3)
	ms = h.machineSet("workers")
	for _, m := range got {
		if !strings.HasPrefix(m.Name, "workers-") || m.GenerateName != "workers-" {
			t.Errorf("%s: generateName %q", m.Name, m.GenerateName)
		}
		if !maps.Equal(m.Labels, ms.Spec.Template.Labels) || !maps.Equal(m.Annotations, ms.Spec.Template.Annotations) {
			t.Errorf("%s: labels %v annotations %v, want the template's", m.Name, m.Labels, m.Annotations)
		}
		if !equality.Semantic.DeepEqual(m.Spec, ms.Spec.Template.Spec) {
			t.Errorf("%s: spec %+v, want the template's %+v", m.Name, m.Spec, ms.Spec.Template.Spec)
		}
		want := []metav1.OwnerReference{{
			APIVersion: "machine.openshift.io/v1beta1", Kind: "MachineSet", Name: "workers", UID: ms.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}}
		if !equality.Semantic.DeepEqual(m.OwnerReferences, want) {
			t.Errorf("%s: ownerReferences %+v", m.Name, m.OwnerReferences)
		}
	}
	h.waitStatus("workers", func(st machinev1beta1.MachineSetStatus) error {
		if st.Replicas != 3 || st.FullyLabeledReplicas != 3 || st.LabelSelector != "set=workers" || st.ObservedGeneration != ms.Generation {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})
	if n := h.cc.creates.Load(); n != 3 {
		t.Errorf("%d create requests, want 3", n)
	}
	if n := len(h.rec.find(EventSuccessfulCreate)); n != 3 {
		t.Errorf("%d SuccessfulCreate events, want 3", n)
	}

	// Scale-from-zero annotations of the kubemark template.
	h.eventually("scale-from-zero annotations", func() error {
		a := h.machineSet("workers").Annotations
		want := map[string]string{CPUAnnotation: "4", MemoryAnnotation: "8192", CapacityCPUAnnotation: "4",
			CapacityMemoryAnnotation: "8Gi", MaxPodsAnnotation: "110", CapacityMaxPodsAnnotation: "110"}
		for k, v := range want {
			if a[k] != v {
				return fmt.Errorf("annotations %v, want %v", a, want)
			}
		}
		return nil
	})

	h.updateMachineSet("workers", func(ms *machinev1beta1.MachineSet) { *ms.Spec.Replicas = 5 })
	five := h.waitOwned(ms, 5)
	h.waitStatus("workers", replicasAre(5, 0, 0))

	// One Machine marked for deletion, one with a Node, three without.
	marked, withNode := five[1].Name, five[3].Name
	h.patchMachine(marked, false, func(m *machinev1beta1.Machine) {
		m.Annotations[deletepolicy.DeleteMachineAnnotation] = "yes"
	})
	node := h.createNode("n1", corev1.ConditionTrue, time.Now().Add(-time.Hour))
	h.patchMachine(withNode, true, func(m *machinev1beta1.Machine) {
		m.Status.NodeRef = &corev1.ObjectReference{Kind: "Node", Name: node}
	})
	h.waitStatus("workers", replicasAre(5, 1, 1))

	h.updateMachineSet("workers", func(ms *machinev1beta1.MachineSet) { *ms.Spec.Replicas = 4 })
	four := h.waitOwned(ms, 4)
	if slices.Contains(names(four), marked) {
		t.Errorf("scale to 4 kept the annotated Machine %s: %v", marked, names(four))
	}

	h.updateMachineSet("workers", func(ms *machinev1beta1.MachineSet) { *ms.Spec.Replicas = 1 })
	one := h.waitOwned(ms, 1)
	if one[0].Name != withNode {
		t.Errorf("scale to 1 kept %s, want %s (the only one with a Node)", one[0].Name, withNode)
	}
	h.waitStatus("workers", replicasAre(1, 1, 1))
	if c, d := h.cc.creates.Load(), h.cc.deletes.Load(); c != 5 || d != 4 {
		t.Errorf("%d creates and %d deletes, want 5 and 4", c, d)
	}
	if n := len(h.rec.find(EventSuccessfulDelete)); n != 4 {
		t.Errorf("%d SuccessfulDelete events, want 4", n)
	}
	if c, d := counterValue(MachineCreatesTotal.WithLabelValues(ResultSuccess))-createsBefore,
		counterValue(MachineDeletesTotal.WithLabelValues(ResultSuccess))-deletesBefore; c != 5 || d != 4 {
		t.Errorf("creates/deletes counters grew by %v/%v, want 5/4", c, d)
	}
}

// TestDeletingMachineIsReplaced: a Machine being deleted (held by a
// finalizer) no longer counts and is not deleted again.
func TestDeletingMachineIsReplaced(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ms := h.newMachineSet("hold", 2)
	two := h.waitOwned(ms, 2)
	victim := two[0].Name
	h.patchMachine(victim, false, func(m *machinev1beta1.Machine) { m.Finalizers = []string{"test.example.com/hold"} })
	if err := h.c.Delete(h.ctx, two[0]); err != nil {
		t.Fatal(err)
	}
	h.eventually("a replacement", func() error {
		owned := h.ownedBy(ms)
		if len(owned) != 2 || slices.Contains(names(owned), victim) {
			return fmt.Errorf("owned (not deleting): %v", names(owned))
		}
		return nil
	})
	h.waitStatus("hold", replicasAre(2, 0, 0))
	h.poke("hold")
	if c, d := h.cc.creates.Load(), h.cc.deletes.Load(); c != 3 || d != 0 {
		t.Errorf("%d creates and %d deletes, want 3 and 0", c, d)
	}
}

// TestAdoptionAndRelease: a matching orphan is adopted, a Machine whose
// labels change is released and replaced, a Machine controlled by someone
// else is never touched.
func TestAdoptionAndRelease(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	orphan := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "orphan",
		Labels: map[string]string{"set": "adopt", "role": "worker"}}}
	otherOwner := metav1.OwnerReference{APIVersion: "machine.openshift.io/v1beta1", Kind: "MachineSet", Name: "someone-else",
		UID: "11111111-2222-3333-4444-555555555555", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	theirs := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "theirs",
		Labels: map[string]string{"set": "adopt"}, OwnerReferences: []metav1.OwnerReference{otherOwner}}}
	otherLabels := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "unrelated",
		Labels: map[string]string{"set": "other"}}}
	for _, m := range []*machinev1beta1.Machine{orphan, theirs, otherLabels} {
		if err := h.c.Create(h.ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	ms := h.newMachineSet("adopt", 2)
	owned := h.waitOwned(ms, 2)
	if !slices.Contains(names(owned), "orphan") {
		t.Fatalf("orphan not adopted: %v", names(owned))
	}
	ref := metav1.GetControllerOf(h.machine("orphan"))
	if ref == nil || ref.UID != h.machineSet("adopt").UID || ref.Kind != "MachineSet" {
		t.Errorf("orphan's controller ref = %+v", ref)
	}
	h.waitStatus("adopt", replicasAre(2, 0, 0))
	if n := h.cc.creates.Load(); n != 1 {
		t.Errorf("%d creates, want 1 (the orphan counts)", n)
	}

	// Release: the orphan's labels stop matching.
	h.patchMachine("orphan", false, func(m *machinev1beta1.Machine) { m.Labels["set"] = "elsewhere" })
	h.eventually("released and replaced", func() error {
		m := h.machine("orphan")
		if len(m.OwnerReferences) != 0 {
			return fmt.Errorf("released Machine still has ownerReferences %+v", m.OwnerReferences)
		}
		if got := h.ownedBy(ms); len(got) != 2 {
			return fmt.Errorf("owned %v, want 2", names(got))
		}
		return nil
	})

	// Someone else's Machine and the unrelated one were never touched.
	if m := h.machine("theirs"); !equality.Semantic.DeepEqual(m.OwnerReferences, []metav1.OwnerReference{otherOwner}) || m.DeletionTimestamp != nil {
		t.Errorf("someone else's Machine changed: %+v", m.ObjectMeta)
	}
	if m := h.machine("unrelated"); len(m.OwnerReferences) != 0 {
		t.Errorf("unrelated Machine adopted: %+v", m.OwnerReferences)
	}
	if m := h.machine("orphan"); m.DeletionTimestamp != nil {
		t.Error("released Machine was deleted")
	}
	if c, d := h.cc.creates.Load(), h.cc.deletes.Load(); c != 2 || d != 0 {
		t.Errorf("%d creates and %d deletes, want 2 and 0", c, d)
	}
}

// TestInvalidMachineSet: errorReason/errorMessage and one event; nothing
// created; cleared once fixed.
func TestInvalidMachineSet(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.newMachineSet("bad", 2, func(ms *machinev1beta1.MachineSet) {
		ms.Spec.Template.Labels = map[string]string{"set": "not-bad"}
		ms.Spec.Template.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: []byte(
			`{"apiVersion":"kubemark.machine-api-operator.io/v1alpha1","kind":"KubemarkMachineProviderSpec","cpu":"-1"}`)}
	})
	h.waitStatus("bad", func(st machinev1beta1.MachineSetStatus) error {
		if st.ErrorReason == nil || *st.ErrorReason != machinev1beta1.InvalidConfigurationMachineSetError {
			return fmt.Errorf("errorReason %v", st.ErrorReason)
		}
		if st.ErrorMessage == nil || !strings.Contains(*st.ErrorMessage, `spec.selector: Invalid value: "set=bad": selector does not match template labels`) {
			return fmt.Errorf("errorMessage %v", ptr.Deref(st.ErrorMessage, "<nil>"))
		}
		return nil
	})
	h.poke("bad") // another reconcile: no second event
	if ev := h.rec.find(EventInvalidConfiguration); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning ") {
		t.Errorf("InvalidConfiguration events = %q, want one Warning", ev)
	}
	if n := len(h.machines(true)); n != 0 || h.cc.creates.Load() != 0 {
		t.Errorf("%d Machines and %d creates for an invalid MachineSet", n, h.cc.creates.Load())
	}

	// Fix the labels (the providerSpec stays invalid: no annotations, no crash).
	h.updateMachineSet("bad", func(ms *machinev1beta1.MachineSet) { ms.Spec.Template.Labels = map[string]string{"set": "bad"} })
	h.waitStatus("bad", func(st machinev1beta1.MachineSetStatus) error {
		if st.ErrorReason != nil || st.ErrorMessage != nil || st.Replicas != 2 {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})
	for _, k := range []string{CPUAnnotation, CapacityMemoryAnnotation} {
		if v, ok := h.machineSet("bad").Annotations[k]; ok {
			t.Errorf("annotation %s=%q written for an invalid providerSpec", k, v)
		}
	}
}

// TestVSphereScaleFromZeroAnnotations: a vSphere MachineSet gets OpenShift's two annotations (vCPU = numCPUs,
// memoryMb = memoryMiB), rewritten when the template changes; one it cannot decode gets OpenShift's
// ReconcileError event, once per message, and no annotations.
// Breaks if: syncScaleFromZero skips vSphere providerSpecs, or the event is recorded on every reconcile.
func TestVSphereScaleFromZeroAnnotations(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	spec := func(cpus, mib int) *runtime.RawExtension {
		return &runtime.RawExtension{Raw: fmt.Appendf(nil, `{"apiVersion":"machine.openshift.io/v1beta1","kind":"VSphereMachineProviderSpec","numCPUs":%d,"memoryMiB":%d}`, cpus, mib)}
	}
	h.newMachineSet("vsphere", 0, func(ms *machinev1beta1.MachineSet) { ms.Spec.Template.Spec.ProviderSpec.Value = spec(4, 16384) })
	wantAnnotations := func(cpu, mem string) {
		t.Helper()
		h.eventually("vSphere scale-from-zero annotations", func() error {
			a := h.machineSet("vsphere").Annotations
			if a[CPUAnnotation] != cpu || a[MemoryAnnotation] != mem {
				return fmt.Errorf("annotations %v, want %s=%s %s=%s", a, CPUAnnotation, cpu, MemoryAnnotation, mem)
			}
			return nil
		})
	}
	wantAnnotations("4", "16384")
	if a := h.machineSet("vsphere").Annotations; a[MaxPodsAnnotation] != "" || a[CapacityCPUAnnotation] != "" {
		t.Errorf("annotations %v: OpenShift sets only %s and %s on vSphere", a, CPUAnnotation, MemoryAnnotation)
	}
	h.updateMachineSet("vsphere", func(ms *machinev1beta1.MachineSet) { ms.Spec.Template.Spec.ProviderSpec.Value = spec(8, 32768) })
	wantAnnotations("8", "32768")

	h.newMachineSet("vsphere-bad", 0, func(ms *machinev1beta1.MachineSet) {
		ms.Spec.Template.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: []byte(`{"apiVersion":"machine.openshift.io/v1beta1","kind":"VSphereMachineProviderSpec","numCPUs":"four"}`)}
	})
	h.eventually("ReconcileError event", func() error {
		if ev := h.rec.find(EventReconcileError); len(ev) != 1 || !strings.Contains(ev[0], "Warning ReconcileError vsphere-bad: failed to get providerConfig: json: cannot unmarshal string") {
			return fmt.Errorf("ReconcileError events %q", ev)
		}
		return nil
	})
	h.poke("vsphere-bad")
	h.poke("vsphere-bad")
	if ev := h.rec.find(EventReconcileError); len(ev) != 1 {
		t.Errorf("ReconcileError events after more reconciles = %q, want the one", ev)
	}
	if a := h.machineSet("vsphere-bad").Annotations; a[CPUAnnotation] != "" || a[MemoryAnnotation] != "" {
		t.Errorf("annotations %v for an undecodable providerSpec", a)
	}
}

// TestReadyAndAvailable: readyReplicas and availableReplicas follow the
// Nodes, minReadySeconds included.
func TestReadyAndAvailable(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ms := h.newMachineSet("ready", 2, func(ms *machinev1beta1.MachineSet) { ms.Spec.MinReadySeconds = 3600 })
	two := h.waitOwned(ms, 2)
	n1 := h.createNode("r1", corev1.ConditionTrue, time.Now())
	n2 := h.createNode("r2", corev1.ConditionFalse, time.Now())
	for i, n := range []string{n1, n2} {
		h.patchMachine(two[i].Name, true, func(m *machinev1beta1.Machine) {
			m.Status.NodeRef = &corev1.ObjectReference{Kind: "Node", Name: n}
		})
	}
	h.waitStatus("ready", replicasAre(2, 1, 0))
	// The Node has been Ready for two hours: available (a Node event).
	h.setNodeReady(n1, corev1.ConditionTrue, time.Now().Add(-2*time.Hour))
	h.waitStatus("ready", replicasAre(2, 1, 1))
	h.setNodeReady(n2, corev1.ConditionTrue, time.Now())
	h.waitStatus("ready", replicasAre(2, 2, 1))
	// minReadySeconds 2: n2 becomes available by the requeue, no event.
	h.updateMachineSet("ready", func(ms *machinev1beta1.MachineSet) { ms.Spec.MinReadySeconds = 2 })
	h.waitStatus("ready", replicasAre(2, 2, 2))
	// Not ready any more.
	h.setNodeReady(n1, corev1.ConditionUnknown, time.Now())
	h.waitStatus("ready", replicasAre(2, 1, 1))
}

// TestScaleSubresource: the scale subresource reads status.labelSelector and
// status.replicas, and writes spec.replicas.
func TestScaleSubresource(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ms := h.newMachineSet("scaled", 2, func(ms *machinev1beta1.MachineSet) {
		ms.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "role", Operator: metav1.LabelSelectorOpIn, Values: []string{"worker", "infra"}}}
	})
	h.waitOwned(ms, 2)
	h.waitStatus("scaled", replicasAre(2, 0, 0))
	scale := &autoscalingv1.Scale{}
	if err := h.c.SubResource("scale").Get(h.ctx, ms, scale); err != nil {
		t.Fatal(err)
	}
	if scale.Spec.Replicas != 2 || scale.Status.Replicas != 2 || scale.Status.Selector != "role in (infra,worker),set=scaled" {
		t.Errorf("scale = %+v", scale)
	}
	scale.Spec.Replicas = 4
	if err := h.c.SubResource("scale").Update(h.ctx, ms, client.WithSubResourceBody(scale)); err != nil {
		t.Fatal(err)
	}
	h.waitOwned(ms, 4)
	h.eventually("scale status", func() error {
		s := &autoscalingv1.Scale{}
		if err := h.c.SubResource("scale").Get(h.ctx, ms, s); err != nil {
			return err
		}
		if s.Status.Replicas != 4 || s.Spec.Replicas != 4 {
			return fmt.Errorf("scale %+v", s)
		}
		return nil
	})
}

// TestDeleteUsesUIDPrecondition: a Machine replaced under the same name
// (the cache still shows the old one) is not deleted.
func TestDeleteUsesUIDPrecondition(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ms := h.newMachineSet("uid", 0)
	m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "same-name"}}
	if err := h.c.Create(h.ctx, m); err != nil {
		t.Fatal(err)
	}
	stale := m.DeepCopy()
	if err := h.c.Delete(h.ctx, m); err != nil {
		t.Fatal(err)
	}
	m = &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "same-name"}}
	if err := h.c.Create(h.ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := h.r.deleteMachines(h.ctx, ms, []*machinev1beta1.Machine{stale}); err == nil {
		t.Error("deleting with a stale UID succeeded")
	}
	if got := h.machine("same-name"); got.UID != m.UID || got.DeletionTimestamp != nil {
		t.Errorf("the replacement Machine was deleted: %+v", got.ObjectMeta)
	}
}

// TestMachineSetBeingDeleted: nothing is created or deleted for it.
func TestMachineSetBeingDeleted(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ms := h.newMachineSet("going", 2, func(ms *machinev1beta1.MachineSet) { ms.Finalizers = []string{"test.example.com/hold"} })
	two := h.waitOwned(ms, 2)
	if err := h.c.Delete(h.ctx, ms); err != nil {
		t.Fatal(err)
	}
	// The controller can only hold back once it has seen the deletion (a
	// Machine deleted before that is legitimately replaced).
	h.eventually("the controller's cache shows the MachineSet deleting", func() error {
		cached := &machinev1beta1.MachineSet{}
		if err := h.cached.Get(h.ctx, client.ObjectKeyFromObject(ms), cached); err != nil {
			return err
		}
		if cached.DeletionTimestamp == nil {
			return fmt.Errorf("no deletionTimestamp yet")
		}
		return nil
	})
	if err := h.c.Delete(h.ctx, two[0]); err != nil {
		t.Fatal(err)
	}
	h.updateMachineSet("going", func(ms *machinev1beta1.MachineSet) { *ms.Spec.Replicas = 0 })
	h.whenSettled("nothing happened", func() error {
		if c, d := h.cc.creates.Load(), h.cc.deletes.Load(); c != 2 || d != 0 {
			return fmt.Errorf("%d creates, %d deletes; want 2, 0", c, d)
		}
		return nil
	})
	if err := h.c.Get(h.ctx, client.ObjectKeyFromObject(two[1]), &machinev1beta1.Machine{}); err != nil {
		t.Errorf("the remaining Machine: %v", err)
	}
}

// TestLaggingCache: while the Machine informer is held back, repeated
// reconciles neither create nor delete more than needed.
func TestLaggingCache(t *testing.T) {
	t.Run("expectations prevent over-creation and double deletion", func(t *testing.T) {
		h := newHarness(t, harnessOptions{gate: true})
		h.gate.close()
		ms := h.newMachineSet("lag", 5)
		h.eventually("5 creates", func() error {
			if n := h.cc.creates.Load(); n != 5 {
				return fmt.Errorf("%d creates", n)
			}
			return nil
		})
		// The cache really lags: it shows none of them.
		list := &machinev1beta1.MachineList{}
		if err := h.cached.List(h.ctx, list, client.InNamespace(h.ns)); err != nil || len(list.Items) != 0 {
			t.Fatalf("cache shows %d Machines (%v), want 0: the gate does not hold", len(list.Items), err)
		}
		for range 3 {
			h.poke("lag")
		}
		if n := h.cc.creates.Load(); n != 5 {
			t.Fatalf("%d create requests with a lagging cache, want 5", n)
		}
		h.gate.open()
		h.waitStatus("lag", replicasAre(5, 0, 0))
		h.waitOwned(ms, 5)

		// Scale down while the cache lags.
		h.gate.close()
		h.updateMachineSet("lag", func(ms *machinev1beta1.MachineSet) { *ms.Spec.Replicas = 2 })
		h.eventually("3 deletes", func() error {
			if n := h.cc.deletes.Load(); n != 3 {
				return fmt.Errorf("%d deletes", n)
			}
			return nil
		})
		for range 3 {
			h.poke("lag")
		}
		if c, d := h.cc.creates.Load(), h.cc.deletes.Load(); c != 5 || d != 3 {
			t.Fatalf("%d creates and %d deletes with a lagging cache, want 5 and 3", c, d)
		}
		h.gate.open()
		h.waitStatus("lag", replicasAre(2, 0, 0))
		h.waitOwned(ms, 2)
		if c, d := h.cc.creates.Load(), h.cc.deletes.Load(); c != 5 || d != 3 {
			t.Errorf("%d creates and %d deletes in total, want 5 and 3", c, d)
		}
		if n := len(h.machines(true)); n != 2 {
			t.Errorf("%d Machines exist, want 2", n)
		}
	})

	// The control experiment: with expectations that expire at once the
	// same lag over-creates, which shows the test above can fail.
	t.Run("control: without expectations the lag over-creates", func(t *testing.T) {
		h := newHarness(t, harnessOptions{gate: true, expectationsTimeout: time.Nanosecond})
		timeoutsBefore := counterValue(ExpectationTimeoutsTotal)
		h.gate.close()
		h.newMachineSet("nolag", 3)
		h.eventually("3 creates", func() error {
			if n := h.cc.creates.Load(); n < 3 {
				return fmt.Errorf("%d creates", n)
			}
			return nil
		})
		h.poke("nolag")
		if n := h.cc.creates.Load(); n <= 3 {
			t.Errorf("%d creates: the lagging cache did not provoke over-creation, so TestLaggingCache proves nothing", n)
		}
		if got := counterValue(ExpectationTimeoutsTotal) - timeoutsBefore; got < 3 {
			t.Errorf("expectation timeouts metric grew by %v, want >= 3", got)
		}
	})
}

// TestCreateBurst: 0→500 Machines quickly, with no over-creation.
func TestCreateBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("creates hundreds of Machines")
	}
	const n = 500
	h := newHarness(t, harnessOptions{})
	start := time.Now()
	ms := h.newMachineSet("burst", n)
	h.eventually(fmt.Sprintf("%d creates", n), func() error {
		if c := h.cc.creates.Load(); c < n {
			return fmt.Errorf("%d creates", c)
		}
		return nil
	})
	took := time.Since(start)
	t.Logf("%d Machines created in %v", n, took)
	h.waitStatus("burst", replicasAre(n, 0, 0))
	if got := len(h.ownedBy(ms)); got != n {
		t.Errorf("%d Machines, want %d", got, n)
	}
	if c := h.cc.creates.Load(); c != n {
		t.Errorf("%d creates, want %d", c, n)
	}
	// Scale to zero: bounded concurrent deletes, all of them.
	h.updateMachineSet("burst", func(ms *machinev1beta1.MachineSet) { *ms.Spec.Replicas = 0 })
	h.waitStatus("burst", replicasAre(0, 0, 0))
	h.eventually("all deleted", func() error {
		if got := len(h.machines(true)); got != 0 {
			return fmt.Errorf("%d Machines left", got)
		}
		return nil
	})
	if d := h.cc.deletes.Load(); d != n {
		t.Errorf("%d deletes, want %d", d, n)
	}
}

// TestStatusMixRecomputed: a status that is not the one the controller
// computes (another writer's counts), with no Machine change after it, is
// recomputed. Breaks if: the MachineSet watch drops status-only changes
// (setup.go's ResourceVersionChangedPredicate → GenerationChangedPredicate),
// or the apply left a count of 0 out (another writer's 2 would stay).
func TestStatusMixRecomputed(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.waitOwned(h.newMachineSet("mix", 2), 2)
	h.waitStatus("mix", replicasAre(2, 0, 0))
	ms := h.machineSet("mix")
	base := ms.DeepCopy()
	ms.Status.Replicas, ms.Status.AvailableReplicas = 1, 2
	if err := h.c.Status().Patch(h.ctx, ms, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("mix", replicasAre(2, 0, 0))
}
