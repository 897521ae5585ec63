//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// fleetEvent is one change of a Machine or a Node of a pool, with the etcd
// revision it happened at. Revisions are global across resources, so
// sorting the events of the Machine watch and the Node watch by revision
// gives the order in which the API server stored them; replaying them in
// that order shows every state the cluster went through, which two watches
// read side by side would not (one lags the other).
type fleetEvent struct {
	rev     uint64
	typ     watch.EventType
	machine *machinev1beta1.Machine
	node    *corev1.Node
	// listed: the change was found by a list (the first one, or one that
	// replaced an expired watch), not seen as it happened.
	listed bool
}

// fleetLog records the events of a pool's Machines and Nodes, following
// both kinds across API server outages (a watch broken by an outage is
// resumed from its last resourceVersion; one that expired is replaced by a
// fresh list, whose differences are recorded as events at the list's
// revision, and counted in relists).
type fleetLog struct {
	pool string

	mu      sync.Mutex
	events  []fleetEvent
	live    map[string]string // kind/name → resourceVersion, as last recorded
	relists int
}

// newFleetLog follows the Machines and Nodes labelled poolLabel=pool until
// ctx ends.
func newFleetLog(ctx context.Context, pool string) *fleetLog {
	l := &fleetLog{pool: pool, live: map[string]string{}}
	go l.follow(ctx, func() client.ObjectList { return &machinev1beta1.MachineList{} }, client.InNamespace(namespace), client.MatchingLabels{poolLabel: pool})
	go l.follow(ctx, func() client.ObjectList { return &corev1.NodeList{} }, client.MatchingLabels{poolLabel: pool})
	return l
}

func revision(obj metav1.Object) uint64 {
	// The API server's resourceVersion is etcd's revision; the chaos
	// cluster's API server is always etcd-backed.
	rv, _ := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	return rv
}

func fleetKey(obj client.Object) string {
	switch obj.(type) {
	case *machinev1beta1.Machine:
		return "Machine/" + obj.GetName()
	default:
		return "Node/" + obj.GetName()
	}
}

func (l *fleetLog) record(typ watch.EventType, obj client.Object, rev uint64, listed bool) {
	ev := fleetEvent{rev: rev, typ: typ, listed: listed}
	switch o := obj.(type) {
	case *machinev1beta1.Machine:
		ev.machine = o
	case *corev1.Node:
		ev.node = o
	default:
		return
	}
	l.events = append(l.events, ev)
	if typ == watch.Deleted {
		delete(l.live, fleetKey(obj))
	} else {
		l.live[fleetKey(obj)] = obj.GetResourceVersion()
	}
}

// relisted records a fresh list: what changed since the last event seen.
func (l *fleetLog) relisted(list client.ObjectList, first bool) {
	items, _ := meta.ExtractList(list)
	rev, _ := strconv.ParseUint(list.GetResourceVersion(), 10, 64)
	l.mu.Lock()
	defer l.mu.Unlock()
	if !first {
		l.relists++
	}
	seen := map[string]bool{}
	var kind string
	for _, it := range items {
		obj := it.(client.Object)
		k := fleetKey(obj)
		kind, _, _ = cutKind(k)
		seen[k] = true
		if l.live[k] != obj.GetResourceVersion() {
			l.record(watch.Modified, obj, rev, true)
		}
	}
	if kind == "" {
		if _, ok := list.(*machinev1beta1.MachineList); ok {
			kind = "Machine"
		} else {
			kind = "Node"
		}
	}
	for k := range l.live {
		if kd, name, _ := cutKind(k); kd == kind && !seen[k] {
			var gone client.Object = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if kind == "Machine" {
				gone = &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
			}
			l.record(watch.Deleted, gone, rev, true)
		}
	}
}

func cutKind(key string) (kind, name string, ok bool) {
	for i := range key {
		if key[i] == '/' {
			return key[:i], key[i+1:], true
		}
	}
	return "", key, false
}

// follow lists and watches one kind until ctx ends.
func (l *fleetLog) follow(ctx context.Context, newList func() client.ObjectList, opts ...client.ListOption) {
	listWatch(ctx, newList, opts, l.relisted, func(typ watch.EventType, obj client.Object) {
		l.mu.Lock()
		l.record(typ, obj, revision(obj), false)
		l.mu.Unlock()
	})
}

