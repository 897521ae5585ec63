package machineset

import (
	"cmp"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Expectations remembers, per MachineSet, the Machine creations (by name) and deletions
// (by UID) being sent, until the cache shows them, they fail or expire. Concurrency-safe.
type Expectations struct {
	mu      sync.Mutex
	clock   clock.PassiveClock
	timeout time.Duration
	sets    map[types.NamespacedName]map[expectation]time.Time // → deadline

	// OnTimeout (optional) is called, without the lock, with the counts of
	// key's expired creations and deletions. Set it before use.
	OnTimeout func(key types.NamespacedName, creates, deletes int)
}

// expectation is a Machine creation (by name) or deletion (by UID).
type expectation struct {
	deletion bool
	id       string
}

// NewExpectations returns empty expectations expiring after timeout (<= 0:
// DefaultExpectationsTimeout) on clk (nil: the real clock).
func NewExpectations(clk clock.PassiveClock, timeout time.Duration) *Expectations {
	clk = cmp.Or[clock.PassiveClock](clk, clock.RealClock{})
	if timeout <= 0 {
		timeout = DefaultExpectationsTimeout
	}
	return &Expectations{clock: clk, timeout: timeout, sets: map[types.NamespacedName]map[expectation]time.Time{}}
}

// ExpectCreations records that Machines of these names are about to be created for key.
func (e *Expectations) ExpectCreations(key types.NamespacedName, names ...string) {
	expect(e, key, false, names)
}

// ExpectDeletions records that the Machines uids are about to be deleted for key.
func (e *Expectations) ExpectDeletions(key types.NamespacedName, uids ...types.UID) {
	expect(e, key, true, uids)
}

func expect[ID ~string](e *Expectations, key types.NamespacedName, deletion bool, ids []ID) {
	if len(ids) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sets[key] == nil {
		e.sets[key] = map[expectation]time.Time{}
	}
	deadline := e.clock.Now().Add(e.timeout)
	for _, id := range ids {
		e.sets[key][expectation{deletion, string(id)}] = deadline
	}
}

// CreationObserved records that the informer saw the Machine name of key, or
// that its Create failed.
func (e *Expectations) CreationObserved(key types.NamespacedName, name string) {
	e.observed(key, expectation{false, name})
}

// DeletionObserved records that the informer saw the Machine uid (being)
// deleted, or that its Delete failed.
func (e *Expectations) DeletionObserved(key types.NamespacedName, uid types.UID) {
	e.observed(key, expectation{true, string(uid)})
}

func (e *Expectations) observed(key types.NamespacedName, x expectation) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.sets[key], x)
	if len(e.sets[key]) == 0 {
		delete(e.sets, key)
	}
}

// Satisfied drops key's expired expectations (to OnTimeout) and reports
// whether nothing is pending, else the time until the next expires.
func (e *Expectations) Satisfied(key types.NamespacedName) (ok bool, wait time.Duration) {
	e.mu.Lock()
	now := e.clock.Now()
	var creates, deletes int
	var next time.Time
	for x, deadline := range e.sets[key] {
		switch {
		case now.Before(deadline):
			if next.IsZero() || deadline.Before(next) {
				next = deadline
			}
			continue
		case x.deletion:
			deletes++
		default:
			creates++
		}
		delete(e.sets[key], x)
	}
	if len(e.sets[key]) == 0 {
		delete(e.sets, key)
	}
	e.mu.Unlock()

	if (creates > 0 || deletes > 0) && e.OnTimeout != nil {
		e.OnTimeout(key, creates, deletes)
	}
	if next.IsZero() {
		return true, 0
	}
	return false, next.Sub(now)
}

// Pending returns how many creations and deletions are pending for key.
func (e *Expectations) Pending(key types.NamespacedName) (creates, deletes int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for x := range e.sets[key] {
		if x.deletion {
			deletes++
		} else {
			creates++
		}
	}
	return creates, deletes
}

// Forget drops everything pending for key (the MachineSet is gone).
func (e *Expectations) Forget(key types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.sets, key)
}
