//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/nodeutil"
)

// fleetState is a MachineDeployment's Machines and the readiness of their
// Nodes at one instant.
type fleetState struct {
	machines  map[string]*machinev1beta1.Machine
	nodeReady map[string]bool
}

// available counts the Machines available as the MachineSet controller
// counts them: not being deleted, with a nodeRef to a Ready Node
// (minReadySeconds is 0 in these tests).
func (s *fleetState) available() int {
	n := 0
	for _, m := range s.machines {
		if m.DeletionTimestamp == nil && m.Status.NodeRef != nil && s.nodeReady[m.Status.NodeRef.Name] {
			n++
		}
	}
	return n
}

// templates returns the machine-template-hash values of the Machines.
func (s *fleetState) templates() []string {
	hashes := map[string]bool{}
	for _, m := range s.machines {
		hashes[m.Labels[mdv1beta1.MachineTemplateHashLabel]] = true
	}
	return slices.Sorted(maps.Keys(hashes))
}

// fleetEvent is one change of a Machine or a Node, at the resourceVersion
// the API server gave it.
type fleetEvent struct {
	rv      uint64
	machine *machinev1beta1.Machine
	node    *corev1.Node
	deleted bool
}

// fleetWatch records the events of two watches, on a MachineDeployment's
// Machines and on their Nodes. The two streams are not ordered with each
// other: a Node's Ready may arrive after the deletion of another Machine
// the controller allowed because of it. replay therefore merges them in
// resourceVersion order (etcd's revision, one sequence for every kind) and
// checks the fleet after every event of either, as it was at that instant.
type fleetWatch struct {
	mu        sync.Mutex
	initial   fleetState
	events    []fleetEvent
	machineRV map[string]string // latest resourceVersion seen per Machine
	nodeRV    map[string]string // and per Node
	err       error
}

// fleetFigures sums up a replay: events replayed, the most Machines
// (deleting ones included) and template hashes present at once, the fewest
// available, and the violations of the check with their resourceVersion.
type fleetFigures struct {
	events, maxMachines, minAvailable, maxTemplates int
	violations                                      []string
}

// watchFleet lists then watches the Machines selected by selector and the
// Nodes labelled e2e-pool=pool (newKubemarkMachine's pool label).
func watchFleet(ctx context.Context, t *testing.T, selector map[string]string, pool string) *fleetWatch {
	t.Helper()
	ns := operandNamespace()
	machines := &machinev1beta1.MachineList{}
	if err := cluster.List(ctx, machines, client.InNamespace(ns), client.MatchingLabels(selector)); err != nil {
		t.Fatal(err)
	}
	nodes := &corev1.NodeList{}
	if err := cluster.List(ctx, nodes, client.MatchingLabels{"e2e-pool": pool}); err != nil {
		t.Fatal(err)
	}
	f := &fleetWatch{
		initial:   fleetState{machines: map[string]*machinev1beta1.Machine{}, nodeReady: map[string]bool{}},
		machineRV: map[string]string{}, nodeRV: map[string]string{},
	}
	for i := range machines.Items {
		m := &machines.Items[i]
		f.initial.machines[m.Name], f.machineRV[m.Name] = m, m.ResourceVersion
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		f.initial.nodeReady[n.Name], f.nodeRV[n.Name] = nodeutil.IsReady(n), n.ResourceVersion
	}
	watchFrom(t, &machinev1beta1.MachineList{}, machines.ResourceVersion, func(ev watch.Event) {
		m, _ := ev.Object.(*machinev1beta1.Machine)
		f.record(ev, m, m == nil, func(e *fleetEvent) { e.machine = m }, f.machineRV)
	}, client.InNamespace(ns), client.MatchingLabels(selector))
	watchFrom(t, &corev1.NodeList{}, nodes.ResourceVersion, func(ev watch.Event) {
		n, _ := ev.Object.(*corev1.Node)
		f.record(ev, n, n == nil, func(e *fleetEvent) { e.node = n }, f.nodeRV)
	}, client.MatchingLabels{"e2e-pool": pool})
	return f
}

