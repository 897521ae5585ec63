// Package poll is the one way the project's tests wait for a condition: poll
// it with a short, growing interval until it holds, and on timeout fail with
// what was awaited and why it did not hold. It imports only the standard
// library, so unit tests, envtests and the e2e and chaos suites share it.
//
//	poll.Eventually(t, 10*time.Second, "machine m is Running", func(ctx context.Context) (bool, error) {
//		m := &machinev1beta1.Machine{}
//		if err := c.Get(ctx, key, m); err != nil {
//			return false, err // kept as the reason, polling goes on
//		}
//		if phase := ptr.Deref(m.Status.Phase, ""); phase != "Running" {
//			return false, fmt.Errorf("phase %q", phase)
//		}
//		return true, nil
//	})
//
// Tests wait on conditions with a timeout and never sleep for a fixed time.
package poll

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Condition reports whether what a test waits for holds. Unlike
// k8s.io/apimachinery/pkg/util/wait, an error does not stop the polling: it
// means "not yet" (a transient API error, or why the state is not the wanted
// one). When the wait times out, the error of the last attempt is reported,
// and none if that attempt returned nil: an error from early on (the object
// did not exist yet) must not stand for a later, different state. ctx ends
// when the wait does.
type Condition func(ctx context.Context) (bool, error)

// Check adapts a check that returns nil when the condition holds and an
// error saying why otherwise.
func Check(f func() error) Condition {
	return func(context.Context) (bool, error) {
		err := f()
		return err == nil, err
	}
}

// Interval bounds: the first retry comes after MinInterval, each later one
// waits 1.5 times longer, up to MaxInterval (fast in envtests, a few requests
// a second against a real cluster).
const (
	MinInterval = 10 * time.Millisecond
	MaxInterval = 250 * time.Millisecond
)

// Until polls cond until it holds, returning nil, or until timeout passes or
// ctx ends, returning an error that carries cond's last error. A timeout of
// zero or less means no timeout other than ctx's.
func Until(ctx context.Context, timeout time.Duration, cond Condition) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	interval := MinInterval
	timer := time.NewTimer(0)
	defer timer.Stop()
	var last error
	for {
		select {
		case <-ctx.Done():
			return timedOut(ctx, timeout, last)
		case <-timer.C:
		}
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		last = err
		timer.Reset(interval)
		interval = min(interval*3/2, MaxInterval)
	}
}

func timedOut(ctx context.Context, timeout time.Duration, last error) error {
	why := context.Cause(ctx)
	if errors.Is(why, context.DeadlineExceeded) && timeout > 0 {
		why = fmt.Errorf("not within %s", timeout)
	}
	if last == nil {
		return why
	}
	return fmt.Errorf("%w; last: %w", why, last)
}

// T is the part of testing.TB that Eventually uses.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Eventually polls cond until it holds and fails the test (Fatalf, naming
// what) when timeout passes first. It does not use the test's context, which
// ends before t.Cleanup functions run, so cleanups may wait with it too.
func Eventually(t T, timeout time.Duration, what string, cond Condition) {
	t.Helper()
	if err := Until(context.Background(), timeout, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
