package patch

import (
	"cmp"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"
)

// The budget of client-go's EventSourceObjectSpamFilter (tools/record), which
// every OpenShift machine-api controller's recorder applies: per source and
// object and event type, 25 events at once, then one per 5 minutes, over at
// most 4096 keys. The events.k8s.io recorder we use has no such filter.
const (
	SpamBurst  = 25
	SpamRefill = 5 * time.Minute
	spamKeys   = 4096
)

// spamKey is client-go's spam key without the source, since an Events is one
// controller's. A typed object's Go type names its kind and apiVersion
// whether or not its TypeMeta is set (a decoded response clears it); only an
// unstructured object needs its GVK.
type spamKey struct {
	typ       reflect.Type
	gvk       schema.GroupVersionKind
	namespace string
	name      string
	uid       types.UID
	eventType string
}

func spamKeyOf(obj runtime.Object, eventType string) spamKey {
	k := spamKey{eventType: eventType}
	if obj == nil {
		return k
	}
	k.typ = reflect.TypeOf(obj)
	if u, ok := obj.(runtime.Unstructured); ok {
		k.gvk = u.GetObjectKind().GroupVersionKind()
	}
	if m, err := meta.Accessor(obj); err == nil {
		k.namespace, k.name, k.uid = m.GetNamespace(), m.GetName(), m.GetUID()
	}
	return k
}

// allow takes a token from regarding's budget for eventType; false drops the event.
func (e *Events) allow(regarding runtime.Object, eventType string) bool {
	key := spamKeyOf(regarding, eventType)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.budgets == nil {
		e.budgets = lru.New(spamKeys)
	}
	var budget flowcontrol.PassiveRateLimiter
	if v, ok := e.budgets.Get(key); ok {
		budget = v.(flowcontrol.PassiveRateLimiter)
	} else {
		c := cmp.Or[clock.PassiveClock](e.Clock, clock.RealClock{})
		budget = flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(float32(1/SpamRefill.Seconds()), SpamBurst, c)
		e.budgets.Add(key, budget)
	}
	if !budget.TryAccept() {
		e.dropped++
		return false
	}
	return true
}

// Dropped is the number of events the spam filter dropped.
func (e *Events) Dropped() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.dropped
}
