package testenv

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Breaks if: Find matched on the rendered text instead of the fields (a reason that is a prefix of
// another, or an object named like a reason, would be counted), or Format were ignored.
func TestRecorderFind(t *testing.T) {
	r := &Recorder{}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "Drain"}}
	r.Eventf(node, nil, corev1.EventTypeNormal, "Drain", "", "drained %d pods", 2)
	r.Eventf(node, nil, corev1.EventTypeWarning, "DrainBlocked", "", "blocked")
	r.Eventf(nil, nil, corev1.EventTypeNormal, "Drain", "", "no object")
	if got, want := r.Find("Drain", "Drain"), []string{"Normal Drain Drain: drained 2 pods"}; !slices.Equal(got, want) {
		t.Errorf("Find = %q, want %q", got, want)
	}
	if n := r.Count("Drain"); n != 2 {
		t.Errorf("Count(Drain) = %d, want 2", n)
	}
	if !r.Has("DrainBlocked", "") || r.Has("Deleted", "") {
		t.Errorf("Has: %q", r.All())
	}
	r.Format = func(e Event) string { return e.Reason + ": " + e.Note }
	if got := r.All(); !slices.Equal(got, []string{"Drain: drained 2 pods", "DrainBlocked: blocked", "Drain: no object"}) {
		t.Errorf("All with Format = %q", got)
	}
}

// Breaks if: Set did not stop the clock, Advance did not move a stopped one, or the zero Clock
// were not the real time.
func TestClock(t *testing.T) {
	c := &Clock{}
	if d := time.Since(c.Now()); d < 0 || d > time.Minute {
		t.Errorf("zero Clock is %s off the real time", d)
	}
	c.Advance(time.Hour)
	if d := time.Until(c.Now()); d < 59*time.Minute {
		t.Errorf("advanced an hour, ahead by %s", d)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := StoppedClock(t0)
	s.Advance(time.Minute)
	if got := s.Now(); !got.Equal(t0.Add(time.Minute)) || s.Since(t0) != time.Minute {
		t.Errorf("stopped clock at %s after a minute, want %s", got, t0.Add(time.Minute))
	}
}
