package machinehealthcheck

import (
	"fmt"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
)

// machine reads Machine name from the API server.
func (h *harness) machine(name string) *machinev1beta1.Machine {
	h.t.Helper()
	return testenv.Get[machinev1beta1.Machine](h.t, h.c, h.ns, name)
}

// TestExternalBaremetal: with OpenShift's remediation-strategy annotation an
// unhealthy Machine (Node gone, or no Node past nodeStartupTimeout) is
// annotated host.metal3.io/external-remediation, owner or not, and not
// deleted; one ExternalAnnotationAdded event each, nothing more while the
// annotation is there. A Failed Machine is still deleted.
func TestExternalBaremetal(t *testing.T) {
	h := newHarness(t)
	h.newMachine("node-gone", machineOpts{mhc: "bm", owned: true, node: h.ns + "-never-existed"})
	h.newMachine("no-node", machineOpts{mhc: "bm"})
	h.newMachine("failed", machineOpts{mhc: "bm", owned: true, failed: true})
	h.newMHC("bm", func(m *machinev1beta1.MachineHealthCheck) {
		m.Annotations = map[string]string{RemediationStrategyAnnotation: RemediationStrategyExternalBaremetal}
		m.Spec.NodeStartupTimeout = &metav1.Duration{Duration: time.Second}
	})
	h.waitGone("failed")
	for _, name := range []string{"node-gone", "no-node"} {
		h.eventually(name+" annotated", func() error {
			if _, ok := h.machine(name).Annotations[ExternalRemediationAnnotation]; !ok {
				return fmt.Errorf("annotations %v", h.machine(name).Annotations)
			}
			return nil
		})
	}
	h.poke("bm")
	h.whenSettled("annotated Machines stay, one event each", func() error {
		for _, name := range []string{"node-gone", "no-node"} {
			if !h.exists(name) {
				return fmt.Errorf("%s deleted", name)
			}
			if n := len(h.rec.find(EventExternalAnnotationAdded, name)); n != 1 {
				return fmt.Errorf("%d %s events for %s", n, EventExternalAnnotationAdded, name)
			}
		}
		return nil
	})
}

// TestStartupFromLastUpdated: with OpenShift's startup clock a Machine
// without status.lastUpdated is not timed (however old), and one updated
// longer than nodeStartupTimeout ago is remediated.
func TestStartupFromLastUpdated(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.NodeStartupTimeoutFrom = StartupFromLastUpdated })
	h.newMachine("no-node", machineOpts{mhc: "lu", owned: true})
	h.newMHC("lu", func(m *machinev1beta1.MachineHealthCheck) {
		m.Spec.NodeStartupTimeout = &metav1.Duration{Duration: time.Second}
	})
	h.waitStatus("lu", 1, 0, 1, nil)
	h.eventually("past the startup timeout from creation", func() error {
		if age := time.Since(h.machine("no-node").CreationTimestamp.Time); age < 2*time.Second {
			return fmt.Errorf("created %s ago", age)
		}
		return nil
	})
	h.poke("lu")
	h.whenSettled("not timed without lastUpdated", func() error {
		if !h.exists("no-node") {
			return fmt.Errorf("deleted")
		}
		return nil
	})
	m := h.machine("no-node")
	base := m.DeepCopy()
	m.Status.LastUpdated = ptr.To(metav1.NewTime(time.Now().Add(-time.Minute)))
	if err := h.c.Status().Patch(h.ctx, m, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	h.waitGone("no-node") // the lastUpdated write alone wakes the controller
}

// TestReplacedNodeIsGone: a Machine whose nodeRef names a Node that was
// recreated under the same name (another UID) has lost its Node: it is
// remediated at once, whatever the new Node's health. nodelink runs too (it
// has no providerID or address to link the Machine by).
func TestReplacedNodeIsGone(t *testing.T) {
	h := newHarness(t)
	h.startNodelink()
	node := h.createNode("n", corev1.ConditionTrue, time.Now().Add(-time.Hour))
	m := h.newMachine("m", machineOpts{mhc: "rn", owned: true})
	base := m.DeepCopy()
	m.Status.NodeRef = &corev1.ObjectReference{Kind: "Node", Name: node, UID: "uid-of-a-deleted-node"}
	if err := h.c.Status().Patch(h.ctx, m, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	h.newMHC("rn")
	h.waitGone("m")
	// The event follows the delete request.
	h.eventually("one MachineDeleted event", func() error {
		if ev := h.rec.find(EventMachineDeleted, "m"); len(ev) != 1 {
			return fmt.Errorf("MachineDeleted events %v, want 1", ev)
		}
		return nil
	})
}
