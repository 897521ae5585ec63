package machinehealthcheck

import (
	"fmt"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
)

// holdFinalizer keeps a deleted test Machine in place, as a drain that hangs does.
const holdFinalizer = "test.machine.openshift.io/hold"

// setFinalizers replaces Machine name's finalizers.
func (h *harness) setFinalizers(name string, finalizers ...string) {
	h.t.Helper()
	m := h.machine(name)
	base := m.DeepCopy()
	m.Finalizers = finalizers
	if err := h.c.Patch(h.ctx, m, client.MergeFrom(base)); err != nil {
		h.t.Fatal(err)
	}
}

// TestSpreadingFailure: maxUnhealthy 2 of 6. Two Nodes fail and their Machines are
// deleted, but the deletions hang (a finalizer); two more Nodes fail: the two being
// deleted still count, so nothing more is remediated (RemediationAllowed=False
// TooManyUnhealthy, one RemediationRestricted event, both saying 2 are being deleted)
// until they are gone; then the other two are remediated. At most 2 at once throughout.
// Breaks if: summarize left Deleting Machines out of the count (m3 and m4 are deleted
// while m1 and m2 hang, 4 under remediation at once).
func TestSpreadingFailure(t *testing.T) {
	h := newHarness(t)
	long := time.Now().Add(-time.Hour)
	nodes := map[string]string{}
	for i := 1; i <= 6; i++ {
		name := fmt.Sprintf("m%d", i)
		nodes[name] = h.createNode(name, corev1.ConditionTrue, long)
		h.newMachine(name, machineOpts{mhc: "spread", owned: true, node: nodes[name]})
		h.setFinalizers(name, holdFinalizer)
	}
	h.newMHC("spread", func(m *machinev1beta1.MachineHealthCheck) { m.Spec.MaxUnhealthy = ptr.To(intstr.FromInt32(2)) })
	h.waitStatus("spread", 6, 6, 2, nil)

	// Pass 1: two fail and are deleted; the deletions hang.
	h.setNodeReady(nodes["m1"], corev1.ConditionFalse, long)
	h.setNodeReady(nodes["m2"], corev1.ConditionFalse, long)
	h.eventually("m1 and m2 being deleted", func() error {
		for _, name := range []string{"m1", "m2"} {
			if h.machine(name).DeletionTimestamp == nil {
				return fmt.Errorf("%s not deleted", name)
			}
		}
		return nil
	})
	// Expected counts the deleting ones, none of them healthy: 2 of 2 used.
	h.waitStatus("spread", 6, 4, 0, hasCondition(machinev1beta1.RemediationAllowedCondition, corev1.ConditionTrue, ReasonRemediationAllowed))

	// Pass 2: two more fail while m1 and m2 hang: 4 > 2, nothing is remediated.
	h.setNodeReady(nodes["m3"], corev1.ConditionFalse, long)
	h.setNodeReady(nodes["m4"], corev1.ConditionUnknown, long)
	st := h.waitStatus("spread", 6, 2, 0, hasCondition(machinev1beta1.RemediationAllowedCondition, corev1.ConditionFalse, machinev1beta1.TooManyUnhealthyReason))
	msg := conditions.Get(st.Conditions, machinev1beta1.RemediationAllowedCondition).Message
	for _, want := range []string{"4 of 6", "2 being deleted", "maxUnhealthy 2"} {
		if !strings.Contains(msg, want) {
			t.Errorf("condition message %q lacks %q", msg, want)
		}
	}
	h.whenSettled("m3 and m4 left alone while m1 and m2 are being deleted", func() error {
		for _, name := range []string{"m3", "m4"} {
			if m := h.machine(name); m.DeletionTimestamp != nil {
				return fmt.Errorf("%s deleted with 2 deletions in flight and maxUnhealthy 2", name)
			}
		}
		if evs := h.rec.find(EventRemediationRestricted, "spread"); len(evs) != 1 || !strings.Contains(evs[0], "2 being deleted") {
			return fmt.Errorf("RemediationRestricted events %q, want one saying 2 are being deleted", evs)
		}
		if n := len(h.rec.find(EventMachineDeleted, "")); n != 2 {
			return fmt.Errorf("%d MachineDeleted events, want 2", n)
		}
		return nil
	})

	// The first deletions finish: 2 of 4 unhealthy, within maxUnhealthy: m3 and m4 go.
	h.setFinalizers("m1")
	h.setFinalizers("m2")
	h.waitGone("m1")
	h.waitGone("m2")
	h.eventually("m3 and m4 being deleted", func() error {
		for _, name := range []string{"m3", "m4"} {
			if h.machine(name).DeletionTimestamp == nil {
				return fmt.Errorf("%s not deleted", name)
			}
		}
		return nil
	})
	h.waitStatus("spread", 4, 2, 0, hasCondition(machinev1beta1.RemediationAllowedCondition, corev1.ConditionTrue, ReasonRemediationAllowed))
	for _, name := range []string{"m3", "m4", "m5", "m6"} {
		h.setFinalizers(name)
	}
}

