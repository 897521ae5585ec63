//go:build chaos

// Package chaos is the fault-injection suite (make chaos): on the local
// cluster, with the operator's and the operand's pods run from their spec as
// local processes (test/localpods), it kills processes with SIGKILL in the
// middle of MachineSet scales and MachineDeployment rollouts, stops the API
// server and restarts etcd in the middle of MachineSet scales, and checks
// the exact end state and the invariants that must hold throughout.
// Every random choice comes from -chaos.seed, so a run can be repeated.
//
// It needs the machine the local cluster runs on (it signals processes
// whose pids the local pod runner reports as containerID local://<pid>) and
// root.
package chaos

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

const namespace = "openshift-machine-api"

var (
	seed     = flag.Uint64("chaos.seed", 1, "Seed of every random choice (kill moments, victims).")
	kills    = flag.Int("chaos.kills", 5, "SIGKILLs per process and scenario (CI runs 1).")
	replicas = flag.Int("chaos.replicas", 200, "MachineSet size scaled up to.")
	down     = flag.Int("chaos.down", 50, "MachineSet size scaled down to.")
	workdir  = flag.String("chaos.kwok-cluster-dir", "", "The kwok cluster's directory (its pids and logs), for the API server and etcd scenario.")
)

// cluster is the client for $KUBECONFIG.
var cluster client.WithWatch

func TestMain(m *testing.M) {
	flag.Parse()
	path := os.Getenv("KUBECONFIG")
	if path == "" {
		fmt.Fprintln(os.Stderr, "chaos: KUBECONFIG is not set (make chaos sets it)")
		os.Exit(1)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos: %v\n", err)
		os.Exit(1)
	}
	cfg.QPS, cfg.Burst = 100, 200
	if cluster, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()}); err != nil {
		fmt.Fprintf(os.Stderr, "chaos: %v\n", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// rng returns the random source of one scenario, derived from -chaos.seed.
func rng(scenario string) *rand.Rand {
	h := uint64(0)
	for _, c := range scenario {
		h = h*31 + uint64(c)
	}
	return rand.New(rand.NewPCG(*seed, h))
}

// waitFor polls cond until it holds; it fails the test with what was awaited
// (and cond's last error) when ctx ends first. Errors, transient while the
// API server is away, are retried.
func waitFor(ctx context.Context, t testing.TB, what string, cond poll.Condition) {
	t.Helper()
	if err := poll.Until(ctx, 0, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// pause waits d, or until ctx ends: the random moments at which faults are
// injected (and how long an outage lasts). It is pacing, never a wait for a
// condition (waitFor is).
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// container is one container of a pod run by the local pod runner.
type container struct {
	pod, name string
	pid       int
	restarts  int32
}

// containers returns the running containers of the pods matching selector.
func containers(ctx context.Context, selector map[string]string, name string) ([]container, error) {
	pods := &corev1.PodList{}
	if err := cluster.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels(selector)); err != nil {
		return nil, err
	}
	var out []container
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name != name || cs.State.Running == nil {
				continue
			}
			id, ok := strings.CutPrefix(cs.ContainerID, "local://")
			if !ok {
				return nil, fmt.Errorf("pod %s is not run by the local pod runner (containerID %q): the chaos suite needs make chaos's local cluster", p.Name, cs.ContainerID)
			}
			pid, err := strconv.Atoi(id)
			if err != nil {
				return nil, err
			}
			out = append(out, container{pod: p.Name, name: name, pid: pid, restarts: cs.RestartCount})
		}
	}
	return out, nil
}

// operandSelector selects the operand's pods; operatorSelector the operator's.
var (
	operandSelector  = map[string]string{"k8s-app": "controller"}
	operatorSelector = map[string]string{"k8s-app": "machine-api-operator"}
)

// kill sends SIGKILL to the running container name of the pods matching
// selector (the first one, or a random one with several replicas) and
// returns what it killed.
func kill(ctx context.Context, t testing.TB, r *rand.Rand, selector map[string]string, name string) container {
	t.Helper()
	var victims []container
	waitFor(ctx, t, "container "+name+" running", func(ctx context.Context) (bool, error) {
		var err error
		victims, err = containers(ctx, selector, name)
		return len(victims) > 0, err
	})
	v := victims[r.IntN(len(victims))]
	if err := syscall.Kill(v.pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing %s/%s (pid %d): %v", v.pod, name, v.pid, err)
	}
	return v
}

// restartsOf returns the restart count of each named operand container.
func restartsOf(ctx context.Context, names ...string) (map[string]int32, error) {
	out := map[string]int32{}
	for _, n := range names {
		cs, err := containers(ctx, operandSelector, n)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			out[n] += c.restarts
		}
	}
	return out, nil
}

func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
