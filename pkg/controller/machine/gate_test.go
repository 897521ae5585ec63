package machine

import (
	"sync/atomic"
	"testing"
)

// frozenGate is a Gate a test opens and closes.
type frozenGate struct{ frozen atomic.Bool }

func (g *frozenGate) Frozen() bool { return g.frozen.Load() }

// TestGateHoldsCreateAndDelete: while the Gate is frozen the provider's
// Create and Delete are not called and the Machine is requeued; once it
// thaws both proceed. Breaks if: create or reconcileDelete skipped
// heldByGate.
func TestGateHoldsCreateAndDelete(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	g := &frozenGate{}
	g.frozen.Store(true)
	f.r.opts.Gate = g
	f.act.Set(func(a *fakeActuator) {
		a.CreateSetsInstance = true
		a.ProviderID = "test://" + f.ns + "/gated"
		a.Addresses = []string{"10.0.0.9"}
	})
	m := f.machine("gated")

	if res := f.mustReconcile(m); res.RequeueAfter != gateRequeueAfter {
		t.Errorf("frozen: result %+v, want a requeue after %s", res, gateRequeueAfter)
	}
	wantCalls(t, f.act, map[string]int{opExists: 1})

	g.frozen.Store(false)
	f.mustReconcile(m)
	wantCalls(t, f.act, map[string]int{opExists: 2, opCreate: 1})

	f.deleteMachine(m)
	g.frozen.Store(true)
	if res := f.mustReconcile(m); res.RequeueAfter != gateRequeueAfter {
		t.Errorf("frozen delete: result %+v, want a requeue after %s", res, gateRequeueAfter)
	}
	if n := f.act.Calls(opDelete); n != 0 {
		t.Errorf("Delete called %d times while frozen", n)
	}
	if got := f.get(m); got == nil {
		t.Fatal("the Machine is gone while frozen")
	}

	g.frozen.Store(false)
	f.mustReconcile(m)
	if n := f.act.Calls(opDelete); n != 1 {
		t.Errorf("Delete called %d times after the thaw, want 1", n)
	}
}
