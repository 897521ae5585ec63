package safety

import (
	"cmp"
	"context"
	"sync/atomic"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// probeMachineName names the Machine the probe reads; NotFound is an answer too.
const probeMachineName = "machine-api-safety-apiserver-probe"

// APIServerGate is the API-server freeze: a provider.Gate frozen while the API server
// has not answered for longer than the timeout (decideAPIServer; docs/safety.md).
type APIServerGate struct {
	reader    client.Reader
	key       types.NamespacedName
	period    time.Duration
	timeout   time.Duration
	clock     clock.PassiveClock
	frozen    atomic.Bool
	lastProbe atomic.Int64 // unix nanoseconds of the last probe (tests)
}

var _ provider.Gate = &APIServerGate{}

// NewAPIServerGate returns the gate. reader must read uncached (a cache
// answers while the API server does not); the probe reads in namespace ("default" when empty).
func NewAPIServerGate(reader client.Reader, namespace string, opts MachineControllerOptions) *APIServerGate {
	namespace = cmp.Or(namespace, "default")
	RegisterMetrics()
	MachineControllerFrozen.Set(0)
	return &APIServerGate{
		reader:  reader,
		key:     types.NamespacedName{Namespace: namespace, Name: probeMachineName},
		period:  opts.APIServerCheckPeriod,
		timeout: opts.APIServerCheckTimeout,
		clock:   clock.RealClock{},
	}
}

// Frozen implements provider.Gate.
func (g *APIServerGate) Frozen() bool { return g.frozen.Load() }

// NeedLeaderElection is false: every replica probes, so a new leader's gate is up to date.
func (g *APIServerGate) NeedLeaderElection() bool { return false }

// Start probes until ctx ends.
func (g *APIServerGate) Start(ctx context.Context) error {
	log := ctrl.Log.WithName("machine-safety-apiserver")
	var state apiServerState
	for {
		probedAt := g.clock.Now()
		err := g.probe(ctx)
		if ctx.Err() != nil {
			return nil
		}
		out := decideAPIServer(state, err == nil, probedAt, g.period, g.timeout)
		state = out.state
		switch {
		case out.froze:
			g.frozen.Store(true)
			MachineControllerFrozen.Set(1)
			log.Info("freezing the machine controller: the API server has not answered for longer than the timeout; no instance is created or deleted until it does",
				"downSince", state.downSince, "timeout", g.timeout, "err", err)
		case out.thawed:
			g.frozen.Store(false)
			MachineControllerFrozen.Set(0)
			log.Info("unfreezing the machine controller: the API server answers again")
		case err != nil:
			log.V(1).Info("the API server does not answer", "downSince", state.downSince, "err", err)
		}
		g.lastProbe.Store(g.clock.Now().UnixNano())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(out.next):
		}
	}
}

// probe reads the probe Machine: any answer (even NotFound or no such kind) means reachable.
func (g *APIServerGate) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, max(g.timeout/3, 100*time.Millisecond))
	defer cancel()
	err := g.reader.Get(ctx, g.key, &machinev1beta1.Machine{})
	if err == nil || apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil
	}
	return err
}
