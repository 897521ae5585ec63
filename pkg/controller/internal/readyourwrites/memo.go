// Package readyourwrites lets a controller notice that its informer cache
// has not yet caught up with the controller's own last write to an object.
package readyourwrites

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// CatchUpDelay is how long a reconcile that read an object older than the
// controller's own last write should wait before looking again.
const CatchUpDelay = 100 * time.Millisecond

// TTL bounds how long a write is remembered: should the cache never show a
// newer version (it always does), the object is acted on anyway.
const TTL = 10 * time.Second

// Memo remembers, per object, the resourceVersions that a reconcile's
// writes left behind: the one it read and those of its own writes but the
// last. A later reconcile that reads one of them from the informer cache
// knows the cache has not seen the last write yet: acting on it would only
// send the same patches again (each a full update on the API server, even
// when nothing changes), or act on a view without what was just written, so
// it waits for the cache instead.
type Memo struct {
	mu    sync.Mutex
	based map[types.NamespacedName]writeMark
}

type writeMark struct {
	behind []string
	at     time.Time
}

// New returns an empty Memo.
func New() *Memo {
	return &Memo{based: map[types.NamespacedName]writeMark{}}
}

// Wrote records that a reconcile which read readVersion wrote a newer
// version (written != readVersion).
func (w *Memo) Wrote(key types.NamespacedName, readVersion, written string, now time.Time) {
	w.WroteThrough(key, []string{readVersion}, written, now)
}

// WroteThrough records that a reconcile's writes went through the versions
// behind (the one it read first, then each write's result but the last) and
// ended at written. Empty versions and written itself are ignored; nothing
// is recorded when no version is left.
func (w *Memo) WroteThrough(key types.NamespacedName, behind []string, written string, now time.Time) {
	var keep []string
	for _, v := range behind {
		if v != "" && v != written && !slices.Contains(keep, v) {
			keep = append(keep, v)
		}
	}
	if len(keep) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.based[key] = writeMark{behind: keep, at: now}
}

// Stale reports whether version, just read from the cache, is one a recent
// write left behind. Any other version forgets the mark.
func (w *Memo) Stale(key types.NamespacedName, version string, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	mark, ok := w.based[key]
	if !ok {
		return false
	}
	if slices.Contains(mark.behind, version) && now.Sub(mark.at) < TTL {
		return true
	}
	delete(w.based, key)
	return false
}

// Forget drops the mark of an object that is gone.
func (w *Memo) Forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.based, key)
}
