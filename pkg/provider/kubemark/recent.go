package kubemark

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// recentTTL is how long the provider trusts what it did itself over a cache
// that does not show it yet: the informer catches up in well under a second
// normally, and within this bound after an API-server outage.
const recentTTL = time.Minute

// recentNodes remembers the Nodes this process registered and deleted in the
// last recentTTL, so a cache that has not caught up with its own write costs
// no uncached read (Exists) and no repeated DELETE (Delete). Lost on restart:
// then the provider reads uncached, as without it.
type recentNodes struct {
	mu         sync.Mutex
	registered map[string]time.Time   // node name → when
	deleted    map[string]deletedNode // node name → UID and when
}

type deletedNode struct {
	uid types.UID
	at  time.Time
}

func newRecentNodes() *recentNodes {
	return &recentNodes{registered: map[string]time.Time{}, deleted: map[string]deletedNode{}}
}

// noteRegistered records that the Node name was just created.
func (r *recentNodes) noteRegistered(name string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prune(now)
	r.registered[name] = now
	delete(r.deleted, name)
}

// noteDeleted records that the Node name with uid was just deleted.
func (r *recentNodes) noteDeleted(name string, uid types.UID, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prune(now)
	r.deleted[name] = deletedNode{uid: uid, at: now}
	delete(r.registered, name)
}

// wasRegistered reports whether this process created the Node name within
// recentTTL (and has not deleted it since).
func (r *recentNodes) wasRegistered(name string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.registered[name]
	return ok && now.Sub(at) < recentTTL
}

// wasDeleted reports whether this process deleted the Node name within
// recentTTL; uid, when set, must be the deleted Node's.
func (r *recentNodes) wasDeleted(name string, uid types.UID, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.deleted[name]
	return ok && now.Sub(d.at) < recentTTL && (uid == "" || d.uid == uid)
}

// prune drops expired entries (callers hold mu).
func (r *recentNodes) prune(now time.Time) {
	for k, at := range r.registered {
		if now.Sub(at) >= recentTTL {
			delete(r.registered, k)
		}
	}
	for k, d := range r.deleted {
		if now.Sub(d.at) >= recentTTL {
			delete(r.deleted, k)
		}
	}
}