// record appends a watch event (obj is its Machine or Node, absent for
// anything else) and keeps the latest resourceVersion per object in seen.
func (f *fleetWatch) record(ev watch.Event, obj client.Object, absent bool, set func(*fleetEvent), seen map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ev.Type == watch.Error {
		f.err = apierrors.FromObject(ev.Object)
		return
	}
	if absent || (ev.Type != watch.Added && ev.Type != watch.Modified && ev.Type != watch.Deleted) {
		return
	}
	rv, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	if err != nil {
		f.err = fmt.Errorf("resourceVersion %q of %s is not a number: Machine and Node events cannot be ordered", obj.GetResourceVersion(), obj.GetName())
		return
	}
	e := fleetEvent{rv: rv, deleted: ev.Type == watch.Deleted}
	set(&e)
	f.events = append(f.events, e)
	if e.deleted {
		delete(seen, obj.GetName())
	} else {
		seen[obj.GetName()] = obj.GetResourceVersion()
	}
}

// replay waits until both watches have delivered every change made so far,
// then replays all events in resourceVersion order from the initial lists,
// calling check (a violation, or "") on the fleet after each.
func (f *fleetWatch) replay(ctx context.Context, t *testing.T, selector map[string]string, pool string, check func(*fleetState) string) fleetFigures {
	t.Helper()
	versions := func(list client.ObjectList, opts ...client.ListOption) func(context.Context) (map[string]string, error) {
		return func(ctx context.Context) (map[string]string, error) {
			if err := cluster.List(ctx, list, opts...); err != nil {
				return nil, err
			}
			out := map[string]string{}
			switch l := list.(type) {
			case *machinev1beta1.MachineList:
				for _, m := range l.Items {
					out[m.Name] = m.ResourceVersion
				}
			case *corev1.NodeList:
				for _, n := range l.Items {
					out[n.Name] = n.ResourceVersion
				}
			}
			return out, nil
		}
	}
	seen := func(m map[string]string) func() (map[string]string, error) {
		return func() (map[string]string, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return maps.Clone(m), f.err
		}
	}
	waitCaughtUp(ctx, t, "machine", versions(&machinev1beta1.MachineList{}, client.InNamespace(operandNamespace()), client.MatchingLabels(selector)), seen(f.machineRV))
	waitCaughtUp(ctx, t, "node", versions(&corev1.NodeList{}, client.MatchingLabels{"e2e-pool": pool}), seen(f.nodeRV))

	f.mu.Lock()
	events := slices.Clone(f.events)
	s := fleetState{machines: maps.Clone(f.initial.machines), nodeReady: maps.Clone(f.initial.nodeReady)}
	f.mu.Unlock()
	slices.SortStableFunc(events, func(a, b fleetEvent) int { return cmp.Compare(a.rv, b.rv) })

	fig := fleetFigures{minAvailable: s.available(), maxMachines: len(s.machines), maxTemplates: len(s.templates())}
	last := ""
	for _, e := range events {
		switch {
		case e.machine != nil && e.deleted:
			delete(s.machines, e.machine.Name)
		case e.machine != nil:
			s.machines[e.machine.Name] = e.machine
		case e.deleted:
			delete(s.nodeReady, e.node.Name)
		default:
			s.nodeReady[e.node.Name] = nodeutil.IsReady(e.node)
		}
		fig.events++
		fig.maxMachines = max(fig.maxMachines, len(s.machines))
		fig.maxTemplates = max(fig.maxTemplates, len(s.templates()))
		fig.minAvailable = min(fig.minAvailable, s.available())
		v := check(&s)
		if v != "" && v != last {
			fig.violations = append(fig.violations, fmt.Sprintf("%s (at resourceVersion %d)", v, e.rv))
		}
		last = v
	}
	return fig
}
