//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/nodeutil"
)

// The rollout scenario's MachineDeployment: the 10 Machines rolled
// with maxSurge 3 and maxUnavailable 1.
const (
	rolloutReplicas    = 10
	rolloutSurge       = 3
	rolloutUnavailable = 1
)

// rolloutVictims are the processes the rollout scenario kills: the one
// running the MachineDeployment (and MachineSet) controller and the one
// creating and deleting the instances.
var rolloutVictims = []string{"machineset-controller", "machine-controller"}

func newMachineDeployment(name string) *mdv1beta1.MachineDeployment {
	ms := newMachineSet(name)
	return &mdv1beta1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: mdv1beta1.MachineDeploymentSpec{
			Replicas: ptr.To[int32](rolloutReplicas),
			Selector: ms.Spec.Selector,
			Template: ms.Spec.Template,
			Strategy: mdv1beta1.MachineDeploymentStrategy{
				Type: mdv1beta1.RollingUpdateStrategy,
				RollingUpdate: &mdv1beta1.RollingUpdateMachineDeployment{
					MaxSurge:       ptr.To(intstr.FromInt32(rolloutSurge)),
					MaxUnavailable: ptr.To(intstr.FromInt32(rolloutUnavailable)),
				},
			},
		},
	}
}

// rolloutBounds are the invariants of a RollingUpdate at every moment.
type rolloutBounds struct{ maxMachines, minAvailable int }

// rolloutReplay is what replaying the events found.
type rolloutReplay struct {
	events                       int
	mostMachines, leastAvailable int
	violations                   []string
}

// replayRollout applies events in revision order and checks the bounds
// after each seen as it happened: the deployment's Machines (those being deleted included, as
// the controller's footprint counts them) at most maxMachines; available
// Machines (not being deleted, owned by a MachineSet, with a Ready Node:
// minReadySeconds is 0, so that is how the controller counts) at least
// minAvailable.
func replayRollout(events []fleetEvent, b rolloutBounds) rolloutReplay {
	machines := map[string]*machinev1beta1.Machine{}
	ready := map[string]bool{}
	r := rolloutReplay{leastAvailable: -1}
	for _, ev := range events {
		switch {
		case ev.machine != nil && ev.typ == watch.Deleted:
			delete(machines, ev.machine.Name)
		case ev.machine != nil:
			machines[ev.machine.Name] = ev.machine
		case ev.typ == watch.Deleted:
			delete(ready, ev.node.Name)
		default:
			ready[ev.node.Name] = nodeutil.IsReady(ev.node)
		}
		if ev.listed {
			continue // the state the watches started from, or a gap
		}
		r.events++
		available := 0
		for _, m := range machines {
			ref := metav1.GetControllerOf(m)
			if m.DeletionTimestamp == nil && ref != nil && ref.Kind == "MachineSet" && m.Status.NodeRef != nil && ready[m.Status.NodeRef.Name] {
				available++
			}
		}
		r.mostMachines = max(r.mostMachines, len(machines))
		if r.leastAvailable < 0 || available < r.leastAvailable {
			r.leastAvailable = available
		}
		if len(machines) > b.maxMachines {
			r.violations = append(r.violations, fmt.Sprintf("revision %d: %d Machines, more than %d", ev.rev, len(machines), b.maxMachines))
		}
		if available < b.minAvailable {
			r.violations = append(r.violations, fmt.Sprintf("revision %d: %d available Machines, fewer than %d", ev.rev, available, b.minAvailable))
		}
	}
	return r
}

