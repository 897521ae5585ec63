package machineset

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Expectations remembers, per MachineSet, the Machine creations (by name)
// and deletions (by UID) the controller issued but has not yet seen in its
// informer cache. It is safe for concurrent use.
//
// The protocol for creations, whose names are only known from the Create
// response (generateName):
//
//	BeginCreations(key, n)        before issuing n Creates
//	CreationSucceeded(key, name)  for each successful Create
//	CreationFailed(key)           for each failed Create
//	CreationObserved(key, name)   from the informer's create event
//
// An observation that arrives before CreationSucceeded (the informer was
// faster than the Create response) is remembered while creations are in
// flight, so the name is not expected afterwards.
//
// For deletions, whose UIDs are known beforehand:
//
//	ExpectDeletions(key, uids)    before issuing the Deletes
//	DeletionFailed(key, uid)      when a Delete failed (nothing will be observed)
//	DeletionObserved(key, uid)    from a delete event, or an update that set deletionTimestamp
//
// Every expectation expires after the timeout given to NewExpectations; an
// expired one is dropped by Satisfied and reported to the OnTimeout hook.
type Expectations struct {
	mu      sync.Mutex
	clock   clock.PassiveClock
	timeout time.Duration
	sets    map[types.NamespacedName]*expectationSet

	// OnTimeout (optional) is called, without the lock held, with the number
	// of creations and deletions of key that expired. Set it before use.
	OnTimeout func(key types.NamespacedName, creates, deletes int)
}

type expectationSet struct {
	// inFlight counts Creates issued whose outcome is not recorded yet.
	inFlight int
	// creates maps a Machine name to the deadline of its expected creation.
	creates map[string]time.Time
	// deletes maps a Machine UID to the deadline of its expected deletion.
	deletes map[types.UID]time.Time
	// early holds names observed while Creates were in flight and before
	// their CreationSucceeded; cleared when no Create is in flight.
	early map[string]struct{}
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

// set returns key's set, creating it when create is true (else nil when
// absent). The lock must be held.
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

// CreationSucceeded records that a Create begun with BeginCreations returned
// the Machine name: its creation is expected until observed.
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

// CreationFailed records that a Create begun with BeginCreations failed.
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
// Observing a name twice, or one never expected, changes nothing.
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

// ExpectDeletions records that the Machines with these UIDs are about to be
// deleted for key.
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

// DeletionFailed drops the expected deletion of uid (its Delete failed, or
// the Machine was already gone).
func (e *Expectations) DeletionFailed(key types.NamespacedName, uid types.UID) {
	e.DeletionObserved(key, uid)
}

// DeletionObserved records that the informer saw the Machine uid deleted
// or being deleted. Observing it twice changes nothing.
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
// and reports whether nothing is pending. When something is, wait is the
// time until the first pending expectation expires.
func (e *Expectations) Satisfied(key types.NamespacedName) (ok bool, wait time.Duration) {
	e.mu.Lock()
	s := e.set(key, false)
	if s == nil {
		e.mu.Unlock()
		return true, 0
	}
	now := e.clock.Now()
	var expiredCreates, expiredDeletes int
	var next time.Time
	track := func(deadline time.Time) {
		if next.IsZero() || deadline.Before(next) {
			next = deadline
		}
	}
	for name, deadline := range s.creates {
		if !now.Before(deadline) {
			delete(s.creates, name)
			expiredCreates++
		} else {
			track(deadline)
		}
	}
	for uid, deadline := range s.deletes {
		if !now.Before(deadline) {
			delete(s.deletes, uid)
			expiredDeletes++
		} else {
			track(deadline)
		}
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

// Pending returns how many creations (in flight or expected by name) and
// deletions are pending for key, without expiring anything.
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
