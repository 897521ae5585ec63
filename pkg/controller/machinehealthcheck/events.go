package machinehealthcheck

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// eventMemo remembers, per MachineHealthCheck and Machine, the last note
// recorded for each reason, so an event is recorded once per state and not
// on every reconcile. It also remembers which MachineHealthChecks are
// short-circuited, so RemediationRestricted is recorded once per transition
// even when the cache lags behind the persisted condition.
type eventMemo struct {
	mu         sync.Mutex
	last       map[types.NamespacedName]map[string]map[string]string // mhc → machine → reason → note
	restricted map[types.NamespacedName]bool
}

func newEventMemo() *eventMemo {
	return &eventMemo{
		last:       map[types.NamespacedName]map[string]map[string]string{},
		restricted: map[types.NamespacedName]bool{},
	}
}

// first reports whether note is new for (mhc, machine, reason), and
// remembers it.
func (e *eventMemo) first(mhc types.NamespacedName, machine, reason, note string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	byMachine := e.last[mhc]
	if byMachine == nil {
		byMachine = map[string]map[string]string{}
		e.last[mhc] = byMachine
	}
	byReason := byMachine[machine]
	if byReason == nil {
		byReason = map[string]string{}
		byMachine[machine] = byReason
	}
	if prev, ok := byReason[reason]; ok && prev == note {
		return false
	}
	byReason[reason] = note
	return true
}

// clear forgets the note of reason for (mhc, machine): the condition is
// over, its next occurrence is recorded again.
func (e *eventMemo) clear(mhc types.NamespacedName, machine, reason string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.last[mhc][machine], reason)
}

// keepOnly forgets the Machines of mhc not in keep (healthy again or gone).
func (e *eventMemo) keepOnly(mhc types.NamespacedName, keep map[string]bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for name := range e.last[mhc] {
		if !keep[name] {
			delete(e.last[mhc], name)
		}
	}
	if len(e.last[mhc]) == 0 {
		delete(e.last, mhc)
	}
}

// setRestricted records the short-circuit state of mhc and reports whether
// it changed.
func (e *eventMemo) setRestricted(mhc types.NamespacedName, restricted bool) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	changed := e.restricted[mhc] != restricted
	if restricted {
		e.restricted[mhc] = true
	} else {
		delete(e.restricted, mhc)
	}
	return changed
}

// forget drops everything about mhc.
func (e *eventMemo) forget(mhc types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.last, mhc)
	delete(e.restricted, mhc)
}
