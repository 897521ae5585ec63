//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/nodeutil"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// poolLabel marks a scenario's Machines and, through the template's
// spec.metadata, their Nodes.
const poolLabel = "chaos-pool"

// The operand containers the MachineSet scenarios kill.
var scaleVictims = []string{"machineset-controller", "machine-controller", "nodelink-controller"}

func newMachineSet(name string) *machinev1beta1.MachineSet {
	labels := map[string]string{poolLabel: name, "machine.openshift.io/cluster-api-cluster": "kubemark"}
	return &machinev1beta1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: machinev1beta1.MachineSetSpec{
			Replicas: ptr.To[int32](0),
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{poolLabel: name}},
			Template: machinev1beta1.MachineTemplateSpec{
				ObjectMeta: machinev1beta1.ObjectMeta{Labels: maps.Clone(labels)},
				Spec: machinev1beta1.MachineSpec{
					ObjectMeta: machinev1beta1.ObjectMeta{Labels: map[string]string{poolLabel: name}},
					ProviderSpec: machinev1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: []byte(
						`{"apiVersion":"kubemark.machine-api-operator.io/v1alpha1","kind":"KubemarkMachineProviderSpec","cpu":"2","memory":"4Gi","pods":110}`)}},
				},
			},
		},
	}
}

// ownershipWatch watches a MachineSet's Machines and records every moment a
// Machine is created while the MachineSet already owns as many non-deleting
// Machines as it should: the overshoot a MachineSet must never make.
type ownershipWatch struct {
	ms types.UID

	mu         sync.Mutex
	desired    int
	deleting   map[types.UID]bool // owned Machines, by UID: deleting?
	maxOwned   int
	violations []string
	relists    int
}

func (w *ownershipWatch) setDesired(n int) {
	w.mu.Lock()
	w.desired = n
	w.mu.Unlock()
}

func (w *ownershipWatch) owned(m *machinev1beta1.Machine) bool {
	ref := metav1.GetControllerOf(m)
	return ref != nil && ref.UID == w.ms
}

// observe applies one watch event.
func (w *ownershipWatch) observe(t watch.EventType, m *machinev1beta1.Machine) {
	if !w.owned(m) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, known := w.deleting[m.UID]
	switch t {
	case watch.Deleted:
		delete(w.deleting, m.UID)
		return
	default:
		w.deleting[m.UID] = m.DeletionTimestamp != nil
	}
	if known || t != watch.Added {
		return
	}
	active := 0
	for _, d := range w.deleting {
		if !d {
			active++
		}
	}
	w.maxOwned = max(w.maxOwned, active)
	if active > w.desired {
		w.violations = append(w.violations, fmt.Sprintf("%s created while %d non-deleting Machines were owned, replicas %d", m.Name, active, w.desired))
	}
}

// run follows the Machines until ctx ends, re-watching from the last
// resourceVersion when the watch breaks (an API server outage) and
// re-listing when that version is gone.
func (w *ownershipWatch) run(ctx context.Context, t testing.TB) {
	relisted := func(l client.ObjectList, _ bool) {
		list := l.(*machinev1beta1.MachineList)
		w.mu.Lock()
		w.relists++
		seen := map[types.UID]bool{}
		for i := range list.Items {
			m := &list.Items[i]
			if w.owned(m) {
				seen[m.UID] = true
			}
		}
		for uid := range w.deleting {
			if !seen[uid] {
				delete(w.deleting, uid)
			}
		}
		w.mu.Unlock()
		for i := range list.Items {
			w.observe(watch.Modified, &list.Items[i]) // not a creation we saw happen
		}
	}
	listWatch(ctx, func() client.ObjectList { return &machinev1beta1.MachineList{} }, []client.ListOption{client.InNamespace(namespace)},
		relisted, func(typ watch.EventType, obj client.Object) {
			if m, ok := obj.(*machinev1beta1.Machine); ok {
				w.observe(typ, m)
			}
		})
}

