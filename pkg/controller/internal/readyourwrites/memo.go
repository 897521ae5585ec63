// Package readyourwrites tells a controller its cache has not shown its own last write yet.
package readyourwrites

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// CatchUpDelay is how long a reconcile that read an object older than its own last write waits.
const CatchUpDelay = 100 * time.Millisecond

// TTL bounds how long a write is remembered, should the cache never show it.
const TTL = 10 * time.Second

// Memo remembers, per object, the resourceVersions a reconcile's writes left behind (the one read, each write's
// but the last), so a later reconcile reading one waits for the cache. See docs/architecture.md, "Reading our own writes".
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

// Wrote records that a reconcile which read readVersion wrote version written.
func (w *Memo) Wrote(key types.NamespacedName, readVersion, written string, now time.Time) {
	w.WroteThrough(key, []string{readVersion}, written, now)
}

// WroteThrough records that a reconcile's writes went through behind and ended at written.
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

// Stale reports whether version, just read, is one a recent write left behind (else forgets it).
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
