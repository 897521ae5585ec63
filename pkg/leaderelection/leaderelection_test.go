package leaderelection

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestTimingValidate(t *testing.T) {
	tests := []struct {
		name    string
		timing  Timing
		wantErr string
	}{
		{name: "operand defaults", timing: Timing{LeaseDuration: 120 * time.Second, RenewDeadline: 90 * time.Second, RetryPeriod: DefaultRetryPeriod, RenewInterval: DefaultRenewInterval}},
		{name: "operator defaults", timing: Timing{LeaseDuration: 137 * time.Second, RenewDeadline: 107 * time.Second, RetryPeriod: DefaultRetryPeriod, RenewInterval: DefaultRenewInterval}},
		{name: "OpenShift's operator timing, writes every retry", timing: Timing{LeaseDuration: 137 * time.Second, RenewDeadline: 107 * time.Second, RetryPeriod: 26 * time.Second}},
		{name: "renew interval leaves no margin", timing: Timing{LeaseDuration: 120 * time.Second, RenewDeadline: 90 * time.Second, RetryPeriod: time.Second, RenewInterval: 29 * time.Second},
			wantErr: "--leader-elect-renew-interval (29s) + --leader-elect-renew-deadline (1m30s) + --leader-elect-retry-period (1s) must be less than --leader-elect-lease-duration (2m0s)"},
		{name: "negative renew interval", timing: Timing{LeaseDuration: 120 * time.Second, RenewDeadline: 90 * time.Second, RetryPeriod: time.Second, RenewInterval: -time.Second},
			wantErr: "--leader-elect-renew-interval must not be negative"},
		{name: "retry period beyond the deadline", timing: Timing{LeaseDuration: 120 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 3 * time.Second},
			wantErr: "--leader-elect-retry-period (3s) must be less than --leader-elect-renew-deadline (2s)"},
		{name: "zero lease", timing: Timing{RenewDeadline: 2 * time.Second, RetryPeriod: time.Second},
			wantErr: "must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.timing.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// recordingLock counts the requests a lock would send.
type recordingLock struct {
	resourcelock.Interface // nil: calling anything else panics
	identity               string
	creates, updates       int
	failUpdates            bool
}

func (r *recordingLock) Identity() string { return r.identity }
func (r *recordingLock) Create(context.Context, resourcelock.LeaderElectionRecord) error {
	r.creates++
	return nil
}
func (r *recordingLock) Update(context.Context, resourcelock.LeaderElectionRecord) error {
	r.updates++
	if r.failUpdates {
		return errors.New("conflict")
	}
	return nil
}

func leaseRecord(holder string, acquired time.Time, transitions int, renewed time.Time) resourcelock.LeaderElectionRecord {
	return resourcelock.LeaderElectionRecord{
		HolderIdentity: holder, LeaseDurationSeconds: 120, LeaderTransitions: transitions,
		AcquireTime: metav1.NewTime(acquired), RenewTime: metav1.NewTime(renewed),
	}
}

func TestWithRenewIntervalCoalescesRenewals(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakePassiveClock(start)
	inner := &recordingLock{identity: "me"}
	lock := WithRenewInterval(inner, 10*time.Second, clock)

	if err := lock.Create(ctx, leaseRecord("me", start, 0, start)); err != nil {
		t.Fatal(err)
	}
	// Renewals every 250 ms for 9.75 s: no request.
	for clock.SetTime(start.Add(250 * time.Millisecond)); clock.Now().Before(start.Add(10 * time.Second)); clock.SetTime(clock.Now().Add(250 * time.Millisecond)) {
		if err := lock.Update(ctx, leaseRecord("me", start, 0, clock.Now())); err != nil {
			t.Fatal(err)
		}
	}
	if inner.creates != 1 || inner.updates != 0 {
		t.Fatalf("within the interval: %d creates, %d updates sent; want 1, 0", inner.creates, inner.updates)
	}
	// At the interval the renewal is written, and the next one is skipped again.
	if err := lock.Update(ctx, leaseRecord("me", start, 0, clock.Now())); err != nil {
		t.Fatal(err)
	}
	clock.SetTime(clock.Now().Add(time.Second))
	if err := lock.Update(ctx, leaseRecord("me", start, 0, clock.Now())); err != nil {
		t.Fatal(err)
	}
	if inner.updates != 1 {
		t.Fatalf("after the interval: %d updates sent, want 1", inner.updates)
	}

	// Anything but a renewal of our own record is written at once.
	for _, tc := range []struct {
		name string
		rec  resourcelock.LeaderElectionRecord
	}{
		{"release", resourcelock.LeaderElectionRecord{LeaseDurationSeconds: 1, AcquireTime: metav1.NewTime(clock.Now()), RenewTime: metav1.NewTime(clock.Now())}},
		{"takeover after a release", leaseRecord("me", clock.Now(), 1, clock.Now())},
	} {
		before := inner.updates
		if err := lock.Update(ctx, tc.rec); err != nil {
			t.Fatal(err)
		}
		if inner.updates != before+1 {
			t.Errorf("%s: not written", tc.name)
		}
	}
}

func TestWithRenewIntervalWritesAfterAFailure(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakePassiveClock(start)
	inner := &recordingLock{identity: "me"}
	lock := WithRenewInterval(inner, 10*time.Second, clock)
	if err := lock.Create(ctx, leaseRecord("me", start, 0, start)); err != nil {
		t.Fatal(err)
	}
	clock.SetTime(start.Add(10 * time.Second))
	inner.failUpdates = true
	if err := lock.Update(ctx, leaseRecord("me", start, 0, clock.Now())); err == nil {
		t.Fatal("a failed write reported success")
	}
	// A failed write must not be coalesced into later renewals: each is
	// sent until one succeeds, so the leader's renew deadline counts from
	// its last real write.
	clock.SetTime(clock.Now().Add(250 * time.Millisecond))
	if err := lock.Update(ctx, leaseRecord("me", start, 0, clock.Now())); err == nil {
		t.Fatal("a renewal after a failed write was skipped")
	}
	if inner.updates != 2 {
		t.Fatalf("%d updates sent, want 2", inner.updates)
	}
}

func TestWithRenewIntervalZeroIsClientGo(t *testing.T) {
	inner := &recordingLock{identity: "me"}
	if got := WithRenewInterval(inner, 0, clocktesting.NewFakePassiveClock(time.Now())); got != resourcelock.Interface(inner) {
		t.Fatalf("interval 0 wrapped the lock: %T", got)
	}
}

func TestIdentity(t *testing.T) {
	hostname := func() (string, error) { return "node-1", nil }
	noHostname := func() (string, error) { return "", errors.New("uname failed") }
	uuid := func() string { return "0f1e2d3c" }
	tests := []struct {
		name     string
		env      map[string]string
		hostname func() (string, error)
		want     string
		wantErr  string
	}{
		{name: "in a pod: the pod's name and UID", env: map[string]string{"POD_NAME": "machine-api-controllers-7d9f", "POD_UID": "6c1a"}, hostname: hostname, want: "machine-api-controllers-7d9f_6c1a"},
		{name: "in a pod without its UID: the pod's name", env: map[string]string{"POD_NAME": "machine-api-operator-5b8c"}, hostname: hostname, want: "machine-api-operator-5b8c"},
		{name: "a UID alone is not a pod", env: map[string]string{"POD_UID": "6c1a"}, hostname: hostname, want: "node-1_0f1e2d3c"},
		{name: "outside a pod: hostname and a random UUID", hostname: hostname, want: "node-1_0f1e2d3c"},
		{name: "in a pod the hostname is not needed", env: map[string]string{"POD_NAME": "p"}, hostname: noHostname, want: "p"},
		{name: "outside a pod without a hostname", hostname: noHostname, wantErr: "naming the leader-election identity: uname failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Identity(func(k string) string { return tt.env[k] }, tt.hostname, uuid)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Identity() = %q, %v; want error %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Identity() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