// checkEndState waits until the MachineSet owns exactly want Machines, none
// deleting, all Running with a Ready Node, and no Node of the pool lacks its
// Machine. It returns how long that took.
func checkEndState(ctx context.Context, t *testing.T, ms *machinev1beta1.MachineSet, want int) time.Duration {
	t.Helper()
	start := time.Now()
	var last string
	waitFor(ctx, t, fmt.Sprintf("machineset %s: exactly %d Machines Running with Ready Nodes, no orphan Node", ms.Name, want), func(ctx context.Context) (bool, error) {
		machines := &machinev1beta1.MachineList{}
		if err := cluster.List(ctx, machines, client.InNamespace(namespace), client.MatchingLabels{poolLabel: ms.Name}); err != nil {
			return false, err
		}
		nodes := &corev1.NodeList{}
		if err := cluster.List(ctx, nodes, client.MatchingLabels{poolLabel: ms.Name}); err != nil {
			return false, err
		}
		ready := map[string]bool{}
		for i := range nodes.Items {
			ready[nodes.Items[i].Name] = nodeutil.IsReady(&nodes.Items[i])
		}
		owned, deleting, running := 0, 0, 0
		machineNodes := map[string]bool{}
		for _, m := range machines.Items {
			if ref := metav1.GetControllerOf(&m); ref == nil || ref.UID != ms.UID {
				continue
			}
			owned++
			if m.DeletionTimestamp != nil {
				deleting++
				continue
			}
			if m.Status.NodeRef != nil {
				machineNodes[m.Status.NodeRef.Name] = true
			}
			if m.Status.Phase != nil && *m.Status.Phase == "Running" && m.Status.NodeRef != nil && ready[m.Status.NodeRef.Name] {
				running++
			}
		}
		orphans := 0
		for _, n := range nodes.Items {
			if !machineNodes[n.Name] {
				orphans++
			}
		}
		last = fmt.Sprintf("owned %d, deleting %d, running with ready node %d, nodes %d, orphan nodes %d", owned, deleting, running, len(nodes.Items), orphans)
		return owned == want && deleting == 0 && running == want && orphans == 0 && len(nodes.Items) == want, nil
	})
	t.Logf("end state: %s", last)
	return time.Since(start)
}

// scale sets the MachineSet's replicas.
func scale(ctx context.Context, t *testing.T, ms *machinev1beta1.MachineSet, n int) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)
	waitFor(ctx, t, "scaling "+ms.Name, func(ctx context.Context) (bool, error) {
		return true, cluster.Patch(ctx, ms, client.RawPatch(types.MergePatchType, []byte(patch)))
	})
}

// createMachineSet creates a MachineSet with 0 replicas; when the test ends it is scaled to 0,
// the end state checked and the MachineSet removed.
func createMachineSet(ctx context.Context, t *testing.T, name string) *machinev1beta1.MachineSet {
	t.Helper()
	ms := newMachineSet(name)
	if err := cluster.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		scale(ctx, t, ms, 0)
		checkEndState(ctx, t, ms, 0)
		if err := cluster.Delete(ctx, ms); client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
	})
	return ms
}

// startScenario creates a MachineSet with 0 replicas and its ownership
// watch; the MachineSet is scaled to 0 and removed when the test ends.
func startScenario(ctx context.Context, t *testing.T, name string) (*machinev1beta1.MachineSet, *ownershipWatch) {
	ms := createMachineSet(ctx, t, name)
	w := &ownershipWatch{ms: ms.UID, deleting: map[types.UID]bool{}}
	watchCtx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go w.run(watchCtx, t)
	return ms, w
}

func (w *ownershipWatch) report(t *testing.T) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("ownership watch: most non-deleting Machines owned at a creation %d, relists %d", w.maxOwned, w.relists)
	for _, v := range w.violations {
		t.Errorf("overshoot: %s", v)
	}
}

// killRounds kills each victim once per round, at random moments, while
// phase runs; rounds start 1-8 s apart. rt measures each lease's retake.
func killRounds(ctx context.Context, t *testing.T, r *rand.Rand, rounds int, rt *retakes) (killed int) {
	for range rounds {
		if pause(ctx, time.Duration(1000+r.IntN(7000))*time.Millisecond); ctx.Err() != nil {
			return killed
		}
		for _, i := range r.Perm(len(scaleVictims)) {
			v := kill(ctx, t, r, operandSelector, scaleVictims[i])
			rt.watch(ctx, v, time.Now())
			killed++
			t.Logf("SIGKILL %s (pid %d)", v.name, v.pid)
			pause(ctx, time.Duration(r.IntN(1500))*time.Millisecond)
		}
	}
	return killed
}

