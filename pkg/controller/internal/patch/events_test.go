package patch

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
)

func TestEventsMemo(t *testing.T) {
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	b := types.NamespacedName{Namespace: "ns", Name: "b"}
	type step struct {
		do   func(e *Events) bool
		want bool
	}
	first := func(scope types.NamespacedName, subject, reason, note string) func(*Events) bool {
		return func(e *Events) bool { return e.First(scope, subject, reason, note) }
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"a note is new once", []step{{first(a, "m", "R", "x"), true}, {first(a, "m", "R", "x"), false}}},
		{"a changed note is new", []step{{first(a, "m", "R", "x"), true}, {first(a, "m", "R", "y"), true}, {first(a, "m", "R", "x"), true}}},
		{"reasons, subjects and scopes are apart", []step{
			{first(a, "m", "R", "x"), true}, {first(a, "m", "S", "x"), true}, {first(a, "n", "R", "x"), true}, {first(b, "m", "R", "x"), true},
		}},
		{"an empty note counts", []step{{first(a, "", "R", ""), true}, {first(a, "", "R", ""), false}}},
		{"clear makes it new again and reports what it cleared", []step{
			{first(a, "m", "R", "x"), true},
			{func(e *Events) bool { return e.Clear(a, "m", "R") }, true},
			{func(e *Events) bool { return e.Clear(a, "m", "R") }, false},
			{first(a, "m", "R", "x"), true},
		}},
		{"clear keeps other reasons", []step{
			{first(a, "m", "R", "x"), true}, {first(a, "m", "S", "x"), true},
			{func(e *Events) bool { return e.Clear(a, "m", "R") }, true},
			{first(a, "m", "S", "x"), false},
		}},
		{"keepOnly drops the other subjects of its scope only", []step{
			{first(a, "m", "R", "x"), true}, {first(a, "n", "R", "x"), true}, {first(b, "m", "R", "x"), true},
			{func(e *Events) bool { e.KeepOnly(a, map[string]bool{"n": true}); return true }, true},
			{first(a, "m", "R", "x"), true}, {first(a, "n", "R", "x"), false}, {first(b, "m", "R", "x"), false},
		}},
		{"forget drops its scope only", []step{
			{first(a, "m", "R", "x"), true}, {first(b, "m", "R", "x"), true},
			{func(e *Events) bool { e.Forget(a); return true }, true},
			{first(a, "m", "R", "x"), true}, {first(b, "m", "R", "x"), false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Events{}
			for i, s := range tc.steps {
				if got := s.do(e); got != s.want {
					t.Fatalf("step %d: got %v, want %v", i, got, s.want)
				}
			}
		})
	}
}

func TestEventsForgetLeavesNothing(t *testing.T) {
	e := &Events{}
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	e.First(a, "m", "R", "x")
	e.First(a, "", "S", "x")
	e.Clear(a, "m", "R")
	e.KeepOnly(a, nil)
	if len(e.last) != 0 {
		t.Errorf("memo keeps %v after every entry was cleared", e.last)
	}
}

func TestEventsRecord(t *testing.T) {
	rec := events.NewFakeRecorder(10)
	e := &Events{Recorder: rec}
	obj := &corev1.Node{}
	scope := types.NamespacedName{Name: "n"}
	e.Eventf(obj, nil, corev1.EventTypeWarning, "Failed", "Do", "failed %d times: %s", 3, strings.Repeat("x", 2000))
	done := Event{Regarding: obj, Type: corev1.EventTypeNormal, Reason: "Done", Action: "Do", Note: "done 100%"}
	if !e.Once(scope, "", done) || e.Once(scope, "", done) {
		t.Error("Once did not record the first note exactly once")
	}
	got := <-rec.Events
	if want := "Warning Failed failed 3 times: " + strings.Repeat("x", MaxNote-len("failed 3 times: ")-3) + "..."; got != want {
		t.Errorf("long note recorded as %q (%d bytes), want it cut to %d", got[:40], len(got), MaxNote)
	}
	if got := <-rec.Events; got != "Normal Done done 100%" {
		t.Errorf("Once recorded %q, want %q (the note is not a format)", got, "Normal Done done 100%")
	}
	if len(rec.Events) != 0 {
		t.Errorf("%d extra events", len(rec.Events))
	}
	(&Events{}).Eventf(obj, nil, corev1.EventTypeNormal, "R", "A", "no recorder: no panic")
	var none *Events
	none.Eventf(obj, nil, corev1.EventTypeNormal, "R", "A", "nil Events: no panic")
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven char", 10, "eleven ..."},
		{"ab€cd", 6, "ab..."}, // € is 3 bytes: the cut backs off to its start
		{"abcdef", 2, "..."},
	} {
		if got := Truncate(tc.in, tc.n); got != tc.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
