package patch

import (
	"fmt"
	"maps"
	"sync"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// MaxNote is the longest event note the API server accepts (events.k8s.io/v1).
const MaxNote = 1024

// Events records a controller's events, a repeated note per scope, subject and reason once, within the
// spam filter's budget (spam.go). A nil Recorder records nothing. Safe for concurrent use.
type Events struct {
	Recorder events.EventRecorder
	// Clock (optional) refills the spam filter's budgets; nil is the real clock.
	Clock clock.PassiveClock

	mu   sync.Mutex
	last map[types.NamespacedName]map[memoKey]string // scope → note
	spam *record.EventSourceObjectSpamFilter
}

type memoKey struct{ subject, reason string }

// Eventf records an event, its note cut to MaxNote, unless the spam filter
// drops it (the regarding object spent its budget for eventType).
func (e *Events) Eventf(regarding, related runtime.Object, eventType, reason, action, note string, args ...any) {
	if e == nil || e.Recorder == nil || !e.allow(regarding, eventType) {
		return
	}
	e.Recorder.Eventf(regarding, related, eventType, reason, action, "%s", Truncate(fmt.Sprintf(note, args...), MaxNote))
}

// Event is one event for Once: what it is about and what it says.
type Event struct {
	Regarding runtime.Object // the object the event is about
	Type      string         // corev1.EventTypeNormal or corev1.EventTypeWarning
	Reason    string         // CamelCase, why the event happened; also the memo key with the subject
	Action    string         // what the controller was doing (Create, Delete, Remediate...)
	Note      string         // the human-readable text, recorded as is (not a format)
}

// Once records ev if First says its note is new for ev.Reason on subject in
// scope; it reports whether the note was new (the spam filter may still drop
// the event, as Eventf's).
func (e *Events) Once(scope types.NamespacedName, subject string, ev Event) bool {
	if !e.First(scope, subject, ev.Reason, ev.Note) {
		return false
	}
	e.Eventf(ev.Regarding, nil, ev.Type, ev.Reason, ev.Action, "%s", ev.Note)
	return true
}

// First reports whether note is new for reason on subject (a name within scope, "" for scope), and remembers it.
func (e *Events) First(scope types.NamespacedName, subject, reason, note string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.last == nil {
		e.last = map[types.NamespacedName]map[memoKey]string{}
	}
	if e.last[scope] == nil {
		e.last[scope] = map[memoKey]string{}
	}
	k := memoKey{subject, reason}
	if prev, ok := e.last[scope][k]; ok && prev == note {
		return false
	}
	e.last[scope][k] = note
	return true
}

// Clear forgets reason on subject in scope (the failure is over); it reports whether it was remembered.
func (e *Events) Clear(scope types.NamespacedName, subject, reason string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.last[scope][memoKey{subject, reason}]
	delete(e.last[scope], memoKey{subject, reason})
	e.dropEmpty(scope)
	return ok
}

// KeepOnly forgets the subjects of scope not in keep.
func (e *Events) KeepOnly(scope types.NamespacedName, keep map[string]bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	maps.DeleteFunc(e.last[scope], func(k memoKey, _ string) bool { return !keep[k.subject] })
	e.dropEmpty(scope)
}

// Forget drops everything remembered in scope (the object is gone).
func (e *Events) Forget(scope types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.last, scope)
}

func (e *Events) dropEmpty(scope types.NamespacedName) {
	if len(e.last[scope]) == 0 {
		delete(e.last, scope)
	}
}

// Truncate cuts s to at most n (≥ 3) bytes on a rune boundary, ending in "...".
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n-3, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
