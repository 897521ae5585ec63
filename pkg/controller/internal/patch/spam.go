package patch

import (
	"cmp"
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// The budget of client-go's EventSourceObjectSpamFilter, which OpenShift's recorders apply and our
// events.k8s.io recorder lacks (docs/architecture.md, "Status writes and events").
const (
	SpamBurst  = 25
	SpamRefill = 5 * time.Minute
	spamKeys   = 4096
)

// spamEvent is what the spam filter keys on (no source: an Events is one
// controller's). A typed object's Go type names its kind whether or not its
// TypeMeta is set (a decoded response clears it); an unstructured one needs its GVK.
func spamEvent(obj runtime.Object, eventType string) *corev1.Event {
	ev := &corev1.Event{Type: eventType}
	if obj == nil {
		return ev
	}
	t := reflect.TypeOf(obj)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	ev.InvolvedObject.Kind = t.PkgPath() + "." + t.Name()
	if u, ok := obj.(runtime.Unstructured); ok {
		ev.InvolvedObject.APIVersion = u.GetObjectKind().GroupVersionKind().String()
	}
	if m, err := meta.Accessor(obj); err == nil {
		ev.InvolvedObject.Namespace, ev.InvolvedObject.Name, ev.InvolvedObject.UID = m.GetNamespace(), m.GetName(), m.GetUID()
	}
	return ev
}

// allow takes a token from regarding's budget for eventType; false drops the event.
func (e *Events) allow(regarding runtime.Object, eventType string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.spam == nil {
		c := cmp.Or[clock.PassiveClock](e.Clock, clock.RealClock{})
		e.spam = record.NewEventSourceObjectSpamFilter(spamKeys, SpamBurst, float32(1/SpamRefill.Seconds()), c,
			func(ev *corev1.Event) string { return fmt.Sprintf("%#v", []any{ev.InvolvedObject, ev.Type}) })
	}
	return !e.spam.Filter(spamEvent(regarding, eventType))
}
