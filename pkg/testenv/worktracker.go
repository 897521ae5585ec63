package testenv

import (
	"cmp"
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

// WorkTracker observes a controller's work queue, so a test can wait until
// the controller has handled everything it was given:
//
//	wt := testenv.NewWorkTracker()
//	r.SetupWithManager(mgr, controller.Options{NewQueue: wt.NewQueue})
//	...
//	poll.Eventually(t, timeout, "controller settled", wt.Quiescent(10*time.Second,
//		testenv.CaughtUp(env.Client, mgr.GetClient(), &machinev1beta1.MachineList{}, client.InNamespace(ns))))
type WorkTracker struct {
	mu       sync.Mutex
	pending  map[reconcile.Request]time.Time // queued, with the earliest time due
	inFlight map[reconcile.Request]int       // handed to a worker, not Done
	done     map[reconcile.Request]int       // finished reconciles
	changes  uint64                          // every add, hand-out and completion
}

// NewWorkTracker returns a WorkTracker with no queue yet.
func NewWorkTracker() *WorkTracker {
	return &WorkTracker{pending: map[reconcile.Request]time.Time{}, inFlight: map[reconcile.Request]int{},
		done: map[reconcile.Request]int{}}
}

// NewQueue is a controller.Options.NewQueue: controller-runtime's priority
// queue, observed by w. A new queue starts with nothing pending.
func (w *WorkTracker) NewQueue(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	w.mu.Lock()
	clear(w.pending)
	clear(w.inFlight)
	w.mu.Unlock()
	q := priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) { o.RateLimiter = rl })
	return &trackedQueue{PriorityQueue: q, rl: rl, w: w}
}

// Idle returns nil when no reconcile is running or due within `within`, else
// an error naming the requests.
func (w *WorkTracker) Idle(within time.Duration) error {
	_, err := w.idle(within)
	return err
}

func (w *WorkTracker) idle(within time.Duration) (uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	horizon := time.Now().Add(within)
	due := maps.Clone(w.pending)
	maps.DeleteFunc(due, func(_ reconcile.Request, at time.Time) bool { return at.After(horizon) })
	if len(due) == 0 && len(w.inFlight) == 0 {
		return w.changes, nil
	}
	return w.changes, fmt.Errorf("controller busy: due %v, reconciling %v", requestNames(due), requestNames(w.inFlight))
}

// Reconciles returns how many reconciles of req have finished.
func (w *WorkTracker) Reconciles(req reconcile.Request) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.done[req]
}

// Quiescent returns a condition that holds when the controller is Idle(within), every caughtUp check (typically
// CaughtUp) passes, and no work came in between: then every change made before the wait was handled.
func (w *WorkTracker) Quiescent(within time.Duration, caughtUp ...func(context.Context) error) poll.Condition {
	return func(ctx context.Context) (bool, error) {
		before, err := w.idle(within)
		if err != nil {
			return false, err
		}
		for _, c := range caughtUp {
			if err := c(ctx); err != nil {
				return false, err
			}
		}
		if after, err := w.idle(within); err != nil || after != before {
			return false, cmp.Or(err, fmt.Errorf("the controller took work while the caches were compared"))
		}
		return true, nil
	}
}

// CaughtUp returns a check that passes when cached (the client of a manager from Env.NewManager) lists list's
// kind (with opts) at live's resourceVersions and its event handlers were handed all of it.
func CaughtUp(live, cached client.Reader, list client.ObjectList, opts ...client.ListOption) func(context.Context) error {
	return func(ctx context.Context) error {
		tc, ok := cached.(trackedClient)
		if !ok {
			return fmt.Errorf("CaughtUp needs the client of a manager from Env.NewManager, got %T", cached)
		}
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
		return tc.cache.delivered(ctx, list)
	}
}

// versions maps each listed object's namespace/name to its resourceVersion.
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

// change applies f under the lock, counting a queue change.
func (w *WorkTracker) change(f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.changes++
	f()
}

func (w *WorkTracker) got(item reconcile.Request, shutdown bool) {
	if !shutdown {
		w.change(func() { delete(w.pending, item); w.inFlight[item]++ })
	}
}

// trackedQueue reports every add, hand-out and completion to its tracker. It
// asks the rate limiter itself, so each add's delay is known when it is made.
type trackedQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	rl workqueue.TypedRateLimiter[reconcile.Request]
	w  *WorkTracker
}

func (q *trackedQueue) Add(item reconcile.Request) { q.AddWithOpts(priorityqueue.AddOpts{}, item) }

func (q *trackedQueue) AddAfter(item reconcile.Request, d time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: d}, item)
}

func (q *trackedQueue) AddRateLimited(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

// AddWithOpts resolves a rate-limited add's delay as the priority queue would
// (the shorter of After and the limiter's).
func (q *trackedQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	for _, it := range items {
		after := o.After
		if o.RateLimited {
			if d := q.rl.When(it); after == 0 || d < after {
				after = d
			}
		}
		due := time.Now().Add(after)
		q.w.change(func() {
			if at, ok := q.w.pending[it]; !ok || due.Before(at) { // the earliest wins
				q.w.pending[it] = due
			}
		})
		q.PriorityQueue.AddWithOpts(priorityqueue.AddOpts{After: after, Priority: o.Priority}, it)
	}
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
	q.w.change(func() {
		if q.w.inFlight[item]--; q.w.inFlight[item] <= 0 {
			delete(q.w.inFlight, item)
		}
		q.w.done[item]++
	})
}
