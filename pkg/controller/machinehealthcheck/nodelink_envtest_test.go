package machinehealthcheck

import (
	"fmt"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/nodelink"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
)

// startNodelink runs the nodelink controller for the harness's namespace
// against the same API server as the MachineHealthCheck controller.
func (h *harness) startNodelink() {
	h.t.Helper()
	mgr := env.NewManager(h.t, env.Config, cache.Options{ByObject: map[client.Object]cache.ByObject{
		&machinev1beta1.Machine{}: {Namespaces: map[string]cache.Config{h.ns: {}}},
	}})
	r := nodelink.NewReconciler(nodelink.Options{Namespace: h.ns})
	testenv.Setup(h.t, mgr, nil, r)
	testenv.StartManager(h.t, mgr)
}

// TestNodeDeletedBehindRunningMachine: nodelink and the MachineHealthCheck
// together. A Running Machine that nodelink linked to its Node is remediated
// (deleted) when the Node is deleted: nodelink keeps the nodeRef, so the
// MachineHealthCheck sees "Node gone", with the default nodeStartupTimeout
// and with nodeStartupTimeout 0 (startup check disabled) alike.
func TestNodeDeletedBehindRunningMachine(t *testing.T) {
	for _, tc := range []struct {
		name    string
		startup *metav1.Duration
	}{
		{"default nodeStartupTimeout", nil},
		{"nodeStartupTimeout 0", &metav1.Duration{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.startNodelink()
			providerID := "kubemark://" + h.ns + "/m"
			node := h.createNode("n", corev1.ConditionTrue, time.Now().Add(-time.Hour), func(n *corev1.Node) {
				n.Spec.ProviderID = providerID
			})
			m := h.newMachine("m", machineOpts{mhc: "link", owned: true})
			base := m.DeepCopy()
			m.Spec.ProviderID = ptr.To(providerID)
			if err := h.c.Patch(h.ctx, m, client.MergeFrom(base)); err != nil {
				t.Fatal(err)
			}
			base = m.DeepCopy()
			m.Status.Phase = ptr.To(machinev1beta1.PhaseRunning)
			if err := h.c.Status().Patch(h.ctx, m, client.MergeFrom(base)); err != nil {
				t.Fatal(err)
			}
			h.newMHC("link", func(mhc *machinev1beta1.MachineHealthCheck) { mhc.Spec.NodeStartupTimeout = tc.startup })
			h.eventually("linked by nodelink", func() error {
				if ref := h.machine("m").Status.NodeRef; ref == nil || ref.Name != node || ref.UID == "" {
					return fmt.Errorf("nodeRef %+v", ref)
				}
				return nil
			})
			h.waitStatus("link", 1, 1, 1, nil)
			if !h.exists("m") {
				t.Fatal("healthy linked Machine deleted")
			}

			if err := h.c.Delete(h.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
				t.Fatal(err)
			}
			h.waitGone("m")
			// The event follows the delete request.
			h.eventually("one MachineDeleted event saying the Node is gone", func() error {
				if ev := h.rec.find(EventMachineDeleted, "m"); len(ev) != 1 || !strings.Contains(ev[0], "Node "+node+" is gone") {
					return fmt.Errorf("MachineDeleted events %v", ev)
				}
				return nil
			})
		})
	}
}
