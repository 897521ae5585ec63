package machine

import (
	"sync"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// eventMemo remembers the last note of repeatable warning events (a provider
// error on every retry) so each distinct failure is recorded once, not on
// every reconcile. Transitions of conditions are detected from the persisted
// status instead and need no memo.
type eventMemo struct {
	mu   sync.Mutex
	last map[types.NamespacedName]map[string]string
}

func newEventMemo() *eventMemo {
	return &eventMemo{last: map[types.NamespacedName]map[string]string{}}
}

// once records the event unless the same reason and note were the last ones
// recorded for this Machine.
func (e *eventMemo) once(r *Reconciler, m *machinev1beta1.Machine, eventType, reason, action, note string) {
	key := client.ObjectKeyFromObject(m)
	e.mu.Lock()
	byReason := e.last[key]
	if byReason == nil {
		byReason = map[string]string{}
		e.last[key] = byReason
	}
	if prev, ok := byReason[reason]; ok && prev == note {
		e.mu.Unlock()
		return
	}
	byReason[reason] = note
	e.mu.Unlock()
	r.eventf(m, eventType, reason, action, "%s", note)
}

// clear forgets reason for the Machine (the failure is over).
func (e *eventMemo) clear(m *machinev1beta1.Machine, reason string) {
	key := client.ObjectKeyFromObject(m)
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.last[key], reason)
	if len(e.last[key]) == 0 {
		delete(e.last, key)
	}
}

// forget drops everything remembered for the Machine.
func (e *eventMemo) forget(key types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.last, key)
}
