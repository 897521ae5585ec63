// Package readyourwrites lets a controller notice that its informer cache
// has not yet caught up with the controller's own last write to an object.
package readyourwrites

import (
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

// Memo remembers, per object, the resourceVersion a reconcile read before it
// wrote. A later reconcile that reads that very version from the informer
// cache knows the cache has not seen the write yet: acting on it would only
// send the same patches again (each a full update on the API server, even
// when nothing changes), so it waits for the cache instead.
type Memo struct {
	mu    sync.Mutex
	based map[types.NamespacedName]writeMark
}

type writeMark struct {
	readVersion string
	at          time.Time
}

// New returns an empty Memo.
func New() *Memo {
	return &Memo{based: map[types.NamespacedName]writeMark{}}
}

// Wrote records that a reconcile which read readVersion wrote a newer
// version (written != readVersion).
func (w *Memo) Wrote(key types.NamespacedName, readVersion, written string, now time.Time) {
	if readVersion == "" || written == readVersion {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.based[key] = writeMark{readVersion: readVersion, at: now}
}

// Stale reports whether version, just read from the cache, is the one a
// recent write was based on. Any other version forgets the mark.
func (w *Memo) Stale(key types.NamespacedName, version string, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	mark, ok := w.based[key]
	if !ok {
		return false
	}
	if mark.readVersion == version && now.Sub(mark.at) < TTL {
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
