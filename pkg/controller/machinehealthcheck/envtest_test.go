package machinehealthcheck

import (
	"fmt"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
)

// TestRemediatesEachUnhealthyKind: a Failed Machine, one whose Node is gone,
// one whose Node is NotReady past the timeout and one without a Node past
// nodeStartupTimeout (1s, from creation) are deleted; the healthy one stays.
// nodelink runs too, as in a cluster. Deleting the MachineHealthCheck drops
// its metrics.
func TestRemediatesEachUnhealthyKind(t *testing.T) {
	h := newHarness(t)
	h.startNodelink()
	healthyNode := h.createNode("healthy", corev1.ConditionTrue, time.Now().Add(-time.Hour))
	sickNode := h.createNode("sick", corev1.ConditionFalse, time.Now().Add(-time.Hour))
	h.newMachine("healthy", machineOpts{mhc: "all", owned: true, node: healthyNode})
	h.newMachine("failed", machineOpts{mhc: "all", owned: true, node: healthyNode, failed: true})
	h.newMachine("node-gone", machineOpts{mhc: "all", owned: true, node: h.ns + "-never-existed"})
	h.newMachine("not-ready", machineOpts{mhc: "all", owned: true, node: sickNode})
	h.newMachine("no-node", machineOpts{mhc: "all", owned: true})
	h.newMachine("other", machineOpts{mhc: "someone-else", owned: true, failed: true})

	h.newMHC("all", func(m *machinev1beta1.MachineHealthCheck) {
		m.Spec.NodeStartupTimeout = &metav1.Duration{Duration: time.Second}
	})
	for _, name := range []string{"failed", "node-gone", "not-ready", "no-node"} {
		h.waitGone(name)
	}
	if !h.exists("healthy") || !h.exists("other") {
		t.Fatal("a healthy or unselected Machine was deleted")
	}
	h.waitStatus("all", 1, 1, 1, hasCondition(machinev1beta1.RemediationAllowedCondition, corev1.ConditionTrue, ReasonRemediationAllowed))
	if n := len(h.rec.find(EventMachineDeleted, "")); n != 4 {
		t.Errorf("%d MachineDeleted events, want 4: %v", n, h.rec.find(EventMachineDeleted, ""))
	}
	if v, _ := metricValue(RemediationSuccessTotal, "all", h.ns); v != 4 {
		t.Errorf("remediation_success_total = %v, want 4", v)
	}
	if v, ok := gaugeValue(NodesCovered, "all", h.ns); !ok || v != 1 {
		t.Errorf("nodes_covered = %v (%v), want 1", v, ok)
	}
	if v, ok := gaugeValue(ShortCircuit, "all", h.ns); !ok || v != 0 {
		t.Errorf("short_circuit = %v (%v), want 0", v, ok)
	}

	if err := h.c.Delete(h.ctx, h.mhc("all")); err != nil {
		t.Fatal(err)
	}
	h.eventually("metrics dropped", func() error {
		for _, c := range []struct {
			name string
			ok   bool
		}{{"nodes_covered", has(gaugeValue(NodesCovered, "all", h.ns))}, {"short_circuit", has(gaugeValue(ShortCircuit, "all", h.ns))},
			{"remediation_success_total", has(metricValue(RemediationSuccessTotal, "all", h.ns))}} {
			if c.ok {
				return fmt.Errorf("%s still set", c.name)
			}
		}
		return nil
	})
}

func has(_ float64, ok bool) bool { return ok }

