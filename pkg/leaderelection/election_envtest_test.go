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
)

// elector runs client-go's elector on a Lock as controller-runtime's manager
// does; leading is closed when it leads, at the time stored in acquired.
type elector struct {
	cancel   context.CancelFunc
	leading  chan struct{}
	acquired time.Time
	done     chan struct{}
}

func startElector(t *testing.T, env *testenv.Env, namespace string, timing Timing) *elector {
	t.Helper()
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
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "election-"}}
	ns, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	timing := Timing{LeaseDuration: 4 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 100 * time.Millisecond, RenewInterval: time.Second}
	if err := timing.Validate(); err != nil {
		t.Fatal(err)
	}

	leader := startElector(t, env, ns.Name, timing)
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
	standby := startElector(t, env, ns.Name, timing)

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
