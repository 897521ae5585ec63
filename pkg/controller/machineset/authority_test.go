package machineset

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/authority"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/authority/authoritytest"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
)

// TestMachineSetAuthoritativeAPI runs the authoritativeAPI cases against one
// API server with the TechPreviewNoUpgrade CRDs (they have the fields).
func TestMachineSetAuthoritativeAPI(t *testing.T) {
	t.Parallel()
	opts, err := authoritytest.Options()
	if err != nil {
		t.Fatal(err)
	}
	e := testenv.Start(t, opts)
	t.Run("PausedUntilHandedBack", func(t *testing.T) { testPausedUntilHandedBack(t, e) })
	t.Run("HandedOverWithMachines", func(t *testing.T) { testHandedOverWithMachines(t, e) })
	t.Run("GateOff", func(t *testing.T) { testAuthorityGateOff(t, e) })
	t.Run("ForeignConditionSurvives", func(t *testing.T) { testForeignConditionSurvives(t, e) })
}

func withAuthority(a machinev1beta1.MachineAuthority) func(*machinev1beta1.MachineSet) {
	return func(ms *machinev1beta1.MachineSet) { ms.Spec.AuthoritativeAPI = a }
}

// setAuthority sets status.authoritativeAPI as the migration controller does.
func (h *harness) setAuthority(name string, a machinev1beta1.MachineAuthority) {
	h.t.Helper()
	h.eventually("status.authoritativeAPI of "+name+" set to "+string(a), func() error {
		ms := h.machineSet(name)
		ms.Status.AuthoritativeAPI = a
		return h.c.Status().Update(h.ctx, ms)
	})
}

func pausedIs(status corev1.ConditionStatus, reason, message string) func(machinev1beta1.MachineSetStatus) error {
	return func(st machinev1beta1.MachineSetStatus) error {
		c := conditions.Get(st.Conditions, authority.PausedCondition)
		if c == nil {
			return fmt.Errorf("no Paused condition in %+v", st.Conditions)
		}
		if c.Status != status || c.Reason != reason || c.Message != message {
			return fmt.Errorf("Paused = %s/%s %q, want %s/%s %q", c.Status, c.Reason, c.Message, status, reason, message)
		}
		return nil
	}
}

// A MachineSet created for Cluster API gets status.authoritativeAPI from its
// spec and Paused=True, and creates no Machine (also while migrating); handed
// back, it scales to its replicas with Paused=False.
func testPausedUntilHandedBack(t *testing.T, e *testenv.Env) {
	h := newHarness(t, harnessOptions{env: e, migration: true})
	ms := h.newMachineSet("capi", 2, withAuthority(machinev1beta1.MachineAuthorityClusterAPI))
	h.waitStatus("capi", func(st machinev1beta1.MachineSetStatus) error {
		if st.AuthoritativeAPI != machinev1beta1.MachineAuthorityClusterAPI {
			return fmt.Errorf("status.authoritativeAPI %q, want ClusterAPI", st.AuthoritativeAPI)
		}
		return pausedIs(corev1.ConditionTrue, "AuthoritativeAPINotMachineAPI", "The AuthoritativeAPI status is set to 'ClusterAPI'")(st)
	})
	h.whenSettled("no Machine for a paused MachineSet", func() error {
		if n := len(h.machines(true)); n != 0 || h.cc.creates.Load() != 0 {
			return fmt.Errorf("%d Machines, %d creates", n, h.cc.creates.Load())
		}
		return nil
	})

	h.setAuthority("capi", machinev1beta1.MachineAuthorityMigrating)
	h.waitStatus("capi", pausedIs(corev1.ConditionTrue, "AuthoritativeAPINotMachineAPI", "The AuthoritativeAPI status is set to 'Migrating'"))
	h.whenSettled("no Machine while migrating", func() error {
		if n := len(h.machines(true)); n != 0 {
			return fmt.Errorf("%d Machines", n)
		}
		return nil
	})

	h.setAuthority("capi", machinev1beta1.MachineAuthorityMachineAPI)
	h.waitOwned(ms, 2)
	h.waitStatus("capi", pausedIs(corev1.ConditionFalse, "AuthoritativeAPIMachineAPI", "The AuthoritativeAPI status is set to 'MachineAPI'"))
}

