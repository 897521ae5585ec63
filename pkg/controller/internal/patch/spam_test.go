package patch

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
)

// recorded drains rec and returns how many events it held.
func recorded(rec *events.FakeRecorder) int {
	n := len(rec.Events)
	for range n {
		<-rec.Events
	}
	return n
}

func TestEventsSpamFilter(t *testing.T) {
	pod := func(name, uid string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: k8stypes.UID(uid)}}
	}
	withTypeMeta := pod("a", "u1")
	withTypeMeta.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	unstr := func(kind string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("machine.openshift.io/v1beta1")
		u.SetKind(kind)
		u.SetNamespace("ns")
		u.SetName("a")
		return u
	}
	type step struct {
		wait      time.Duration // fake time passing before the events
		obj       runtime.Object
		eventType string
		send      int
		want      int // events that reach the recorder
	}
	normal, warning := corev1.EventTypeNormal, corev1.EventTypeWarning
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		// Breaks if SpamBurst is 26, or Eventf skips allow.
		{"30 events on one object: 25 recorded", []step{{0, pod("a", "u1"), normal, 30, 25}}},
		// Breaks if spamEvent leaves out eventType.
		{"Warning and Normal budgets are apart", []step{{0, pod("a", "u1"), normal, 30, 25}, {0, pod("a", "u1"), warning, 30, 25}}},
		// Breaks if spamEvent leaves out name.
		{"another object has its own budget", []step{{0, pod("a", ""), normal, 30, 25}, {0, pod("b", ""), normal, 30, 25}}},
		// Breaks if spamEvent leaves out uid.
		{"a recreated object (new UID) has its own budget", []step{{0, pod("a", "u1"), normal, 30, 25}, {0, pod("a", "u2"), normal, 30, 25}}},
		// Breaks if spamEvent leaves out the Go type.
		{"another kind of the same name has its own budget", []step{
			{0, pod("a", ""), normal, 30, 25}, {0, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}, normal, 30, 25},
		}},
		// Breaks if spamEvent keys a typed object on its TypeMeta.
		{"a typed object with or without TypeMeta is one budget", []step{{0, pod("a", "u1"), normal, 20, 20}, {0, withTypeMeta, normal, 10, 5}}},
		// Breaks if spamEvent leaves out gvk.
		{"unstructured objects of two kinds have a budget each", []step{{0, unstr("Machine"), normal, 30, 25}, {0, unstr("MachineSet"), normal, 30, 25}}},
		// Breaks if SpamRefill is 10 minutes.
		{"after 5 minutes one more passes", []step{{0, pod("a", "u1"), normal, 30, 25}, {5 * time.Minute, pod("a", "u1"), normal, 3, 1}}},
		// Breaks if SpamRefill is 4 minutes.
		{"before 5 minutes none passes", []step{{0, pod("a", "u1"), normal, 30, 25}, {5*time.Minute - time.Second, pod("a", "u1"), normal, 3, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(1e9, 0))
			rec := events.NewFakeRecorder(100)
			e := &Events{Recorder: rec, Clock: clk}
			for i, s := range tc.steps {
				clk.Step(s.wait)
				for range s.send {
					e.Eventf(s.obj, nil, s.eventType, "Reason", "Act", "note")
				}
				if got := recorded(rec); got != s.want {
					t.Fatalf("step %d: %d of %d events recorded, want %d", i, got, s.send, s.want)
				}
			}
		})
	}
}

// Breaks if spamKeys is raised past 4096 or if the budgets are a plain map (a is not evicted).
func TestEventsSpamFilterIsBounded(t *testing.T) {
	rec := events.NewFakeRecorder(100)
	e := &Events{Recorder: rec, Clock: clocktesting.NewFakeClock(time.Unix(1e9, 0))}
	a := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	for range 30 {
		e.Eventf(a, nil, corev1.EventTypeNormal, "R", "A", "note")
	}
	if got := recorded(rec); got != 25 {
		t.Fatalf("%d recorded of 30, want 25 (5 dropped)", got)
	}
	for i := range 4096 {
		e.Eventf(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("n", i)}}, nil, corev1.EventTypeNormal, "R", "A", "note")
		recorded(rec)
	}
	// a was the least recently used: its spent budget was forgotten.
	e.Eventf(a, nil, corev1.EventTypeNormal, "R", "A", "note")
	if got := recorded(rec); got != 1 {
		t.Errorf("a's event after 4096 other objects: %d recorded, want 1 (its budget evicted)", got)
	}
}

// Breaks if Eventf takes a token before it checks for a nil Recorder.
func TestEventsSpamFilterNilSafe(t *testing.T) {
	e := &Events{}
	e.Eventf(nil, nil, corev1.EventTypeNormal, "R", "A", "nil object")
	var none *Events
	none.Eventf(&corev1.Node{}, nil, corev1.EventTypeNormal, "R", "A", "nil Events")
	if e.spam != nil {
		t.Error("an Events without a Recorder keeps budgets")
	}
}
