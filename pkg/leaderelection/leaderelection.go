// Package leaderelection configures the leader election every binary of this
// project uses: a Lease, client-go's elector (through controller-runtime's
// manager), and a lock that separates how often the leader writes the Lease
// (the renew interval) from how often the elector checks it (the retry
// period).
//
// client-go's elector uses one period for both: the leader renews every
// retry period and a standby polls every retry period plus up to 120%
// jitter. A standby notices a dead leader's last renewal up to 2.2 retry
// periods late and acts on the expired lease up to 2.2 periods after that,
// so a failover takes up to the lease duration + 4.4 retry periods. A short
// retry period makes failover fast but costs a Lease write per period on a
// cluster at rest. With this lock the elector runs every 250 ms while the
// leader writes the Lease at most every 10 s: a failover takes at most the
// lease duration + 1.1 s after the leader's last write, for one Lease write
// per 10 s at rest.
//
// A process's identity is its pod's (Identity), so a container restarted
// after a crash takes its Lease back at once; only a failover to another pod
// waits for the lease to expire.
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
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
)

// Timing is how a binary elects its leader.
type Timing struct {
	// LeaseDuration is how long a standby waits, after it last saw the Lease
	// change, before it takes the Lease over.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps failing to renew before it
	// gives up leadership (and the process exits).
	RenewDeadline time.Duration
	// RetryPeriod is how often the elector runs: a standby reads the Lease,
	// the leader renews (a write only every RenewInterval).
	RetryPeriod time.Duration
	// RenewInterval is the longest the leader goes without writing the
	// Lease; 0 writes at every retry period (client-go's behaviour).
	RenewInterval time.Duration
}

// DefaultRetryPeriod and DefaultRenewInterval are every binary's defaults.
const (
	DefaultRetryPeriod   = 250 * time.Millisecond
	DefaultRenewInterval = 10 * time.Second
)

// AddFlags registers OpenShift's leader-election timing flags
// (--leader-elect-lease-duration, --leader-elect-renew-deadline,
// --leader-elect-retry-period) and this project's
// --leader-elect-renew-interval, with t's values as defaults.
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
// the Lease: the leader may have written the Lease last RenewInterval
// before its last successful renewal, then keeps leading for RenewDeadline
// (checked every RetryPeriod), while a standby waits LeaseDuration from the
// last write it saw.
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

// Lock is a Lease lock for controller-runtime's manager
// (Options.LeaderElectionResourceLockInterface) with t.RenewInterval
// applied, and the event broadcaster of its LeaderElection events.
type Lock struct {
	resourcelock.Interface
	broadcaster record.EventBroadcaster
}

// The downward API variables that name the pod a process runs in.
const (
	PodNameEnv = "POD_NAME" // metadata.name
	PodUIDEnv  = "POD_UID"  // metadata.uid
)

// Identity is a process's leader-election identity. In a pod ($POD_NAME,
// with $POD_UID when set) it is the pod's, so the process a restarted
// container runs finds the Lease its killed predecessor held to be its own
// and leads at once instead of waiting out the lease duration; this is safe
// because a container runs one process at a time and no two containers of a
// pod elect on the same Lease. Outside a pod nothing tells a restarted
// process from a second one on the same host, so each process is its own
// candidate: hostname plus a random UUID (controller-runtime's default).
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

// NewLock builds the Lease lock namespace/name for this process (Identity)
// with requests that time out before the renew deadline.
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
	return &Lock{Interface: WithRenewInterval(lease, t.RenewInterval, time.Now), broadcaster: broadcaster}, nil
}

// Start runs until ctx ends, then stops the event broadcaster. Add the Lock
// to the manager so that its events are flushed on shutdown.
func (l *Lock) Start(ctx context.Context) error {
	<-ctx.Done()
	l.broadcaster.Shutdown()
	return nil
}

// NeedLeaderElection is false: the broadcaster serves standbys too.
func (l *Lock) NeedLeaderElection() bool { return false }

// WithRenewInterval returns lock with the leader's renewals coalesced: an
// Update that only renews our own lease (same holder, acquire time,
// transitions and duration as the last record written) within interval of
// the last write succeeds without a request. Any other Update, every Get
// and Create go to the API server. interval 0 returns lock unchanged.
func WithRenewInterval(lock resourcelock.Interface, interval time.Duration, now func() time.Time) resourcelock.Interface {
	if interval <= 0 {
		return lock
	}
	return &coalescingLock{Interface: lock, interval: interval, now: now}
}

type coalescingLock struct {
	resourcelock.Interface
	interval time.Duration
	now      func() time.Time

	mu sync.Mutex
	// written is the record last written by this process and writtenAt when
	// its request was sent; nil after a failed write.
	written   *resourcelock.LeaderElectionRecord
	writtenAt time.Time
}

// Create writes the first record and remembers it.
func (l *coalescingLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, ler, l.Interface.Create)
}

// Update skips a renewal of the record last written within the interval.
func (l *coalescingLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	skip := l.written != nil && isRenewalOf(ler, *l.written, l.Identity()) && l.now().Sub(l.writtenAt) < l.interval
	l.mu.Unlock()
	if skip {
		return nil
	}
	return l.write(ctx, ler, l.Interface.Update)
}

func (l *coalescingLock) write(ctx context.Context, ler resourcelock.LeaderElectionRecord, write func(context.Context, resourcelock.LeaderElectionRecord) error) error {
	// The send time, not the reply time: a standby may have seen the write
	// as soon as it was stored.
	sent := l.now()
	err := write(ctx, ler)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.written = nil
		return err
	}
	l.written, l.writtenAt = &ler, sent
	return nil
}

// isRenewalOf tells whether next only moves the renew time of last, a record
// held by identity.
func isRenewalOf(next, last resourcelock.LeaderElectionRecord, identity string) bool {
	return next.HolderIdentity == identity && last.HolderIdentity == identity &&
		next.LeaseDurationSeconds == last.LeaseDurationSeconds &&
		next.LeaderTransitions == last.LeaderTransitions &&
		next.AcquireTime.Equal(&last.AcquireTime) &&
		next.Strategy == last.Strategy && next.PreferredHolder == last.PreferredHolder
}
