// Package poll is how the project's tests wait: poll a condition at a growing interval until it holds, else fail
// saying what was awaited and why it did not hold. Standard library only, so every suite shares it.
package poll

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Condition reports whether what a test waits for holds. An error means "not
// yet" (unlike package wait, polling goes on); on timeout only the last
// attempt's error is reported, as an earlier one may describe another state.
type Condition func(ctx context.Context) (bool, error)

// Check adapts a check returning nil when the condition holds, else why not.
func Check(f func() error) Condition {
	return func(context.Context) (bool, error) {
		err := f()
		return err == nil, err
	}
}

// Interval bounds: the retries' interval grows 1.5 times from MinInterval
// up to MaxInterval.
const (
	MinInterval = 10 * time.Millisecond
	MaxInterval = 250 * time.Millisecond
)

// Until polls cond until it holds (nil), or until timeout (≤ 0: none) passes
// or ctx ends (an error carrying cond's last one).
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
		case <-timer.C:
		}
		if ctx.Err() != nil { // checked after the timer too: both may be ready at once
			return timedOut(ctx, timeout, last)
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

// Eventually polls cond until it holds and fails the test, naming what, when
// timeout passes first. Not on the test's context, so cleanups may use it.
func Eventually(t T, timeout time.Duration, what string, cond Condition) {
	t.Helper()
	if err := Until(context.Background(), timeout, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
