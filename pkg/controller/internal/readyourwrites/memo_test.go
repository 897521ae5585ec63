package readyourwrites

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestMemo(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "m"}
	now := time.Unix(1000, 0)
	tests := []struct {
		name           string
		read, written  string
		cached         string
		after          time.Duration
		wantStale      bool
		wantStaleAgain bool // the same version read once more
	}{
		{name: "cache still at the version the write was based on", read: "10", written: "11", cached: "10", wantStale: true, wantStaleAgain: true},
		{name: "cache caught up", read: "10", written: "11", cached: "11"},
		{name: "cache moved past (someone else wrote too)", read: "10", written: "11", cached: "12"},
		{name: "no-op write (same version back): never wait for a version that will not come", read: "10", written: "10", cached: "10"},
		{name: "nothing read", read: "", written: "11", cached: ""},
		{name: "mark expired", read: "10", written: "11", cached: "10", after: TTL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := New()
			w.Wrote(key, tt.read, tt.written, now)
			if got := w.Stale(key, tt.cached, now.Add(tt.after)); got != tt.wantStale {
				t.Errorf("stale = %v, want %v", got, tt.wantStale)
			}
			if got := w.Stale(key, tt.cached, now.Add(tt.after)); got != tt.wantStaleAgain {
				t.Errorf("stale again = %v, want %v", got, tt.wantStaleAgain)
			}
		})
	}
	t.Run("a newer version forgets the mark", func(t *testing.T) {
		w := New()
		w.Wrote(key, "10", "11", now)
		if w.Stale(key, "11", now) || w.Stale(key, "10", now) {
			t.Error("stale after the cache had shown a newer version")
		}
	})
	// Breaks if: WroteThrough kept only the version read (the cache showing
	// the reconcile's own first write would look fresh).
	t.Run("every version a reconcile's writes left behind is stale, the last is not", func(t *testing.T) {
		w := New()
		w.WroteThrough(key, []string{"10", "11", "12"}, "13", now)
		for _, v := range []string{"10", "11", "12"} {
			if !w.Stale(key, v, now) {
				t.Errorf("version %s: not stale, want stale (the cache has not seen write 13 yet)", v)
			}
		}
		if w.Stale(key, "13", now) {
			t.Error("version 13 (the last write): stale, want fresh")
		}
	})
	t.Run("forget", func(t *testing.T) {
		w := New()
		w.Wrote(key, "10", "11", now)
		w.Forget(key)
		if w.Stale(key, "10", now) {
			t.Error("stale after forget")
		}
	})
}

// TestSent: a value written is pending for SentTTL, then forgotten; another
// value is never pending. Breaks if: Pending ignored the value (a nodeRef to
// another Node would wait for the cache instead of being written).
func TestSent(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "m"}
	now := time.Unix(1000, 0)
	s := NewSent()
	s.Note(key, "uid-1", now)
	if !s.Pending(key, "uid-1", now.Add(SentTTL-time.Millisecond)) {
		t.Error("uid-1 not pending right after it was written")
	}
	if s.Pending(key, "uid-2", now) {
		t.Error("uid-2 pending: it was never written")
	}
	if s.Pending(key, "uid-1", now.Add(SentTTL)) {
		t.Error("uid-1 still pending after TTL")
	}
	s.Note(key, "uid-1", now)
	s.Forget(key)
	if s.Pending(key, "uid-1", now) {
		t.Error("pending after Forget")
	}
}
