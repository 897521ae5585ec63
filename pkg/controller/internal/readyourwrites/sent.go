package readyourwrites

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// SentTTL bounds how long Sent remembers a value: longer than TTL, as a
// loaded API server delivers watch events seconds late (500 new Machines).
const SentTTL = time.Minute

// Sent remembers, per object, a value the controller wrote (e.g. a nodeRef's
// Node UID) for SentTTL: a cached object without it is from a cache behind,
// which Memo cannot tell when another writer's version landed in between.
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

// Note records that value was written to key (and drops expired records).
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

// Pending reports whether value was written to key less than SentTTL ago.
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

// Forget drops what was recorded for key.
func (s *Sent) Forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sent, key)
}
