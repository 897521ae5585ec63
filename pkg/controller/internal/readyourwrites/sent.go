package readyourwrites

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// SentTTL bounds how long Sent remembers a value: longer than TTL, because
// a loaded API server delivers watch events seconds late (measured: a queue
// of 500 new Machines), and a value rewritten after a short TTL is a request
// for nothing; should someone else remove the value meanwhile, it is
// written again at the latest SentTTL later.
const SentTTL = time.Minute

// Sent remembers, per object, a value the controller wrote (for example the
// UID of the Node a nodeRef names) for SentTTL. A cached object that does not
// show the value yet while it is remembered comes from a cache that has not
// caught up: Memo cannot tell, when another writer's version landed between
// the read and the write, but the value can. Writing it again would only
// send the same patch twice.
type Sent struct {
	mu   sync.Mutex
	sent map[types.NamespacedName]sentValue
}

type sentValue struct {
	value string
	at    time.Time
}

// NewSent returns an empty Sent.
func NewSent() *Sent {
	return &Sent{sent: map[types.NamespacedName]sentValue{}}
}

// Note records that value was written to key (and drops expired records,
// so objects deleted meanwhile are not remembered for ever).
func (s *Sent) Note(key types.NamespacedName, value string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range s.sent {
		if now.Sub(v.at) >= SentTTL {
			delete(s.sent, k)
		}
	}
	s.sent[key] = sentValue{value: value, at: now}
}

// Pending reports whether value was written to key less than SentTTL ago (so a
// cache that does not show it is behind).
func (s *Sent) Pending(key types.NamespacedName, value string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.sent[key]
	if ok && now.Sub(v.at) >= SentTTL {
		delete(s.sent, key)
		return false
	}
	return ok && v.value == value
}

// Forget drops what was recorded for key (its write is visible, or the
// object is gone).
func (s *Sent) Forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sent, key)
}
