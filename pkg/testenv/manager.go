package testenv

import (
	"context"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// ControllerOptions are the controller.Options of a controller under test: its queue observed by w
// (nil: not observed) and its name not checked, as each test (or restart) sets it up in a new manager.
func ControllerOptions(w *WorkTracker) controller.Options {
	o := controller.Options{SkipNameValidation: ptr.To(true)}
	if w != nil {
		o.NewQueue = w.NewQueue
	}
	return o
}

// StartManager runs mgr (as Run) and waits until its cache has synced, so what the test creates next
// reaches the controllers as events, not as the initial list.
func StartManager(t testing.TB, mgr manager.Manager) (stop func()) {
	t.Helper()
	stop = Run(t, mgr)
	if !mgr.GetCache().WaitForCacheSync(t.Context()) {
		t.Fatal("the manager's cache did not sync")
	}
	return stop
}

// Settle waits (up to timeout) until w's controller is Quiescent: nothing due within `within`, every
// caughtUp check passing (typically CaughtUp for each kind it watches).
func (w *WorkTracker) Settle(t poll.T, timeout, within time.Duration, caughtUp ...func(context.Context) error) {
	t.Helper()
	poll.Eventually(t, timeout, "the controller to handle every change", w.Quiescent(within, caughtUp...))
}

// Controller is what Setup sets up in a manager.
type Controller interface {
	SetupWithManager(mgr manager.Manager, opts controller.Options) error
}

// Setup sets c up in mgr with ControllerOptions(w) and fails the test if that fails.
func Setup(t testing.TB, mgr manager.Manager, w *WorkTracker, c Controller) {
	t.Helper()
	if err := c.SetupWithManager(mgr, ControllerOptions(w)); err != nil {
		t.Fatalf("setting %T up: %v", c, err)
	}
}