// TestExternalRemediationCounts: a Machine annotated for the baremetal provider counts
// against maxUnhealthy until the provider removes the annotation, even once its Node is
// Ready again (OpenShift's rule): with maxUnhealthy 1, a second failure waits for it.
// Breaks if: underExternalRemediation ignored the annotation (m2 is annotated at once).
func TestExternalRemediationCounts(t *testing.T) {
	h := newHarness(t)
	long := time.Now().Add(-time.Hour)
	nodes := map[string]string{}
	for _, name := range []string{"m1", "m2", "m3"} {
		nodes[name] = h.createNode(name, corev1.ConditionTrue, long)
		h.newMachine(name, machineOpts{mhc: "bm", owned: true, node: nodes[name]})
	}
	h.newMHC("bm", func(m *machinev1beta1.MachineHealthCheck) {
		m.Annotations = map[string]string{RemediationStrategyAnnotation: RemediationStrategyExternalBaremetal}
		m.Spec.MaxUnhealthy = ptr.To(intstr.FromInt32(1))
	})
	h.waitStatus("bm", 3, 3, 1, nil)
	annotated := func(name string) bool { _, ok := h.machine(name).Annotations[ExternalRemediationAnnotation]; return ok }

	h.setNodeReady(nodes["m1"], corev1.ConditionFalse, long)
	h.eventually("m1 annotated", func() error {
		if !annotated("m1") {
			return fmt.Errorf("not annotated")
		}
		return nil
	})
	// The host is back, the provider has not removed the annotation yet; m2 fails.
	h.setNodeReady(nodes["m1"], corev1.ConditionTrue, time.Now())
	h.setNodeReady(nodes["m2"], corev1.ConditionFalse, long)
	st := h.waitStatus("bm", 3, 1, 0, hasCondition(machinev1beta1.RemediationAllowedCondition, corev1.ConditionFalse, machinev1beta1.TooManyUnhealthyReason))
	if msg := conditions.Get(st.Conditions, machinev1beta1.RemediationAllowedCondition).Message; !strings.Contains(msg, "1 in external remediation") {
		t.Errorf("condition message %q does not say 1 is in external remediation", msg)
	}
	h.whenSettled("m2 waits for m1's remediation", func() error {
		if annotated("m2") {
			return fmt.Errorf("m2 annotated while m1 is in external remediation and maxUnhealthy is 1")
		}
		return nil
	})

	// The provider is done: m2 is remediated.
	m1 := h.machine("m1")
	base := m1.DeepCopy()
	delete(m1.Annotations, ExternalRemediationAnnotation)
	if err := h.c.Patch(h.ctx, m1, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	h.eventually("m2 annotated", func() error {
		if !annotated("m2") {
			return fmt.Errorf("not annotated")
		}
		return nil
	})
}
