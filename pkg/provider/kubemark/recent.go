package kubemark

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// recentTTL is how long the provider trusts what it did itself over a cache that does not show it yet
// (the informer catches up in well under a second normally, within this bound after an API-server outage).
const recentTTL = time.Minute

// recentNodes remembers the Nodes this process registered and deleted in the last recentTTL, so a lagging
// cache costs no uncached read (Exists) and no repeated DELETE (Delete). Lost on restart.
type recentNodes struct {
	mu    sync.Mutex
	nodes map[string]recentNode // by node name
}

// recentNode is the last thing this process did to a Node: registered it, or deleted it (with its UID).
type recentNode struct {
	deleted bool
	uid     types.UID
	at      time.Time
}

func newRecentNodes() *recentNodes { return &recentNodes{nodes: map[string]recentNode{}} }

// noteRegistered records that the Node name was just created.
func (r *recentNodes) noteRegistered(name string, now time.Time) { r.note(name, recentNode{at: now}) }

// noteDeleted records that the Node name with uid was just deleted.
func (r *recentNodes) noteDeleted(name string, uid types.UID, now time.Time) {
	r.note(name, recentNode{deleted: true, uid: uid, at: now})
}

func (r *recentNodes) note(name string, n recentNode) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, old := range r.nodes {
		if n.at.Sub(old.at) >= recentTTL {
			delete(r.nodes, k)
		}
	}
	r.nodes[name] = n
}

// last returns what this process did to the Node name within recentTTL.
func (r *recentNodes) last(name string, now time.Time) (recentNode, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, ok := r.nodes[name]
	return n, ok && now.Sub(n.at) < recentTTL
}

// wasRegistered reports whether this process created the Node name within recentTTL (and has not deleted it).
func (r *recentNodes) wasRegistered(name string, now time.Time) bool {
	n, ok := r.last(name, now)
	return ok && !n.deleted
}

// wasDeleted reports whether this process deleted the Node name within recentTTL; uid, when set, must be
// the deleted Node's.
func (r *recentNodes) wasDeleted(name string, uid types.UID, now time.Time) bool {
	n, ok := r.last(name, now)
	return ok && n.deleted && (uid == "" || n.uid == uid)
}
