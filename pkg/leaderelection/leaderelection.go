// Package leaderelection configures every binary's leader election: a Lease the leader writes less often than the
// elector checks it, and the pod's identity. See docs/architecture.md ("Leader election") and docs/reliability.md.
package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// Timing is how a binary elects its leader (the flags' help says what each does).
type Timing struct {
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// RenewInterval is the longest the leader goes without writing the Lease;
	// 0 writes at every retry period (client-go's behaviour).
	RenewInterval time.Duration
}

// DefaultRetryPeriod and DefaultRenewInterval are every binary's defaults.
const (
	DefaultRetryPeriod   = 250 * time.Millisecond
	DefaultRenewInterval = 10 * time.Second
)

// AddFlags registers OpenShift's timing flags and --leader-elect-renew-interval, t's values as defaults.
func (t *Timing) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&t.LeaseDuration, "leader-elect-lease-duration", t.LeaseDuration,
		"How long a standby waits, after it last saw the leader renew, before it takes over the lease.")
	fs.DurationVar(&t.RenewDeadline, "leader-elect-renew-deadline", t.RenewDeadline,
		"How long the leader keeps failing to renew before it gives up leadership (and exits).")
	fs.DurationVar(&t.RetryPeriod, "leader-elect-retry-period", t.RetryPeriod,
		"How often a standby checks the lease and the leader renews it (in memory; see --leader-elect-renew-interval).")
	fs.DurationVar(&t.RenewInterval, "leader-elect-renew-interval", t.RenewInterval,
		"The longest the leader goes without writing the lease; 0 writes it every retry period. Must be less than the lease duration minus the renew deadline and a retry period.")
}

// Validate checks that the leader always gives up before a standby can take
// the Lease: its last write may be RenewInterval older than its last renewal.
func (t Timing) Validate() error {
	var errs []error
	if t.LeaseDuration <= 0 || t.RenewDeadline <= 0 || t.RetryPeriod <= 0 {
		errs = append(errs, errors.New("--leader-elect-lease-duration, --leader-elect-renew-deadline and --leader-elect-retry-period must be positive"))
	}
	if t.RenewInterval < 0 {
		errs = append(errs, errors.New("--leader-elect-renew-interval must not be negative"))
	}
	if t.RetryPeriod >= t.RenewDeadline {
		errs = append(errs, fmt.Errorf("--leader-elect-retry-period (%s) must be less than --leader-elect-renew-deadline (%s)", t.RetryPeriod, t.RenewDeadline))
	}
	if t.RenewInterval+t.RenewDeadline+t.RetryPeriod >= t.LeaseDuration {
		errs = append(errs, fmt.Errorf("--leader-elect-renew-interval (%s) + --leader-elect-renew-deadline (%s) + --leader-elect-retry-period (%s) must be less than --leader-elect-lease-duration (%s), or a standby could lead while the old leader still acts",
			t.RenewInterval, t.RenewDeadline, t.RetryPeriod, t.LeaseDuration))
	}
	return errors.Join(errs...)
}

// Lock is a Lease lock for controller-runtime's manager, with its event broadcaster.
type Lock struct {
	resourcelock.Interface
	broadcaster record.EventBroadcaster
}

// The downward API variables naming the pod a process runs in.
const (
	PodNameEnv = "POD_NAME" // metadata.name
	PodUIDEnv  = "POD_UID"  // metadata.uid
)

// Identity is a process's leader-election identity: its pod's, so a restarted
// container retakes its Lease at once; outside a pod hostname_UUID.
func Identity(getenv func(string) string, hostname func() (string, error), newUUID func() string) (string, error) {
	if pod := getenv(PodNameEnv); pod != "" {
		if uid := getenv(PodUIDEnv); uid != "" {
			return pod + "_" + uid, nil
		}
		return pod, nil
	}
	host, err := hostname()
	if err != nil {
		return "", fmt.Errorf("naming the leader-election identity: %w", err)
	}
	return host + "_" + newUUID(), nil
}

// NewLock builds the Lease lock namespace/name for this process (Identity).
func NewLock(cfg *rest.Config, namespace, name string, t Timing) (*Lock, error) {
	id, err := Identity(os.Getenv, os.Hostname, func() string { return string(uuid.NewUUID()) })
	if err != nil {
		return nil, err
	}
	cfg = rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election")
	// A hung request must not use up the renew deadline.
	cfg.Timeout = max(t.RenewDeadline/2, time.Second)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the leader-election client: %w", err)
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events(namespace)})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: id})
	lease, err := resourcelock.New(resourcelock.LeasesResourceLock, namespace, name, kube.CoreV1(), kube.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: id, EventRecorder: recorder})
	if err != nil {
		broadcaster.Shutdown()
		return nil, fmt.Errorf("creating the Lease lock %s/%s: %w", namespace, name, err)
	}
	return &Lock{Interface: WithRenewInterval(lease, t.RenewInterval, clock.RealClock{}), broadcaster: broadcaster}, nil
}

// Start stops the event broadcaster when ctx ends (add the Lock to the manager).
func (l *Lock) Start(ctx context.Context) error {
	<-ctx.Done()
	l.broadcaster.Shutdown()
	return nil
}

// NeedLeaderElection is false: the broadcaster serves standbys too.
func (l *Lock) NeedLeaderElection() bool { return false }

// WithRenewInterval returns lock whose Update only renewing the record it last
// wrote, within interval of that write, sends no request (0: lock unchanged).
func WithRenewInterval(lock resourcelock.Interface, interval time.Duration, clk clock.PassiveClock) resourcelock.Interface {
	if interval <= 0 {
		return lock
	}
	return &coalescingLock{Interface: lock, interval: interval, clock: clk}
}

type coalescingLock struct {
	resourcelock.Interface
	interval time.Duration
	clock    clock.PassiveClock

	mu        sync.Mutex
	written   *resourcelock.LeaderElectionRecord // nil after a failed write
	writtenAt time.Time
}

// Create implements resourcelock.Interface.
func (l *coalescingLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, ler, l.Interface.Create)
}

// Update implements resourcelock.Interface.
func (l *coalescingLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	skip := l.written != nil && isRenewalOf(ler, *l.written, l.Identity()) && l.clock.Since(l.writtenAt) < l.interval
	l.mu.Unlock()
	if skip {
		return nil
	}
	return l.write(ctx, ler, l.Interface.Update)
}

func (l *coalescingLock) write(ctx context.Context, ler resourcelock.LeaderElectionRecord, write func(context.Context, resourcelock.LeaderElectionRecord) error) error {
	// The send time: a standby may have seen the write as soon as it was stored.
	sent := l.clock.Now()
	err := write(ctx, ler)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.written, l.writtenAt = &ler, sent
	if err != nil {
		l.written = nil // the next renewal is sent
	}
	return err
}

// isRenewalOf: next only moves the renew time of last, held by identity.
func isRenewalOf(next, last resourcelock.LeaderElectionRecord, identity string) bool {
	next.RenewTime = last.RenewTime
	return last.HolderIdentity == identity && equality.Semantic.DeepEqual(next, last)
}
