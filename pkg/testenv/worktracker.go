package testenv

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// WorkTracker observes a controller's work queue, so that a test can wait
// until the controller has handled everything it was given instead of
// sleeping and hoping. Pass NewQueue as controller.Options.NewQueue:
//
//	wt := testenv.NewWorkTracker()
//	r.SetupWithManager(mgr, controller.Options{NewQueue: wt.NewQueue})
//	...
//	poll.Eventually(t, timeout, "controller settled", wt.Quiescent(10*time.Second,
//		testenv.CaughtUp(env.Client, mgr.GetClient(), &machinev1beta1.MachineList{}, client.InNamespace(ns))))
type WorkTracker struct {
	mu sync.Mutex
	// pending: requests queued and not handed to a worker since, with the
	// earliest time each is due (later than now for requeues after a delay).
	pending map[reconcile.Request]time.Time
	// unscheduled: rate-limited adds whose delay the queue has not asked
	// the rate limiter for yet (it does so asynchronously).
	unscheduled map[reconcile.Request]int
	// inFlight: requests handed to a worker and not Done yet.
	inFlight map[reconcile.Request]int
	// done counts finished reconciles per request.
	done map[reconcile.Request]int
}

// NewWorkTracker returns a WorkTracker with no queue yet.
func NewWorkTracker() *WorkTracker {
	return &WorkTracker{
		pending:     map[reconcile.Request]time.Time{},
		unscheduled: map[reconcile.Request]int{},
		inFlight:    map[reconcile.Request]int{},
		done:        map[reconcile.Request]int{},
	}
}

// NewQueue has the signature of controller.Options.NewQueue: it returns
// controller-runtime's default (priority) queue, observed by w. A new queue
// (a restarted manager) starts with nothing pending.
func (w *WorkTracker) NewQueue(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	w.mu.Lock()
	clear(w.pending)
	clear(w.unscheduled)
	clear(w.inFlight)
	w.mu.Unlock()
	q := priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) {
		o.RateLimiter = &trackedRateLimiter{TypedRateLimiter: rl, w: w}
	})
	return &trackedQueue{PriorityQueue: q, w: w}
}

// Idle returns nil when no reconcile is running and none is due within the
// next `within` (a requeue scheduled further out does not count), and
// otherwise an error naming the requests.
func (w *WorkTracker) Idle(within time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	horizon := time.Now().Add(within)
	due := map[reconcile.Request]time.Time{}
	for r, at := range w.pending {
		if !at.After(horizon) {
			due[r] = at
		}
	}
	if len(due) == 0 && len(w.unscheduled) == 0 && len(w.inFlight) == 0 {
		return nil
	}
	return fmt.Errorf("controller busy: due %v, being requeued %v, reconciling %v",
		requestNames(due), requestNames(w.unscheduled), requestNames(w.inFlight))
}

// Reconciles returns how many reconciles of req have finished.
func (w *WorkTracker) Reconciles(req reconcile.Request) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.done[req]
}

// deliveryMargin is how long Quiescent wants the controller idle, with the
// caches caught up, before it believes it: an informer stores an event in
// its cache before a separate goroutine hands it to the controller's event
// handler, and nothing outside client-go can see that hand-over. Seen late
// by tens of milliseconds on a loaded 2-core machine with -race; the margin
// keeps the wait short while covering that.
const deliveryMargin = 200 * time.Millisecond

// Quiescent returns a condition that holds when every caughtUp check passes
// (typically CaughtUp: the manager's cache has what the API server has) and
// the controller is Idle(within), on consecutive polls spanning at least
// deliveryMargin (see there). Once it holds, the controller has handled every
// change made before the wait started.
func (w *WorkTracker) Quiescent(within time.Duration, caughtUp ...func(context.Context) error) poll.Condition {
	var idleSince time.Time
	return func(ctx context.Context) (bool, error) {
		for _, c := range caughtUp {
			if err := c(ctx); err != nil {
				idleSince = time.Time{}
				return false, err
			}
		}
		if err := w.Idle(within); err != nil {
			idleSince = time.Time{}
			return false, err
		}
		if idleSince.IsZero() {
			idleSince = time.Now()
			return false, nil
		}
		return time.Since(idleSince) >= deliveryMargin, nil
	}
}

