package machineset

import (
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

var msKey = types.NamespacedName{Namespace: "ns", Name: "ms"}

type timeoutLog struct {
	mu               sync.Mutex
	creates, deletes int
}

func newTestExpectations(timeout time.Duration) (*Expectations, *clocktesting.FakePassiveClock, *timeoutLog) {
	clk := clocktesting.NewFakePassiveClock(t0)
	e := NewExpectations(clk, timeout)
	log := &timeoutLog{}
	e.OnTimeout = func(key types.NamespacedName, c, d int) {
		log.mu.Lock()
		defer log.mu.Unlock()
		log.creates += c
		log.deletes += d
	}
	return e, clk, log
}

func mustSatisfied(t *testing.T, e *Expectations, want bool) time.Duration {
	t.Helper()
	ok, wait := e.Satisfied(msKey)
	if ok != want {
		c, d := e.Pending(msKey)
		t.Fatalf("Satisfied = %v, want %v (pending creates %d, deletes %d)", ok, want, c, d)
	}
	return wait
}

func TestExpectationsEmptyIsSatisfied(t *testing.T) {
	e, _, _ := newTestExpectations(0)
	mustSatisfied(t, e, true)
	e.CreationObserved(msKey, "x") // nothing expected: ignored
	e.DeletionObserved(msKey, "u")
	mustSatisfied(t, e, true)
	if len(e.sets) != 0 {
		t.Errorf("observations of an unknown key must not allocate: %v", e.sets)
	}
}

func TestExpectationsCreations(t *testing.T) {
	e, _, _ := newTestExpectations(time.Minute)
	e.ExpectCreations(msKey, "a", "b", "c")
	mustSatisfied(t, e, false)     // in flight
	e.CreationObserved(msKey, "c") // its Create failed
	if c, _ := e.Pending(msKey); c != 2 {
		t.Fatalf("pending creates = %d, want 2", c)
	}
	e.CreationObserved(msKey, "a")
	e.CreationObserved(msKey, "a") // duplicate: not counted twice
	mustSatisfied(t, e, false)
	e.CreationObserved(msKey, "someone-else")
	mustSatisfied(t, e, false)
	e.CreationObserved(msKey, "b")
	mustSatisfied(t, e, true)
}

// An informer faster than the Create response: the name was expected before
// the Create was sent, so the observation leaves nothing expected.
func TestExpectationsObservationBeforeResponse(t *testing.T) {
	e, _, _ := newTestExpectations(time.Minute)
	e.ExpectCreations(msKey, "fast", "slow")
	e.CreationObserved(msKey, "fast")
	mustSatisfied(t, e, false)
	e.CreationObserved(msKey, "slow")
	mustSatisfied(t, e, true)

	// An observation is not remembered, so a later name is still expected.
	e.CreationObserved(msKey, "stray")
	e.ExpectCreations(msKey, "stray")
	mustSatisfied(t, e, false)
}

func TestExpectationsDeletions(t *testing.T) {
	e, _, _ := newTestExpectations(time.Minute)
	e.ExpectDeletions(msKey, "u1", "u2", "u3")
	e.DeletionObserved(msKey, "u1")
	e.DeletionObserved(msKey, "u1") // duplicate (delete event after the deletionTimestamp update)
	if _, d := e.Pending(msKey); d != 2 {
		t.Fatalf("pending deletes = %d, want 2", d)
	}
	e.DeletionObserved(msKey, "u2")
	mustSatisfied(t, e, false)
	e.DeletionObserved(msKey, "u3")
	mustSatisfied(t, e, true)
}

func TestExpectationsTimeout(t *testing.T) {
	e, clk, log := newTestExpectations(5 * time.Minute)
	e.ExpectCreations(msKey, "a", "b")
	clk.SetTime(t0.Add(2 * time.Minute))
	e.ExpectDeletions(msKey, "u1")
	if wait := mustSatisfied(t, e, false); wait != 5*time.Minute-2*time.Minute {
		t.Errorf("wait = %v, want 3m (first deadline)", wait)
	}
	clk.SetTime(t0.Add(5 * time.Minute)) // a and b expire exactly now
	if wait := mustSatisfied(t, e, false); wait != 2*time.Minute {
		t.Errorf("wait = %v, want 2m (the deletion's deadline)", wait)
	}
	if log.creates != 2 || log.deletes != 0 {
		t.Errorf("timeouts reported = %d creates, %d deletes; want 2, 0", log.creates, log.deletes)
	}
	e.CreationObserved(msKey, "a") // late: nothing changes
	clk.SetTime(t0.Add(8 * time.Minute))
	mustSatisfied(t, e, true)
	if log.creates != 2 || log.deletes != 1 {
		t.Errorf("timeouts reported = %d creates, %d deletes; want 2, 1", log.creates, log.deletes)
	}
	// Reported once only.
	mustSatisfied(t, e, true)
	if log.creates != 2 || log.deletes != 1 {
		t.Errorf("timeouts reported twice: %d, %d", log.creates, log.deletes)
	}
}

func TestExpectationsKeysAreIndependent(t *testing.T) {
	e, _, _ := newTestExpectations(time.Minute)
	other := types.NamespacedName{Namespace: "ns", Name: "other"}
	e.ExpectDeletions(other, "u")
	mustSatisfied(t, e, true)
	e.DeletionObserved(msKey, "u") // wrong key
	if ok, _ := e.Satisfied(other); ok {
		t.Error("an observation for another MachineSet satisfied this one")
	}
	e.Forget(other)
	if ok, _ := e.Satisfied(other); !ok {
		t.Error("Forget must drop everything")
	}
}

// TestExpectationsDefaultTimeout: with no timeout given, an unobserved
// deletion holds the MachineSet for 5 minutes (OpenShift's expectations
// timeout), then expires.
func TestExpectationsDefaultTimeout(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(t0)
	e := NewExpectations(clk, 0)
	expired := 0
	e.OnTimeout = func(_ types.NamespacedName, _, d int) { expired += d }
	e.ExpectDeletions(msKey, "u")
	if wait := mustSatisfied(t, e, false); wait != 5*time.Minute {
		t.Errorf("recheck after %v, want 5m", wait)
	}
	clk.SetTime(t0.Add(5*time.Minute - time.Second))
	if wait := mustSatisfied(t, e, false); wait != time.Second {
		t.Errorf("recheck after %v, want 1s", wait)
	}
	clk.SetTime(t0.Add(5 * time.Minute))
	mustSatisfied(t, e, true)
	if expired != 1 {
		t.Errorf("%d deletions reported expired, want 1", expired)
	}
}

func TestExpectationsConcurrent(t *testing.T) {
	e, _, _ := newTestExpectations(time.Minute)
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		name := string(rune('a'+i%26)) + string(rune('A'+i/26))
		wg.Go(func() { e.ExpectCreations(msKey, name); e.CreationObserved(msKey, name) })
		wg.Go(func() { e.Pending(msKey); e.Satisfied(msKey) })
	}
	wg.Wait()
	mustSatisfied(t, e, true)
}