// TestNoControllerSkipped: an unhealthy Machine without a controller owner
// is left alone, with one SkippedNoController event however often the
// MachineHealthCheck is reconciled.
func TestNoControllerSkipped(t *testing.T) {
	h := newHarness(t)
	h.newMachine("orphan", machineOpts{mhc: "x", failed: true})
	h.newMHC("x")
	h.waitStatus("x", 1, 0, 0, nil)
	h.eventually("SkippedNoController event", func() error {
		if n := len(h.rec.find(EventSkippedNoController, "orphan")); n != 1 {
			return fmt.Errorf("%d events", n)
		}
		return nil
	})
	// More reconciles: a new healthy Machine joins.
	node := h.createNode("n", corev1.ConditionTrue, time.Now().Add(-time.Hour))
	h.newMachine("fine", machineOpts{mhc: "x", owned: true, node: node})
	h.waitStatus("x", 2, 1, 1, nil)
	if !h.exists("orphan") {
		t.Fatal("the Machine without a controller was deleted")
	}
	if n := len(h.rec.find(EventSkippedNoController, "orphan")); n != 1 {
		t.Errorf("%d SkippedNoController events, want 1", n)
	}
	if n := len(h.rec.find(EventDetectedUnhealthy, "orphan")); n != 1 {
		t.Errorf("%d DetectedUnhealthy events, want 1", n)
	}
}

// TestShortCircuit: more unhealthy Machines than maxUnhealthy stops
// remediation, persists RemediationAllowed=False/TooManyUnhealthy, records
// one RemediationRestricted event, and then sends no API request at all
// while nothing changes (no hot loop). A starting Machine and a Machine whose
// condition timeout has not expired do not count. When one Node recovers,
// the remaining unhealthy Machine is remediated.
func TestShortCircuit(t *testing.T) {
	h := newHarness(t)
	good := h.createNode("good", corev1.ConditionTrue, time.Now().Add(-time.Hour))
	bad1 := h.createNode("bad1", corev1.ConditionFalse, time.Now().Add(-time.Hour))
	bad2 := h.createNode("bad2", corev1.ConditionUnknown, time.Now().Add(-time.Hour))
	recent := h.createNode("recent", corev1.ConditionFalse, time.Now())
	h.newMachine("good", machineOpts{mhc: "sc", owned: true, node: good})
	h.newMachine("bad1", machineOpts{mhc: "sc", owned: true, node: bad1})
	h.newMachine("bad2", machineOpts{mhc: "sc", owned: true, node: bad2})
	h.newMachine("recent", machineOpts{mhc: "sc", owned: true, node: recent})
	h.newMachine("starting", machineOpts{mhc: "sc", owned: true})
	h.newMHC("sc", func(m *machinev1beta1.MachineHealthCheck) { m.Spec.MaxUnhealthy = ptr.To(intstr.FromInt32(1)) })

	st := h.waitStatus("sc", 5, 1, 0, hasCondition(machinev1beta1.RemediationAllowedCondition, corev1.ConditionFalse, machinev1beta1.TooManyUnhealthyReason))
	c := conditions.Get(st.Conditions, machinev1beta1.RemediationAllowedCondition)
	if !strings.Contains(c.Message, "2 of 5") || c.Severity != machinev1beta1.ConditionSeverityWarning {
		t.Errorf("condition %+v: want the counts (2 of 5) and severity Warning", c)
	}
	if v, _ := gaugeValue(ShortCircuit, "sc", h.ns); v != 1 {
		t.Errorf("short_circuit = %v, want 1", v)
	}

	// Nothing changes: no API requests at all (the next timer, the recent
	// Node's 5m timeout, is far away).
	h.requests.reset()
	h.whenSettled("no requests while short-circuited", func() error {
		if n := h.requests.n.Load(); n != 0 {
			return fmt.Errorf("%d API requests: %v", n, h.requests.recent())
		}
		return nil
	})
	for _, m := range []string{"good", "bad1", "bad2", "recent", "starting"} {
		if !h.exists(m) {
			t.Errorf("Machine %s deleted while short-circuited", m)
		}
	}
	if n := len(h.rec.find(EventRemediationRestricted, "sc")); n != 1 {
		t.Errorf("%d RemediationRestricted events, want 1", n)
	}
	if n := len(h.rec.find(EventMachineDeleted, "")); n != 0 {
		t.Errorf("%d MachineDeleted events", n)
	}

	// bad1 recovers: one unhealthy ≤ maxUnhealthy → bad2 is remediated.
	h.setNodeReady(bad1, corev1.ConditionTrue, time.Now())
	h.waitGone("bad2")
	h.waitStatus("sc", 4, 2, 1, hasCondition(machinev1beta1.RemediationAllowedCondition, corev1.ConditionTrue, ReasonRemediationAllowed))
	if v, _ := gaugeValue(ShortCircuit, "sc", h.ns); v != 0 {
		t.Errorf("short_circuit = %v, want 0", v)
	}
	if n := len(h.rec.find(EventRemediationRestricted, "sc")); n != 1 {
		t.Errorf("%d RemediationRestricted events, want 1", n)
	}
}

