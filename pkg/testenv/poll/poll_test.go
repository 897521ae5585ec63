package poll

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	errNotYet := errors.New("not yet")
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		// holdsAt: the call (1-based) from which cond holds; 0 never.
		holdsAt int
		errs    bool
		// errsUntil: only calls before this one (1-based) return errNotYet.
		errsUntil int
		wantErr   []string // substrings of the error; nil means success
		notErr    string   // must not be in the error
	}{
		{name: "holds at once", timeout: time.Second, holdsAt: 1},
		{name: "holds after retries", timeout: 5 * time.Second, holdsAt: 4},
		{name: "errors are retried", timeout: 5 * time.Second, holdsAt: 3, errs: true},
		{name: "timeout names the last error", timeout: 50 * time.Millisecond, errs: true, wantErr: []string{"not within 50ms", "not yet"}},
		{name: "timeout without an error", timeout: 50 * time.Millisecond, wantErr: []string{"not within 50ms"}},
		{name: "an early error is not reported for a later state", timeout: 50 * time.Millisecond, errsUntil: 2, wantErr: []string{"not within 50ms"}, notErr: "not yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := Until(t.Context(), tc.timeout, func(ctx context.Context) (bool, error) {
				if ctx.Err() != nil {
					return false, fmt.Errorf("called with an ended context")
				}
				calls++
				if tc.holdsAt > 0 && calls >= tc.holdsAt {
					return true, nil
				}
				if tc.errs || calls < tc.errsUntil {
					return false, errNotYet
				}
				return false, nil
			})
			if tc.wantErr == nil {
				if err != nil || calls != tc.holdsAt {
					t.Fatalf("err = %v after %d calls, want nil after %d", err, calls, tc.holdsAt)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range tc.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			if tc.notErr != "" && strings.Contains(err.Error(), tc.notErr) {
				t.Errorf("error %q contains %q", err, tc.notErr)
			}
		})
	}
}

func TestUntilStopsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := Until(ctx, 0, func(context.Context) (bool, error) { return false, nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestCheck(t *testing.T) {
	ok, err := Check(func() error { return nil })(t.Context())
	if !ok || err != nil {
		t.Errorf("nil check: %v %v", ok, err)
	}
	ok, err = Check(func() error { return errors.New("why") })(t.Context())
	if ok || err == nil || err.Error() != "why" {
		t.Errorf("failing check: %v %v", ok, err)
	}
}

// fakeT records Fatalf instead of stopping the test.
type fakeT struct {
	failed string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
}

func TestEventuallyFailsNamingWhatAndWhy(t *testing.T) {
	ft := &fakeT{}
	Eventually(ft, 30*time.Millisecond, "the thing", func(context.Context) (bool, error) {
		return false, errors.New("phase Provisioning")
	})
	for _, s := range []string{"waiting for the thing", "not within 30ms", "phase Provisioning"} {
		if !strings.Contains(ft.failed, s) {
			t.Errorf("failure %q does not contain %q", ft.failed, s)
		}
	}

	ft = &fakeT{}
	Eventually(ft, time.Second, "the thing", func(context.Context) (bool, error) { return true, nil })
	if ft.failed != "" {
		t.Errorf("failed although the condition held: %s", ft.failed)
	}
}
