package machineset

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Expectations remembers, per MachineSet, the Machine creations (by name)
// and deletions (by UID) the controller issued but its cache has not shown
// yet; each expires after the timeout. Safe for concurrent use.
//
// Creations: BeginCreations before the Creates, then CreationSucceeded or
// CreationFailed per Create; CreationObserved from the informer. A name
// observed before its CreationSucceeded is remembered while Creates are in
// flight. Deletions: ExpectDeletions before the Deletes, then
// DeletionObserved (a delete event, deletionTimestamp set, or a failure).
type Expectations struct {
	mu      sync.Mutex
	clock   clock.PassiveClock
	timeout time.Duration
	sets    map[types.NamespacedName]*expectationSet

	// OnTimeout (optional) is called, without the lock, with the counts of
	// key's expired creations and deletions. Set it before use.
	OnTimeout func(key types.NamespacedName, creates, deletes int)
}

type expectationSet struct {
	inFlight int                     // Creates whose outcome is not recorded yet
	creates  map[string]time.Time    // name → deadline
	deletes  map[types.UID]time.Time // UID → deadline
	early    map[string]struct{}     // observed before CreationSucceeded
}

func (s *expectationSet) empty() bool {
	return s.inFlight == 0 && len(s.creates) == 0 && len(s.deletes) == 0
}

// NewExpectations returns empty expectations whose entries expire after
// timeout (DefaultExpectationsTimeout when timeout <= 0) on clk (the real
// clock when nil).
func NewExpectations(clk clock.PassiveClock, timeout time.Duration) *Expectations {
	if clk == nil {
		clk = clock.RealClock{}
	}
	if timeout <= 0 {
		timeout = DefaultExpectationsTimeout
	}
	return &Expectations{clock: clk, timeout: timeout, sets: map[types.NamespacedName]*expectationSet{}}
}

// set returns key's set, creating it when create is true. The lock must be held.
func (e *Expectations) set(key types.NamespacedName, create bool) *expectationSet {
	s := e.sets[key]
	if s == nil && create {
		s = &expectationSet{creates: map[string]time.Time{}, deletes: map[types.UID]time.Time{}}
		e.sets[key] = s
	}
	return s
}

// gc drops key's set when nothing is pending. The lock must be held.
func (e *Expectations) gc(key types.NamespacedName, s *expectationSet) {
	if s.inFlight == 0 {
		s.early = nil
	}
	if s.empty() {
		delete(e.sets, key)
	}
}

// BeginCreations records that n Creates are about to be issued for key.
func (e *Expectations) BeginCreations(key types.NamespacedName, n int) {
	if n <= 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.set(key, true).inFlight += n
}

// CreationSucceeded records that a Create returned the Machine name.
func (e *Expectations) CreationSucceeded(key types.NamespacedName, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.set(key, true)
	if s.inFlight > 0 {
		s.inFlight--
	}
	if _, seen := s.early[name]; seen {
		delete(s.early, name)
	} else {
		s.creates[name] = e.clock.Now().Add(e.timeout)
	}
	e.gc(key, s)
}

// CreationFailed records that a Create failed.
func (e *Expectations) CreationFailed(key types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.set(key, false)
	if s == nil {
		return
	}
	if s.inFlight > 0 {
		s.inFlight--
	}
	e.gc(key, s)
}

// CreationObserved records that the informer saw the Machine name of key.
func (e *Expectations) CreationObserved(key types.NamespacedName, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.set(key, false)
	if s == nil {
		return
	}
	if _, ok := s.creates[name]; ok {
		delete(s.creates, name)
	} else if s.inFlight > 0 {
		if s.early == nil {
			s.early = map[string]struct{}{}
		}
		s.early[name] = struct{}{}
	}
	e.gc(key, s)
}

// ExpectDeletions records that the Machines uids are about to be deleted.
func (e *Expectations) ExpectDeletions(key types.NamespacedName, uids ...types.UID) {
	if len(uids) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.set(key, true)
	deadline := e.clock.Now().Add(e.timeout)
	for _, uid := range uids {
		s.deletes[uid] = deadline
	}
}

// DeletionObserved records that the informer saw the Machine uid (being)
// deleted, or that its Delete failed: nothing more is expected.
func (e *Expectations) DeletionObserved(key types.NamespacedName, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.set(key, false)
	if s == nil {
		return
	}
	delete(s.deletes, uid)
	e.gc(key, s)
}

// Satisfied drops key's expired expectations (reporting them to OnTimeout)
// and reports whether nothing is pending; if something is, wait is the time
// until the first pending one expires.
func (e *Expectations) Satisfied(key types.NamespacedName) (ok bool, wait time.Duration) {
	e.mu.Lock()
	s := e.set(key, false)
	if s == nil {
		e.mu.Unlock()
		return true, 0
	}
	now := e.clock.Now()
	expiredCreates, nextCreate := expire(s.creates, now)
	expiredDeletes, next := expire(s.deletes, now)
	if next.IsZero() || (!nextCreate.IsZero() && nextCreate.Before(next)) {
		next = nextCreate
	}
	inFlight := s.inFlight
	e.gc(key, s)
	ok = s.empty()
	e.mu.Unlock()

	if (expiredCreates > 0 || expiredDeletes > 0) && e.OnTimeout != nil {
		e.OnTimeout(key, expiredCreates, expiredDeletes)
	}
	if ok {
		return true, 0
	}
	if inFlight > 0 && next.IsZero() {
		return false, e.timeout
	}
	return false, next.Sub(now)
}

// Pending returns how many creations and deletions are pending for key,
// without expiring anything.
func (e *Expectations) Pending(key types.NamespacedName) (creates, deletes int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.set(key, false)
	if s == nil {
		return 0, 0
	}
	return s.inFlight + len(s.creates), len(s.deletes)
}

// Forget drops everything pending for key (the MachineSet is gone).
func (e *Expectations) Forget(key types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.sets, key)
}

// expire drops the entries of m whose deadline passed, returning how many
// and the earliest deadline left (zero when none).
func expire[K comparable](m map[K]time.Time, now time.Time) (expired int, next time.Time) {
	for k, deadline := range m {
		switch {
		case !now.Before(deadline):
			delete(m, k)
			expired++
		case next.IsZero() || deadline.Before(next):
			next = deadline
		}
	}
	return expired, next
}
