package leaderelection

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// elector runs client-go's elector on a Lock as controller-runtime's manager
// does; leading is closed when it leads, at the time stored in acquired.
type elector struct {
	cancel   context.CancelFunc
	leading  chan struct{}
	acquired time.Time
	done     chan struct{}
}

// startElector starts an elector in pod ("" for a process outside a pod).
func startElector(t *testing.T, env *testenv.Env, namespace, pod string, timing Timing) *elector {
	t.Helper()
	t.Setenv(PodNameEnv, pod)
	t.Setenv(PodUIDEnv, "")
	if pod != "" {
		t.Setenv(PodUIDEnv, "uid-of-"+pod)
	}
	lock, err := NewLock(env.Config, namespace, "test-leader", timing)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &elector{cancel: cancel, leading: make(chan struct{}), done: make(chan struct{})}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: timing.LeaseDuration,
		RenewDeadline: timing.RenewDeadline,
		RetryPeriod:   timing.RetryPeriod,
		// A killed process does not release: neither does this one.
		ReleaseOnCancel: false,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { e.acquired = time.Now(); close(e.leading) },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() { defer close(e.done); le.Run(ctx) }()
	go func() { <-ctx.Done(); lock.broadcaster.Shutdown() }()
	t.Cleanup(func() { cancel(); <-e.done })
	return e
}

// TestElectionWithRenewInterval runs two electors against an API server:
// the leader writes the Lease once per renew interval although the elector
// renews every retry period, and after the leader dies the standby takes
// over no earlier than the lease duration after the leader's last write.
func TestElectionWithRenewInterval(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	kube := kubernetes.NewForConfigOrDie(env.Config)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testenv.CreateNamespace(t, env.Client, "election-")}}
	timing := Timing{LeaseDuration: 4 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 100 * time.Millisecond, RenewInterval: time.Second}
	if err := timing.Validate(); err != nil {
		t.Fatal(err)
	}

	leader := startElector(t, env, ns.Name, "", timing)
	select {
	case <-leader.leading:
	case <-time.After(30 * time.Second):
		t.Fatal("the first elector did not lead within 30 s")
	}
	w, err := kube.CoordinationV1().Leases(ns.Name).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=test-leader"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	standby := startElector(t, env, ns.Name, "", timing)

	// Four consecutive renewals by the leader: each at least the renew
	// interval after the previous one (without the lock: one per 100 ms).
	var renewals []time.Time
	var holder string
	timeout := time.After(30 * time.Second)
	for len(renewals) < 5 {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			l := ev.Object.(*coordinationv1.Lease)
			if holder == "" {
				holder = *l.Spec.HolderIdentity
			}
			if *l.Spec.HolderIdentity != holder {
				t.Fatalf("the Lease changed holder from %s to %s while the leader was alive", holder, *l.Spec.HolderIdentity)
			}
			renewals = append(renewals, l.Spec.RenewTime.Time)
		case <-timeout:
			t.Fatalf("saw %d Lease writes in 30 s, want 5", len(renewals))
		}
	}
	for i := 2; i < len(renewals); i++ { // renewals[0] may be the initial state
		if gap := renewals[i].Sub(renewals[i-1]); gap < timing.RenewInterval {
			t.Errorf("the leader wrote the Lease %s after its previous write, less than the renew interval %s", gap, timing.RenewInterval)
		}
	}
	select {
	case <-standby.leading:
		t.Fatal("the standby leads while the leader renews")
	default:
	}

	// Kill the leader (no release) and wait for the standby.
	leader.cancel()
	<-leader.done
	l, err := kube.CoordinationV1().Leases(ns.Name).Get(ctx, "test-leader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lastWrite := l.Spec.RenewTime.Time
	select {
	case <-standby.leading:
	case <-time.After(timing.LeaseDuration + 30*time.Second):
		t.Fatal("the standby did not take over")
	}
	took := standby.acquired.Sub(lastWrite)
	if took < timing.LeaseDuration {
		t.Fatalf("the standby led %s after the leader's last write, before the lease duration %s", took, timing.LeaseDuration)
	}
	t.Logf("the standby led %s after the leader's last write (lease duration %s, retry period %s)", took, timing.LeaseDuration, timing.RetryPeriod)
}

// TestRestartedLeaderRetakesItsLease: a leader killed without releasing is
// restarted in its pod; the new process (same pod identity) leads at once,
// while a process of another pod, started at the same moment, waits; once
// the restarted leader is killed for good, the other pod leads no earlier
// than the lease duration after the last write.
func TestRestartedLeaderRetakesItsLease(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	kube := kubernetes.NewForConfigOrDie(env.Config)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testenv.CreateNamespace(t, env.Client, "election-")}}
	timing := Timing{LeaseDuration: 10 * time.Second, RenewDeadline: 5 * time.Second, RetryPeriod: 100 * time.Millisecond, RenewInterval: 2 * time.Second}
	if err := timing.Validate(); err != nil {
		t.Fatal(err)
	}
	lease := func() *coordinationv1.Lease {
		t.Helper()
		l, err := kube.CoordinationV1().Leases(ns.Name).Get(ctx, "test-leader", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	waitLeading := func(e *elector, within time.Duration, who string) {
		t.Helper()
		select {
		case <-e.leading:
		case <-time.After(within):
			t.Fatalf("%s did not lead within %s", who, within)
		}
	}

	first := startElector(t, env, ns.Name, "pod-a", timing)
	waitLeading(first, 30*time.Second, "the first process of pod-a")
	if got := *lease().Spec.HolderIdentity; got != "pod-a_uid-of-pod-a" {
		t.Fatalf("Lease holder %q, want pod-a_uid-of-pod-a", got)
	}
	first.cancel() // SIGKILL: no release
	<-first.done
	killed := time.Now()

	other := startElector(t, env, ns.Name, "pod-b", timing)
	restarted := startElector(t, env, ns.Name, "pod-a", timing)
	// At once: well within the lease duration its predecessor's lease runs.
	waitLeading(restarted, 3*time.Second, "the restarted process of pod-a")
	t.Logf("the restarted process led %s after the kill (lease duration %s)", restarted.acquired.Sub(killed), timing.LeaseDuration)

	// pod-b must not lead while pod-a renews: wait for a renewal later than
	// a lease duration after the kill, then check.
	poll.Eventually(t, timing.LeaseDuration+30*time.Second, "a renewal by pod-a a lease duration after the kill", func(ctx context.Context) (bool, error) {
		l, err := kube.CoordinationV1().Leases(ns.Name).Get(ctx, "test-leader", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return l.Spec.RenewTime.After(killed.Add(timing.LeaseDuration + timing.RetryPeriod)), nil
	})
	select {
	case <-other.leading:
		t.Fatal("pod-b led while the restarted pod-a renewed the Lease")
	default:
	}

	// A failover to another pod waits for the lease.
	restarted.cancel()
	<-restarted.done
	lastWrite := lease().Spec.RenewTime.Time
	waitLeading(other, timing.LeaseDuration+30*time.Second, "pod-b")
	if took := other.acquired.Sub(lastWrite); took < timing.LeaseDuration {
		t.Fatalf("pod-b led %s after pod-a's last write, before the lease duration %s", took, timing.LeaseDuration)
	}
	if got := *lease().Spec.HolderIdentity; got != "pod-b_uid-of-pod-b" {
		t.Fatalf("Lease holder %q, want pod-b_uid-of-pod-b", got)
	}
}
