package testenv

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// Event is one event a Recorder was given.
type Event struct {
	Type, Reason string
	// Object is the name of the object the event is about ("" when it has none).
	Object string
	// Note is the message, its arguments applied.
	Note string
}

// String is the default rendering, "Type Reason Object: note".
func (e Event) String() string { return e.Type + " " + e.Reason + " " + e.Object + ": " + e.Note }

// Recorder is the fake event recorder of every suite (an events.EventRecorder, safe for concurrent use):
// it keeps the events in order and answers what a test asks of them. The zero value is ready.
type Recorder struct {
	// Format renders an event in Find, All, String and WaitExact; nil: Event.String.
	Format func(Event) string

	mu     sync.Mutex
	events []Event
}

// Eventf records an event about regarding.
func (r *Recorder) Eventf(regarding, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	r.add(Event{Type: eventtype, Reason: reason, Object: nameOf(regarding), Note: fmt.Sprintf(note, args...)})
}

func (r *Recorder) add(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// nameOf is the name of o, "" when it has none.
func nameOf(o runtime.Object) string {
	if m, ok := o.(client.Object); ok {
		return m.GetName()
	}
	return ""
}

// Events returns the events so far.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *Recorder) format(e Event) string {
	if r.Format != nil {
		return r.Format(e)
	}
	return e.String()
}

// Find returns the rendered events of reason about object; an empty reason or object matches any.
func (r *Recorder) Find(reason, object string) []string {
	var out []string
	for _, e := range r.Events() {
		if (reason == "" || e.Reason == reason) && (object == "" || e.Object == object) {
			out = append(out, r.format(e))
		}
	}
	return out
}

// Has reports whether an event of reason about object ("": any) was recorded.
func (r *Recorder) Has(reason, object string) bool { return len(r.Find(reason, object)) > 0 }

// Count returns how many events of reason were recorded.
func (r *Recorder) Count(reason string) int { return len(r.Find(reason, "")) }

// All returns every rendered event so far.
func (r *Recorder) All() []string { return r.Find("", "") }

func (r *Recorder) String() string { return strings.Join(r.All(), "\n") }

// Wait waits until an event of each reason about object was recorded (a controller records an event
// after the write it reports, so a test that saw the write may not see the event yet).
func (r *Recorder) Wait(t poll.T, timeout time.Duration, object string, reasons ...string) {
	t.Helper()
	poll.Eventually(t, timeout, fmt.Sprintf("events %v for %s", reasons, object), poll.Check(func() error {
		for _, reason := range reasons {
			if !r.Has(reason, object) {
				return fmt.Errorf("no %s event; events: %q", reason, r.All())
			}
		}
		return nil
	}))
}

// WaitExact waits until each of events, rendered as Format does, was recorded.
func (r *Recorder) WaitExact(t poll.T, timeout time.Duration, events ...string) {
	t.Helper()
	poll.Eventually(t, timeout, fmt.Sprintf("events %q", events), poll.Check(func() error {
		all := r.All()
		for _, e := range events {
			if !slices.Contains(all, e) {
				return fmt.Errorf("no event %q; events: %q", e, all)
			}
		}
		return nil
	}))
}