// checkRolledOut waits until the deployment has exactly replicas Machines,
// none deleting, all of the current template (memory) and Running with a
// Ready Node, in one MachineSet; every other set scaled to 0 and empty; no
// Node of the pool without its Machine; and the status says so.
func checkRolledOut(ctx context.Context, t *testing.T, md *mdv1beta1.MachineDeployment, memory string) {
	t.Helper()
	var last string
	waitFor(ctx, t, fmt.Sprintf("machinedeployment %s rolled out to %d Machines with memory %s", md.Name, rolloutReplicas, memory), func(ctx context.Context) (bool, error) {
		cur := &mdv1beta1.MachineDeployment{}
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(md), cur); err != nil {
			return false, err
		}
		sets := &machinev1beta1.MachineSetList{}
		if err := cluster.List(ctx, sets, client.InNamespace(namespace), client.MatchingLabels{poolLabel: md.Name}); err != nil {
			return false, err
		}
		machines := &machinev1beta1.MachineList{}
		if err := cluster.List(ctx, machines, client.InNamespace(namespace), client.MatchingLabels{poolLabel: md.Name}); err != nil {
			return false, err
		}
		nodes := &corev1.NodeList{}
		if err := cluster.List(ctx, nodes, client.MatchingLabels{poolLabel: md.Name}); err != nil {
			return false, err
		}
		ready := map[string]bool{}
		for i := range nodes.Items {
			ready[nodes.Items[i].Name] = nodeutil.IsReady(&nodes.Items[i])
		}
		owners := map[types.UID]int{}
		good, other := 0, 0
		for i := range machines.Items {
			m := &machines.Items[i]
			ref := metav1.GetControllerOf(m)
			if m.DeletionTimestamp != nil || ref == nil || !hasMemory(m, memory) ||
				ptr.Deref(m.Status.Phase, "") != "Running" || m.Status.NodeRef == nil || !ready[m.Status.NodeRef.Name] {
				other++
				continue
			}
			owners[ref.UID]++
			good++
		}
		fullSets, emptySets := 0, 0
		for _, ms := range sets.Items {
			switch {
			case ptr.Deref(ms.Spec.Replicas, 0) == rolloutReplicas && owners[ms.UID] == rolloutReplicas:
				fullSets++
			case ptr.Deref(ms.Spec.Replicas, 0) == 0 && ms.Status.Replicas == 0:
				emptySets++
			}
		}
		st := cur.Status
		last = fmt.Sprintf("%d new Machines Running with Ready Nodes, %d others; %d full and %d empty of %d sets; %d Nodes; status generation %d/%d replicas %d updated %d available %d",
			good, other, fullSets, emptySets, len(sets.Items), len(nodes.Items), st.ObservedGeneration, cur.Generation, st.Replicas, st.UpdatedReplicas, st.AvailableReplicas)
		return good == rolloutReplicas && other == 0 && fullSets == 1 && fullSets+emptySets == len(sets.Items) &&
			len(nodes.Items) == rolloutReplicas && st.ObservedGeneration == cur.Generation &&
			st.Replicas == rolloutReplicas && st.UpdatedReplicas == rolloutReplicas && st.AvailableReplicas == rolloutReplicas, nil
	})
	t.Logf("rolled out: %s", last)
}

// hasMemory tells whether m is of the template with memory.
func hasMemory(m *machinev1beta1.Machine, memory string) bool {
	return m.Spec.ProviderSpec.Value != nil && strings.Contains(string(m.Spec.ProviderSpec.Value.Raw), `"memory":"`+memory+`"`)
}