// TestScaleUnderKills: MachineSet 0→replicas and replicas→down while the
// machineset, machine and nodelink processes are killed at random moments.
func TestScaleUnderKills(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	r := rng(t.Name())
	operandLeading(ctx, t)
	ms, w := startScenario(ctx, t, "chaos-kills")
	upRounds := (*kills + 1) / 2
	downRounds := *kills - upRounds
	if downRounds == 0 {
		downRounds = 1 // the scale-down is exercised too, even in the short form
	}

	var rt retakes
	w.setDesired(*replicas)
	start := time.Now()
	scale(ctx, t, ms, *replicas)
	n := killRounds(ctx, t, r, upRounds, &rt)
	settle := checkEndState(ctx, t, ms, *replicas)
	t.Logf("FIGURE scale 0→%d with %d kills: end state %s after start, %s after the last kill",
		*replicas, n, time.Since(start).Round(time.Second), settle.Round(time.Second))
	rt.report(t, fmt.Sprintf("scale 0→%d", *replicas))

	start = time.Now()
	scale(ctx, t, ms, *down)
	w.setDesired(*down)
	n = killRounds(ctx, t, r, downRounds, &rt)
	settle = checkEndState(ctx, t, ms, *down)
	t.Logf("FIGURE scale %d→%d with %d kills: end state %s after start, %s after the last kill",
		*replicas, *down, n, time.Since(start).Round(time.Second), settle.Round(time.Second))
	rt.report(t, fmt.Sprintf("scale %d→%d", *replicas, *down))
	w.report(t)
}

// component is a process of the kwok cluster (binary runtime).
type component struct{ name string }

func (c component) pidFile() string { return filepath.Join(*workdir, "pids", c.name+".pid") }

// stop kills the component with SIGKILL (a crash: its connections drop at
// once; a SIGTERM'd API server would keep serving open connections for a
// minute of graceful shutdown), waits for it to exit and returns a function
// that starts it again exactly as kwokctl did (same argv, working directory
// and environment, log appended).
func (c component) stop(t *testing.T) (restart func()) {
	t.Helper()
	if *workdir == "" {
		t.Fatal("-chaos.kwok-cluster-dir is required (make chaos sets it)")
	}
	data, err := os.ReadFile(c.pidFile())
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	argv := readNul(t, fmt.Sprintf("/proc/%d/cmdline", pid))
	env := readNul(t, fmt.Sprintf("/proc/%d/environ", pid))
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 30*time.Second, fmt.Sprintf("%s (pid %d) to exit", c.name, pid), func(context.Context) (bool, error) {
		if syscall.Kill(pid, 0) != nil {
			return true, nil
		}
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || !strings.Contains(string(st), ") Z ") {
			return false, err
		}
		// A zombie leader has exited, but its other threads may still hold
		// the process's files (etcd's restart once found its port in use):
		// done when the leader is the last thread left.
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		return err == nil && len(tasks) <= 1, nil
	})
	return func() {
		log, err := os.OpenFile(filepath.Join(*workdir, "logs", c.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = log.Close() }() // the process writes through its own descriptor
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = cwd, env, log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			t.Fatalf("restarting %s: %v", c.name, err)
		}
		if err := os.WriteFile(c.pidFile(), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			t.Fatal(err)
		}
		go func() { _ = cmd.Wait() }() // reap it if it exits while the test runs
	}
}

func readNul(t *testing.T, path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
}