// listWatch lists a kind, then watches it from that list's version until ctx
// ends: a broken watch resumes from the last version seen (an API server
// outage), a version that is gone (410) relists. relisted gets each list
// (first: the initial one), event each watched change (bookmarks aside).
func listWatch(ctx context.Context, newList func() client.ObjectList, opts []client.ListOption,
	relisted func(list client.ObjectList, first bool), event func(watch.EventType, client.Object)) {
	rv, first := "", true
	for ctx.Err() == nil {
		if rv == "" {
			list := newList()
			if poll.Until(ctx, 0, func(ctx context.Context) (bool, error) {
				err := cluster.List(ctx, list, opts...)
				return err == nil, err
			}) != nil {
				return // ctx ended
			}
			relisted(list, first)
			first = false
			rv = list.GetResourceVersion()
		}
		var wi watch.Interface
		if poll.Until(ctx, 0, func(ctx context.Context) (bool, error) {
			var err error
			wi, err = cluster.Watch(ctx, newList(), append(slices.Clone(opts),
				&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})...)
			return err == nil, err
		}) != nil {
			return // ctx ended
		}
		for ev := range wi.ResultChan() {
			if ev.Type == watch.Error {
				if st, ok := ev.Object.(*metav1.Status); ok && st.Code == 410 {
					rv = ""
				}
				break
			}
			obj, ok := ev.Object.(client.Object)
			if !ok {
				continue
			}
			rv = obj.GetResourceVersion()
			if ev.Type != watch.Bookmark {
				event(ev.Type, obj)
			}
		}
		wi.Stop()
	}
}

// machinesSeen counts the Machines of which an event satisfying ok was
// recorded.
func (l *fleetLog) machinesSeen(ok func(*machinev1beta1.Machine) bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[string]bool{}
	for _, ev := range l.events {
		if ev.machine != nil && ev.typ != watch.Deleted && ok(ev.machine) {
			seen[ev.machine.Name] = true
		}
	}
	return len(seen)
}

// snapshot returns the events so far in revision order and the relists.
func (l *fleetLog) snapshot() ([]fleetEvent, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	evs := slices.Clone(l.events)
	slices.SortStableFunc(evs, func(a, b fleetEvent) int {
		switch {
		case a.rev < b.rev:
			return -1
		case a.rev > b.rev:
			return 1
		}
		return 0
	})
	return evs, l.relists
}

// waitCaughtUp waits until the log's view of the pool equals a fresh list
// of it: every change up to now has been recorded.
func (l *fleetLog) waitCaughtUp(ctx context.Context, t *testing.T) {
	t.Helper()
	waitFor(ctx, t, "the "+l.pool+" watches caught up", func(ctx context.Context) (bool, error) {
		machines := &machinev1beta1.MachineList{}
		if err := cluster.List(ctx, machines, client.InNamespace(namespace), client.MatchingLabels{poolLabel: l.pool}); err != nil {
			return false, err
		}
		nodes := &corev1.NodeList{}
		if err := cluster.List(ctx, nodes, client.MatchingLabels{poolLabel: l.pool}); err != nil {
			return false, err
		}
		want := map[string]string{}
		for i := range machines.Items {
			want[fleetKey(&machines.Items[i])] = machines.Items[i].ResourceVersion
		}
		for i := range nodes.Items {
			want[fleetKey(&nodes.Items[i])] = nodes.Items[i].ResourceVersion
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if len(want) != len(l.live) {
			return false, nil
		}
		for k, v := range want {
			if l.live[k] != v {
				return false, nil
			}
		}
		return true, nil
	})
}

// instanceReport is what the events say about the pool's instances (for
// kubemark, a Machine's instance is the Node of the same name).
type instanceReport struct {
	created, deleted int
	// problems: an instance created twice for one Machine (a second Node
	// UID under its name), or deleted while its Machine was not being
	// deleted.
	problems []string
}

// checkInstances replays events: each Machine gets at most one instance,
// and an instance goes only after its Machine is marked for deletion.
func checkInstances(events []fleetEvent) instanceReport {
	var r instanceReport
	uids := map[string]types.UID{}     // node name → the one UID it may have
	deleting := map[string]bool{}      // machine name → deletionTimestamp seen
	nodeLive := map[string]types.UID{} // node name → live UID
	for _, ev := range events {
		switch {
		case ev.machine != nil:
			if ev.typ == watch.Deleted || ev.machine.DeletionTimestamp != nil {
				deleting[ev.machine.Name] = true
			}
		case ev.node != nil:
			n := ev.node
			if ev.typ == watch.Deleted {
				if _, ok := nodeLive[n.Name]; ok {
					r.deleted++
					// A list finds a Node and its Machine gone at one
					// revision, in no particular order.
					if !deleting[n.Name] && !ev.listed {
						r.problems = append(r.problems, fmt.Sprintf("Node %s deleted (revision %d) while its Machine was not being deleted", n.Name, ev.rev))
					}
				}
				delete(nodeLive, n.Name)
				continue
			}
			if _, ok := nodeLive[n.Name]; !ok && n.UID != "" {
				nodeLive[n.Name] = n.UID
				if first, seen := uids[n.Name]; seen && first != n.UID {
					r.problems = append(r.problems, fmt.Sprintf("Node %s created a second time (UID %s, first %s, revision %d)", n.Name, n.UID, first, ev.rev))
				} else if !seen {
					uids[n.Name] = n.UID
					r.created++
				}
			}
		}
	}
	return r
}