// setMemory changes the template: a new revision.
func setMemory(ctx context.Context, t *testing.T, md *mdv1beta1.MachineDeployment, memory string) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"providerSpec":{"value":{"memory":%q}}}}}}`, memory)
	waitFor(ctx, t, "changing the template of "+md.Name, func(ctx context.Context) (bool, error) {
		return true, cluster.Patch(ctx, md, client.RawPatch(types.MergePatchType, []byte(patch)))
	})
}

// TestMachineDeploymentRolloutUnderKills: a MachineDeployment of 10
// kubemark Machines (RollingUpdate, maxSurge 3, maxUnavailable 1) is rolled
// CHAOS_KILLS times to a new template; in each rollout the machineset
// controller's and the machine controller's processes are SIGKILLed when a
// random number (1-9) of new Machines exists. Every rollout completes (10 new Machines in one set, the
// old sets at 0), and replaying every Machine and Node event in the order
// the API server stored them shows no moment with more than replicas +
// maxSurge Machines or fewer than replicas − maxUnavailable available.
func TestMachineDeploymentRolloutUnderKills(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute+time.Duration(*kills)*4*time.Minute)
	defer cancel()
	r := rng(t.Name())
	operandLeading(ctx, t)
	md := newMachineDeployment("chaos-rollout")
	start := time.Now()
	if err := cluster.Create(ctx, md); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		waitFor(ctx, t, "scaling "+md.Name+" to 0", func(ctx context.Context) (bool, error) {
			return true, cluster.Patch(ctx, md, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":0}}`)))
		})
		waitFor(ctx, t, md.Name+": no Machine and no Node left", func(ctx context.Context) (bool, error) {
			machines := &machinev1beta1.MachineList{}
			nodes := &corev1.NodeList{}
			if err := cluster.List(ctx, machines, client.InNamespace(namespace), client.MatchingLabels{poolLabel: md.Name}); err != nil {
				return false, err
			}
			if err := cluster.List(ctx, nodes, client.MatchingLabels{poolLabel: md.Name}); err != nil {
				return false, err
			}
			return len(machines.Items) == 0 && len(nodes.Items) == 0, nil
		})
		if err := cluster.Delete(ctx, md); client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
	})
	checkRolledOut(ctx, t, md, "4Gi")
	t.Logf("FIGURE machinedeployment of %d created (no kill): rolled out %s after creation", rolloutReplicas, time.Since(start).Round(time.Second))

	// From here on every event counts; the pool is at rest, so the
	// Machine and Node lists the watches start from show one moment.
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	fleet := newFleetLog(watchCtx, md.Name)
	fleet.waitCaughtUp(ctx, t)

	killed := 0
	var rt retakes
	for round := 1; round <= *kills; round++ {
		memory := fmt.Sprintf("%dGi", 4+round)
		start := time.Now()
		// The kills come when the k-th new Machine appears (k 1-9): in the
		// middle of the rollout however fast the Machines come up (a
		// fixed delay found the rollout done on an idle machine).
		k := 1 + r.IntN(rolloutReplicas-1)
		setMemory(ctx, t, md, memory)
		waitFor(ctx, t, fmt.Sprintf("new Machine %d of %d", k, rolloutReplicas), func(context.Context) (bool, error) {
			return fleet.machinesSeen(func(m *machinev1beta1.Machine) bool { return hasMemory(m, memory) }) >= k, nil
		})
		t.Logf("round %d: new Machine %d of %d seen %s after the template change", round, k, rolloutReplicas, time.Since(start).Round(time.Millisecond))
		for _, i := range r.Perm(len(rolloutVictims)) {
			v := kill(ctx, t, r, operandSelector, rolloutVictims[i])
			rt.watch(ctx, v, time.Now())
			killed++
			t.Logf("round %d: SIGKILL %s (pid %d) %s after the template change", round, v.name, v.pid, time.Since(start).Round(time.Millisecond))
			pause(ctx, time.Duration(r.IntN(1500))*time.Millisecond)
		}
		checkRolledOut(ctx, t, md, memory)
		t.Logf("FIGURE machinedeployment rollout %d of %d Machines (maxSurge %d, maxUnavailable %d) with %s and %s SIGKILLed: complete %s after the template change",
			round, rolloutReplicas, rolloutSurge, rolloutUnavailable, rolloutVictims[0], rolloutVictims[1], time.Since(start).Round(time.Second))
	}

	rt.report(t, "machinedeployment rollouts")
	fleet.waitCaughtUp(ctx, t)
	events, relists := fleet.snapshot()
	if relists > 0 {
		t.Errorf("the Machine or Node watch expired %d times and was replaced by a list: some moments were not seen", relists)
	}
	res := replayRollout(events, rolloutBounds{maxMachines: rolloutReplicas + rolloutSurge, minAvailable: rolloutReplicas - rolloutUnavailable})
	t.Logf("FIGURE machinedeployment rollouts: %d kills; %d Machine and Node events replayed: at most %d Machines (bound %d), at least %d available (bound %d), %d violations",
		killed, res.events, res.mostMachines, rolloutReplicas+rolloutSurge, res.leastAvailable, rolloutReplicas-rolloutUnavailable, len(res.violations))
	for _, v := range res.violations {
		t.Errorf("rollout bound broken: %s", v)
	}
	if res.mostMachines <= rolloutReplicas {
		t.Errorf("at most %d Machines seen: the watch saw no surge, so it saw no rollout", res.mostMachines)
	}
	inst := checkInstances(events)
	t.Logf("instances: %d created, %d deleted", inst.created, inst.deleted)
	for _, p := range inst.problems {
		t.Errorf("instance: %s", p)
	}
	// created counts the first rollout's Nodes the watch started from.
	if inst.created != rolloutReplicas*(*kills+1) || inst.deleted != rolloutReplicas**kills {
		t.Errorf("%d instances known and %d deleted in %d rollouts of %d; want %d and %d", inst.created, inst.deleted, *kills, rolloutReplicas,
			rolloutReplicas*(*kills+1), rolloutReplicas**kills)
	}
}