// TestAPIServerOutageAndEtcdRestart: the API server is stopped in the
// middle of a scale-up until the machine controller freezes (longer than
// --machine-safety-apiserver-statuscheck-timeout, ~40 s), and etcd is
// restarted in the middle of the scale-down; the machine controller thaws,
// every controller recovers without a process restart, and no instance
// (kubemark Node) is created twice or deleted before its Machine.
func TestAPIServerOutageAndEtcdRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	r := rng(t.Name())
	// This scenario is about the API server: its processes lead from
	// the start.
	operandLeading(ctx, t)
	ms, w := startScenario(ctx, t, "chaos-outage")
	fleetCtx, stopFleet := context.WithCancel(ctx)
	defer stopFleet()
	fleet := newFleetLog(fleetCtx, ms.Name)
	before, err := restartsOf(ctx, scaleVictims...)
	if err != nil {
		t.Fatal(err)
	}
	ops, err := containers(ctx, operatorSelector, "machine-api-operator")
	if err != nil || len(ops) != 1 {
		t.Fatalf("want one running operator: %+v (err %v)", ops, err)
	}
	operatorBefore := ops[0].restarts
	up := min(*replicas, 100)
	w.setDesired(up)
	// The scale-up starts 1-4 s before the API server stops, which is
	// probeLead before the freeze's next probe.
	lead := time.Duration(1000+r.IntN(3000)) * time.Millisecond
	probe := nextProbe(ctx, t)
	mcLog := machineControllerLog(ctx, t)
	pause(ctx, time.Until(probe.Add(-probeLead-lead)))
	start := time.Now()
	scale(ctx, t, ms, up)
	pause(ctx, lead)
	restart := component{"kube-apiserver"}.stop(t)
	stopped := time.Now()
	t.Logf("kube-apiserver stopped %s into the scale-up, %s before the freeze's next probe", stopped.Sub(start).Round(time.Millisecond), probe.Sub(stopped).Round(time.Millisecond))
	// Stopped until the machine controller freezes: longer than the
	// timeout; past the renew deadline something is wrong.
	froze := mcLog.waitLine(ctx, t, frozeLine, 80*time.Second)
	frozenAfter := time.Since(stopped)
	restart()
	outage := time.Since(stopped)
	t.Logf("kube-apiserver restarted after %s", outage.Round(time.Millisecond))
	if !froze {
		t.Errorf("the machine controller did not log its freeze (%q) within 80 s of the outage (timeout %s, period %s)", frozeLine, statusCheckTimeout, statusCheckPeriod)
	} else if frozenAfter < statusCheckTimeout {
		t.Errorf("the machine controller froze %s into the outage, before the timeout %s", frozenAfter.Round(time.Millisecond), statusCheckTimeout)
	}
	thawed := froze && mcLog.waitLine(ctx, t, thawedLine, 2*time.Minute)
	thawedAfter := time.Since(stopped) - outage
	if froze && !thawed {
		t.Errorf("the machine controller did not log its thaw (%q) within 2 min of the restart", thawedLine)
	}
	settle := checkEndState(ctx, t, ms, up)
	t.Logf("FIGURE scale 0→%d across a %s API server outage: machine controller frozen %s into it, thawed %s after the restart; end state %s after start, %s after the restart",
		up, outage.Round(time.Second), frozenAfter.Round(time.Second), thawedAfter.Round(time.Second), time.Since(start).Round(time.Second), settle.Round(time.Second))

	downTo := min(*down, up/2)
	w.setDesired(downTo)
	start = time.Now()
	scale(ctx, t, ms, downTo)
	pause(ctx, time.Duration(500+r.IntN(1500))*time.Millisecond)
	restartEtcd := component{"etcd"}.stop(t)
	restartEtcd()
	t.Logf("etcd restarted %s into the scale-down", time.Since(start).Round(time.Millisecond))
	settle = checkEndState(ctx, t, ms, downTo)
	t.Logf("FIGURE scale %d→%d across an etcd restart: end state %s after start", up, downTo, time.Since(start).Round(time.Second))
	_ = settle
	w.report(t)
	fleet.waitCaughtUp(ctx, t)
	events, relists := fleet.snapshot()
	inst := checkInstances(events)
	t.Logf("FIGURE instances (kubemark Nodes) across the outage and the etcd restart: %d created for %d Machines, %d deleted for %d (%d watch relists)",
		inst.created, up, inst.deleted, up-downTo, relists)
	for _, p := range inst.problems {
		t.Errorf("instance: %s", p)
	}
	if inst.created != up || inst.deleted != up-downTo {
		t.Errorf("%d instances created and %d deleted; want %d and %d", inst.created, inst.deleted, up, up-downTo)
	}

	after, err := restartsOf(ctx, scaleVictims...)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range scaleVictims {
		if after[n] != before[n] {
			t.Errorf("%s restarted %d times during the outage; controllers must ride it out", n, after[n]-before[n])
		}
	}
	if ops, err := containers(ctx, operatorSelector, "machine-api-operator"); err != nil || len(ops) != 1 || ops[0].restarts != operatorBefore {
		t.Errorf("the operator restarted during the outage (%+v, err %v); it must ride it out", ops, err)
	}
}