// TestExternalRemediation: with a remediationTemplate the unhealthy Machine
// is not deleted; a request is created from the template and removed when
// the Machine is healthy again; the conditions are persisted. A missing
// template is reported with ExternalRemediationTemplateNotFound.
func TestExternalRemediation(t *testing.T) {
	h := newHarness(t)
	tmpl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": remGroup + "/" + remVersion, "kind": "TestRemediationTemplate",
		"metadata": map[string]any{"namespace": h.ns, "name": "reboot"},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"strategy": "Reboot", "retries": int64(3)}}},
	}}
	if err := h.c.Create(h.ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	node := h.createNode("n", corev1.ConditionFalse, time.Now().Add(-time.Hour))
	m := h.newMachine("ext", machineOpts{mhc: "ext", owned: true, node: node})
	h.newMHC("ext", func(mhc *machinev1beta1.MachineHealthCheck) {
		mhc.Spec.RemediationTemplate = &corev1.ObjectReference{APIVersion: remGroup + "/" + remVersion, Kind: "TestRemediationTemplate", Name: "reboot"}
	})

	req := &unstructured.Unstructured{}
	req.SetAPIVersion(remGroup + "/" + remVersion)
	req.SetKind("TestRemediation")
	h.eventually("remediation request", func() error {
		return h.c.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: "ext"}, req)
	})
	if s, _, _ := unstructured.NestedString(req.Object, "spec", "strategy"); s != "Reboot" {
		t.Errorf("request spec %v, want the template's", req.Object["spec"])
	}
	refs := req.GetOwnerReferences()
	if len(refs) != 1 || refs[0].UID != m.UID || refs[0].Kind != "Machine" {
		t.Errorf("request ownerReferences %+v", refs)
	}
	h.waitStatus("ext", 1, 0, 0, func(st machinev1beta1.MachineHealthCheckStatus) error {
		if err := hasCondition(machinev1beta1.ExternalRemediationTemplateAvailable, corev1.ConditionTrue, ReasonTemplateAvailable)(st); err != nil {
			return err
		}
		return hasCondition(machinev1beta1.ExternalRemediationRequestAvailable, corev1.ConditionTrue, ReasonRequestAvailable)(st)
	})
	if !h.exists("ext") {
		t.Fatal("Machine deleted despite external remediation")
	}

	// Healthy again: the request goes.
	h.setNodeReady(node, corev1.ConditionTrue, time.Now())
	h.eventually("request deleted", func() error {
		err := h.c.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: "ext"}, req)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("request still there (%v)", err)
	})
	h.waitStatus("ext", 1, 1, 1, nil)

	// A template that does not exist.
	node2 := h.createNode("n2", corev1.ConditionFalse, time.Now().Add(-time.Hour))
	h.newMachine("ext2", machineOpts{mhc: "missing", owned: true, node: node2})
	h.newMHC("missing", func(mhc *machinev1beta1.MachineHealthCheck) {
		mhc.Spec.RemediationTemplate = &corev1.ObjectReference{APIVersion: remGroup + "/" + remVersion, Kind: "TestRemediationTemplate", Name: "nope"}
	})
	h.waitStatus("missing", 1, 0, 0, hasCondition(machinev1beta1.ExternalRemediationTemplateAvailable, corev1.ConditionFalse,
		machinev1beta1.ExternalRemediationTemplateNotFound))
	// Another reconcile (a starting Machine joins): still one event.
	h.newMachine("ext3", machineOpts{mhc: "missing", owned: true})
	h.waitStatus("missing", 2, 0, 1, nil)
	if n := len(h.rec.find(EventTemplateNotFound, "missing")); n != 1 {
		t.Errorf("%d %s events, want 1", n, EventTemplateNotFound)
	}
	if !h.exists("ext2") {
		t.Error("Machine deleted although the remediation template is missing")
	}
}