// CaughtUp returns a check that passes when cached (a manager's
// cache-backed reader) lists the objects of list's kind selected by opts at
// the resourceVersions live (the API server) lists them at.
func CaughtUp(live, cached client.Reader, list client.ObjectList, opts ...client.ListOption) func(context.Context) error {
	return func(ctx context.Context) error {
		want, err := versions(ctx, live, list, opts)
		if err != nil {
			return err
		}
		got, err := versions(ctx, cached, list, opts)
		if err != nil {
			return err
		}
		if !maps.Equal(want, got) {
			return fmt.Errorf("cache behind for %T: cached %v, API server %v", list, got, want)
		}
		return nil
	}
}

// versions lists list's kind and maps each object's namespace/name to its
// resourceVersion.
func versions(ctx context.Context, r client.Reader, list client.ObjectList, opts []client.ListOption) (map[string]string, error) {
	l := list.DeepCopyObject().(client.ObjectList)
	if err := r.List(ctx, l, opts...); err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(l)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(items))
	for _, it := range items {
		o, err := meta.Accessor(it)
		if err != nil {
			return nil, err
		}
		out[o.GetNamespace()+"/"+o.GetName()] = o.GetResourceVersion()
	}
	return out, nil
}

func requestNames[V any](m map[reconcile.Request]V) []string {
	out := make([]string, 0, len(m))
	for r := range m {
		out = append(out, r.String())
	}
	sort.Strings(out)
	return out
}

// added records items as due at the given time (the earliest wins, as in
// the queue).
func (w *WorkTracker) added(due time.Time, items ...reconcile.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, it := range items {
		if at, ok := w.pending[it]; !ok || due.Before(at) {
			w.pending[it] = due
		}
	}
}

// awaitDelay records rate-limited adds whose delay is not known yet.
func (w *WorkTracker) awaitDelay(items ...reconcile.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, it := range items {
		w.unscheduled[it]++
	}
}

// scheduled records the due time of a rate-limited add.
func (w *WorkTracker) scheduled(item reconcile.Request, due time.Time) {
	w.mu.Lock()
	if w.unscheduled[item]--; w.unscheduled[item] <= 0 {
		delete(w.unscheduled, item)
	}
	w.mu.Unlock()
	w.added(due, item)
}

func (w *WorkTracker) got(item reconcile.Request, shutdown bool) {
	if shutdown {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pending, item)
	w.inFlight[item]++
}

func (w *WorkTracker) finished(item reconcile.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inFlight[item]--; w.inFlight[item] <= 0 {
		delete(w.inFlight, item)
	}
	w.done[item]++
}

// trackedQueue reports every add, hand-out and completion to its tracker.
// A request added while queued is merged by the queue, as it is here.
type trackedQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	w *WorkTracker
}

func (q *trackedQueue) Add(item reconcile.Request) {
	q.w.added(time.Now(), item)
	q.PriorityQueue.Add(item)
}

func (q *trackedQueue) AddAfter(item reconcile.Request, d time.Duration) {
	q.w.added(time.Now().Add(d), item)
	q.PriorityQueue.AddAfter(item, d)
}

// AddRateLimited: the queue asks the rate limiter for the delay, and
// trackedRateLimiter records it.
func (q *trackedQueue) AddRateLimited(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

func (q *trackedQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	if o.RateLimited {
		q.w.awaitDelay(items...)
		if o.After > 0 {
			q.w.added(time.Now().Add(o.After), items...)
		}
	} else {
		q.w.added(time.Now().Add(o.After), items...)
	}
	q.PriorityQueue.AddWithOpts(o, items...)
}

func (q *trackedQueue) Get() (reconcile.Request, bool) {
	item, shutdown := q.PriorityQueue.Get()
	q.w.got(item, shutdown)
	return item, shutdown
}

func (q *trackedQueue) GetWithPriority() (reconcile.Request, int, bool) {
	item, prio, shutdown := q.PriorityQueue.GetWithPriority()
	q.w.got(item, shutdown)
	return item, prio, shutdown
}

func (q *trackedQueue) Done(item reconcile.Request) {
	q.PriorityQueue.Done(item)
	q.w.finished(item)
}

// trackedRateLimiter records the delay of each rate-limited add; the queue
// asks for it before it inserts the item.
type trackedRateLimiter struct {
	workqueue.TypedRateLimiter[reconcile.Request]
	w *WorkTracker
}

func (r *trackedRateLimiter) When(item reconcile.Request) time.Duration {
	d := r.TypedRateLimiter.When(item)
	r.w.scheduled(item, time.Now().Add(d))
	return d
}