// A MachineSet handed to Cluster API with Machines keeps them: scaling it
// to 0 deletes none.
func testHandedOverWithMachines(t *testing.T, e *testenv.Env) {
	h := newHarness(t, harnessOptions{env: e, migration: true})
	ms := h.newMachineSet("mapi", 2, withAuthority(machinev1beta1.MachineAuthorityMachineAPI))
	h.waitOwned(ms, 2)
	h.waitStatus("mapi", pausedIs(corev1.ConditionFalse, "AuthoritativeAPIMachineAPI", "The AuthoritativeAPI status is set to 'MachineAPI'"))

	h.updateMachineSet("mapi", func(ms *machinev1beta1.MachineSet) {
		ms.Spec.AuthoritativeAPI = machinev1beta1.MachineAuthorityClusterAPI
	})
	h.setAuthority("mapi", machinev1beta1.MachineAuthorityMigrating)
	h.setAuthority("mapi", machinev1beta1.MachineAuthorityClusterAPI)
	h.waitStatus("mapi", pausedIs(corev1.ConditionTrue, "AuthoritativeAPINotMachineAPI", "The AuthoritativeAPI status is set to 'ClusterAPI'"))
	h.updateMachineSet("mapi", func(ms *machinev1beta1.MachineSet) { ms.Spec.Replicas = new(int32) })
	h.whenSettled("a paused MachineSet scaled to 0 keeps its Machines", func() error {
		if got := h.ownedBy(ms); len(got) != 2 || h.cc.deletes.Load() != 0 {
			return fmt.Errorf("%d Machines owned, %d deletes", len(got), h.cc.deletes.Load())
		}
		return nil
	})
}

// With the gate off the fields are ignored: no Paused condition, and the
// status field is left to the migration controller.
func testAuthorityGateOff(t *testing.T, e *testenv.Env) {
	h := newHarness(t, harnessOptions{env: e})
	ms := h.newMachineSet("gate-off", 1, withAuthority(machinev1beta1.MachineAuthorityClusterAPI))
	h.waitOwned(ms, 1)
	h.whenSettled("no authority written with the gate off", func() error {
		st := h.machineSet("gate-off").Status
		if st.AuthoritativeAPI != "" || len(st.Conditions) != 0 {
			return fmt.Errorf("status.authoritativeAPI %q, conditions %+v", st.AuthoritativeAPI, st.Conditions)
		}
		return nil
	})
}

// A condition another writer sets between the controller's read and its
// status write survives: the first status write (status.authoritativeAPI),
// and the write that turns Paused True (a changed condition: a whole-list
// merge patch from the cached copy would drop "write 2").
func testForeignConditionSurvives(t *testing.T, e *testenv.Env) {
	var mu sync.Mutex
	armed, writes := false, 0
	message := func() string { return fmt.Sprintf("write %d", writes) }
	var h *harness
	before := func(ctx context.Context, obj client.Object) {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := obj.(*machinev1beta1.MachineSet); !ok || !armed {
			return
		}
		armed = false
		writes++
		live := &machinev1beta1.MachineSet{}
		err := e.Client.Get(ctx, client.ObjectKeyFromObject(obj), live)
		if err == nil {
			live.Status.Conditions = conditions.Set(live.Status.Conditions,
				conditions.New("Synchronized", corev1.ConditionTrue, "Synced", "", message()), time.Now())
			err = e.Client.Status().Update(ctx, live)
		}
		if err != nil {
			t.Errorf("foreign write: %v", err)
		}
	}
	arm := func() {
		mu.Lock()
		defer mu.Unlock()
		armed = true
	}
	foreignIs := func(want string) func(machinev1beta1.MachineSetStatus) error {
		return func(st machinev1beta1.MachineSetStatus) error {
			c := conditions.Get(st.Conditions, "Synchronized")
			if c == nil || c.Message != want {
				return fmt.Errorf("foreign condition %+v, want message %q", c, want)
			}
			return nil
		}
	}

	h = newHarness(t, harnessOptions{env: e, migration: true, beforeStatusPatch: before})
	arm()
	h.newMachineSet("foreign", 0, withAuthority(machinev1beta1.MachineAuthorityMachineAPI))
	h.waitStatus("foreign", pausedIs(corev1.ConditionFalse, "AuthoritativeAPIMachineAPI", "The AuthoritativeAPI status is set to 'MachineAPI'"))
	h.whenSettled("the first foreign condition kept", func() error {
		return foreignIs("write 1")(h.machineSet("foreign").Status)
	})

	arm()
	h.setAuthority("foreign", machinev1beta1.MachineAuthorityMigrating)
	h.waitStatus("foreign", pausedIs(corev1.ConditionTrue, "AuthoritativeAPINotMachineAPI", "The AuthoritativeAPI status is set to 'Migrating'"))
	h.whenSettled("the second foreign condition kept", func() error {
		return foreignIs("write 2")(h.machineSet("foreign").Status)
	})
}