// TestPaused: a paused MachineHealthCheck reports its status but does not
// remediate; unpausing remediates.
func TestPaused(t *testing.T) {
	h := newHarness(t)
	h.newMachine("failed", machineOpts{mhc: "p", owned: true, failed: true})
	h.newMHC("p", func(m *machinev1beta1.MachineHealthCheck) { m.Annotations = map[string]string{PausedAnnotation: ""} })
	h.waitStatus("p", 1, 0, 0, hasCondition(machinev1beta1.RemediationAllowedCondition, corev1.ConditionFalse, ReasonPaused))
	h.whenSettled("paused: the Machine stays", func() error {
		if !h.exists("failed") {
			return fmt.Errorf("deleted")
		}
		return nil
	})
	h.patchMHC("p", func(m *machinev1beta1.MachineHealthCheck) { delete(m.Annotations, PausedAnnotation) })
	h.waitGone("failed")
}

// TestExcludedNodes: Machines whose Node carries the exclusion label or the
// maintenance taint are not remediated (one event each); once the label goes
// the Machine is remediated.
func TestExcludedNodes(t *testing.T) {
	h := newHarness(t)
	labelled := h.createNode("labelled", corev1.ConditionFalse, time.Now().Add(-time.Hour), func(n *corev1.Node) {
		n.Labels = map[string]string{ExcludeFromRemediationLabel: "true"}
	})
	tainted := h.createNode("tainted", corev1.ConditionFalse, time.Now().Add(-time.Hour), func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: NodeMaintenanceTaint, Effect: corev1.TaintEffectNoSchedule}}
	})
	h.newMachine("labelled", machineOpts{mhc: "ex", owned: true, node: labelled})
	h.newMachine("tainted", machineOpts{mhc: "ex", owned: true, node: tainted})
	h.newMHC("ex")
	h.waitStatus("ex", 2, 0, 0, nil)
	h.eventually("SkippedExcluded events", func() error {
		if a, b := len(h.rec.find(EventSkippedExcluded, "labelled")), len(h.rec.find(EventSkippedExcluded, "tainted")); a != 1 || b != 1 {
			return fmt.Errorf("%d and %d events", a, b)
		}
		return nil
	})
	h.whenSettled("excluded Machines stay", func() error {
		if !h.exists("labelled") || !h.exists("tainted") {
			return fmt.Errorf("deleted")
		}
		return nil
	})
	h.patchNode(labelled, func(n *corev1.Node) { delete(n.Labels, ExcludeFromRemediationLabel) })
	h.waitGone("labelled")
	if !h.exists("tainted") {
		t.Error("the Machine of the Node under maintenance was deleted")
	}
	if n := len(h.rec.find(EventSkippedExcluded, "tainted")); n != 1 {
		t.Errorf("%d SkippedExcluded events for tainted, want 1", n)
	}
}

// TestControlPlane: a control-plane Machine is remediated like any other,
// as OpenShift does (its controller owner, the ControlPlaneMachineSet,
// replaces it); one without a controller owner is skipped.
func TestControlPlane(t *testing.T) {
	h := newHarness(t)
	master := map[string]string{"machine.openshift.io/cluster-api-machine-role": "master"}
	h.newMachine("owned-master", machineOpts{mhc: "cp", owned: true, failed: true, labels: master})
	h.newMachine("lone-master", machineOpts{mhc: "cp", failed: true, labels: master})
	h.newMHC("cp")
	h.waitGone("owned-master")
	h.eventually("SkippedNoController event", func() error {
		if n := len(h.rec.find(EventSkippedNoController, "lone-master")); n != 1 {
			return fmt.Errorf("%d events", n)
		}
		return nil
	})
	if !h.exists("lone-master") {
		t.Fatal("control-plane Machine without a controller owner deleted")
	}
}
