package testenv

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// scripted reconciles ConfigMaps by name, counting the finished reconciles:
// "later" asks to be called again in an hour, "fail-once" fails its first
// reconcile, "slow" blocks until release is closed.
type scripted struct {
	mu      sync.Mutex
	done    map[string]int
	release chan struct{}
}

func (s *scripted) reconciles(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done[name]
}

func (s *scripted) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	defer func() {
		s.mu.Lock()
		s.done[req.Name]++
		s.mu.Unlock()
	}()
	switch req.Name {
	case "later":
		return reconcile.Result{RequeueAfter: time.Hour}, nil
	case "fail-once":
		if s.reconciles(req.Name) == 0 {
			return reconcile.Result{}, errors.New("first attempt fails")
		}
	case "slow":
		select {
		case <-s.release:
		case <-ctx.Done():
		}
	}
	return reconcile.Result{}, nil
}

func TestWorkTracker(t *testing.T) {
	ctx := t.Context()
	ns := createNamespace(ctx, t)
	mgr := env.NewManager(t, nil, cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}})
	wt := NewWorkTracker()
	s := &scripted{done: map[string]int{}, release: make(chan struct{})}
	err := ctrl.NewControllerManagedBy(mgr).Named("worktracker-test").For(&corev1.ConfigMap{}).
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true), NewQueue: wt.NewQueue}).Complete(s)
	if err != nil {
		t.Fatal(err)
	}
	Run(t, mgr)
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}

	create := func(name string) {
		t.Helper()
		if err := env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	settled := wt.Quiescent(10*time.Second, CaughtUp(env.Client, mgr.GetClient(), &corev1.ConfigMapList{}, client.InNamespace(ns)))

	for _, name := range []string{"a", "later", "fail-once"} {
		create(name)
	}
	poll.Eventually(t, 30*time.Second, "the controller to settle", settled)
	for name, atLeast := range map[string]int{"a": 1, "later": 1, "fail-once": 2} {
		if n := s.reconciles(name); n < atLeast {
			t.Errorf("%s reconciled %d times when settled, want at least %d (the failed attempt is retried first)", name, n, atLeast)
		}
	}
	// The requeue an hour away is work, but not soon.
	if err := wt.Idle(2 * time.Hour); err == nil || !strings.Contains(err.Error(), ns+"/later") {
		t.Errorf("Idle(2h) = %v, want the requeue of %s/later", err, ns)
	}

	// A reconcile that is running is work.
	create("slow")
	poll.Eventually(t, 30*time.Second, "the slow reconcile to be reported running", func(context.Context) (bool, error) {
		err := wt.Idle(10 * time.Second)
		return err != nil && strings.Contains(err.Error(), "reconciling ["+ns+"/slow]"), err
	})
	if ok, _ := settled(ctx); ok {
		t.Error("settled while a reconcile runs")
	}
	close(s.release)
	poll.Eventually(t, 30*time.Second, "the controller to settle after the slow reconcile", settled)
	slow := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: "slow"}}
	if n, counted := s.reconciles("slow"), wt.Reconciles(slow); n != 1 || counted != 1 {
		t.Errorf("slow reconciled %d times, tracker counted %d, want 1", n, counted)
	}
}

// TestCaughtUpWaitsForHandlers: an object in the cache whose event a handler
// has not been handed yet is not caught up.
func TestCaughtUpWaitsForHandlers(t *testing.T) {
	ctx := t.Context()
	ns := createNamespace(ctx, t)
	mgr := env.NewManager(t, nil, cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}})
	inf, err := mgr.GetCache().GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { <-release },
	}); err != nil {
		t.Fatal(err)
	}
	Run(t, mgr)
	if err := env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held"}}); err != nil {
		t.Fatal(err)
	}
	caughtUp := CaughtUp(env.Client, mgr.GetClient(), &corev1.ConfigMapList{}, client.InNamespace(ns))
	poll.Eventually(t, 30*time.Second, "the cache to hold the ConfigMap while its handler is blocked", func(ctx context.Context) (bool, error) {
		err := caughtUp(ctx)
		return err != nil && strings.Contains(err.Error(), "not been handed"), err
	})
	close(release)
	poll.Eventually(t, 30*time.Second, "caught up once the handler returned", func(ctx context.Context) (bool, error) {
		return caughtUp(ctx) == nil, caughtUp(ctx)
	})
}
