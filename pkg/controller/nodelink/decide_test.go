package nodelink

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/machinenode"
)

func taint(key, value string, effect corev1.TaintEffect) corev1.Taint {
	return corev1.Taint{Key: key, Value: value, Effect: effect}
}

const (
	noSched = corev1.TaintEffectNoSchedule
	noExec  = corev1.TaintEffectNoExecute
)

func record(t *testing.T, l lastApplied) string {
	t.Helper()
	return l.encode()
}

func testMachine(labels, annotations map[string]string, taints ...corev1.Taint) *machinev1beta1.Machine {
	m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m"}}
	m.Spec.ObjectMeta.Labels = labels
	m.Spec.ObjectMeta.Annotations = annotations
	m.Spec.Taints = taints
	return m
}

func testNode(labels, annotations map[string]string, taints ...corev1.Taint) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels, Annotations: annotations}}
	n.Spec.Taints = taints
	return n
}

func TestDesiredNode(t *testing.T) {
	const link = "ns/m"
	type want struct {
		labels      map[string]string
		annotations map[string]string // without LastAppliedAnnotation
		taints      []corev1.Taint
		record      *lastApplied // nil: no LastAppliedAnnotation
		changed     bool
		invalid     []string // substrings, in order
	}
	cases := []struct {
		name    string
		node    *corev1.Node
		machine *machinev1beta1.Machine
		want    want
	}{
		{
			name:    "bare machine: only the machine annotation",
			node:    testNode(nil, nil),
			machine: testMachine(nil, nil),
			want:    want{annotations: map[string]string{machinenode.MachineAnnotation: link}, changed: true},
		},
		{
			name:    "steady state: nothing to change",
			node:    testNode(map[string]string{"a": "1", "x": "y"}, map[string]string{machinenode.MachineAnnotation: link, "n": "v", LastAppliedAnnotation: `{"labels":{"a":"1"},"annotations":{"n":"v"},"taints":[{"key":"t","value":"v","effect":"NoSchedule"}]}`}, taint("t", "v", noSched), taint("other", "", noExec)),
			machine: testMachine(map[string]string{"a": "1"}, map[string]string{"n": "v"}, taint("t", "v", noSched)),
			want: want{
				labels:      map[string]string{"a": "1", "x": "y"},
				annotations: map[string]string{machinenode.MachineAnnotation: link, "n": "v"},
				taints:      []corev1.Taint{taint("t", "v", noSched), taint("other", "", noExec)},
				record:      &lastApplied{Labels: map[string]string{"a": "1"}, Annotations: map[string]string{"n": "v"}, Taints: []corev1.Taint{taint("t", "v", noSched)}},
			},
		},
		{
			name:    "labels, annotations and taints are added and recorded; foreign ones kept",
			node:    testNode(map[string]string{"kubernetes.io/hostname": "n"}, map[string]string{"foreign": "f"}, taint("node.kubernetes.io/not-ready", "", noExec)),
			machine: testMachine(map[string]string{"role": "infra"}, map[string]string{"note": "hi"}, taint("dedicated", "infra", noSched)),
			want: want{
				labels:      map[string]string{"kubernetes.io/hostname": "n", "role": "infra"},
				annotations: map[string]string{"foreign": "f", "note": "hi", machinenode.MachineAnnotation: link},
				taints:      []corev1.Taint{taint("node.kubernetes.io/not-ready", "", noExec), taint("dedicated", "infra", noSched)},
				record:      &lastApplied{Labels: map[string]string{"role": "infra"}, Annotations: map[string]string{"note": "hi"}, Taints: []corev1.Taint{taint("dedicated", "infra", noSched)}},
				changed:     true,
			},
		},
		{
			name: "entries dropped from the machine are removed while unchanged",
			node: testNode(map[string]string{"a": "1", "b": "2"}, map[string]string{machinenode.MachineAnnotation: link, "n": "v", "keep": "k",
				LastAppliedAnnotation: `{"labels":{"a":"1","b":"2"},"annotations":{"keep":"k","n":"v"},"taints":[{"key":"t","value":"v","effect":"NoSchedule"},{"key":"u","effect":"NoExecute"}]}`},
				taint("t", "v", noSched), taint("u", "", noExec)),
			machine: testMachine(map[string]string{"b": "2"}, map[string]string{"keep": "k"}, taint("u", "", noExec)),
			want: want{
				labels:      map[string]string{"b": "2"},
				annotations: map[string]string{machinenode.MachineAnnotation: link, "keep": "k"},
				taints:      []corev1.Taint{taint("u", "", noExec)},
				record:      &lastApplied{Labels: map[string]string{"b": "2"}, Annotations: map[string]string{"keep": "k"}, Taints: []corev1.Taint{taint("u", "", noExec)}},
				changed:     true,
			},
		},
		{
			name: "entries changed by someone else are kept when dropped from the machine",
			node: testNode(map[string]string{"a": "changed"}, map[string]string{machinenode.MachineAnnotation: link, "n": "changed",
				LastAppliedAnnotation: `{"labels":{"a":"1"},"annotations":{"n":"v"},"taints":[{"key":"t","value":"v","effect":"NoSchedule"}]}`},
				taint("t", "changed", noSched)),
			machine: testMachine(nil, nil),
			want: want{
				labels:      map[string]string{"a": "changed"},
				annotations: map[string]string{machinenode.MachineAnnotation: link, "n": "changed"},
				taints:      []corev1.Taint{taint("t", "changed", noSched)},
				changed:     true, // only the record goes away
			},
		},
		{
			name: "everything removed: the record goes and nil maps stay nil",
			node: testNode(map[string]string{"a": "1"}, map[string]string{machinenode.MachineAnnotation: link,
				LastAppliedAnnotation: `{"labels":{"a":"1"}}`}),
			machine: testMachine(nil, nil),
			want: want{
				labels:      map[string]string{},
				annotations: map[string]string{machinenode.MachineAnnotation: link},
				changed:     true,
			},
		},
		{
			name:    "a value the machine declares wins over a foreign change",
			node:    testNode(map[string]string{"a": "foreign"}, map[string]string{machinenode.MachineAnnotation: link, LastAppliedAnnotation: `{"labels":{"a":"1"}}`}),
			machine: testMachine(map[string]string{"a": "1"}, nil),
			want: want{
				labels:      map[string]string{"a": "1"},
				annotations: map[string]string{machinenode.MachineAnnotation: link},
				record:      &lastApplied{Labels: map[string]string{"a": "1"}},
				changed:     true,
			},
		},
		{
			name:    "taint with the same key and effect gets the machine's value in place",
			node:    testNode(nil, map[string]string{machinenode.MachineAnnotation: link}, taint("x", "", noExec), taint("t", "old", noSched), taint("y", "", noSched)),
			machine: testMachine(nil, nil, taint("t", "new", noSched)),
			want: want{
				annotations: map[string]string{machinenode.MachineAnnotation: link},
				taints:      []corev1.Taint{taint("x", "", noExec), taint("t", "new", noSched), taint("y", "", noSched)},
				record:      &lastApplied{Taints: []corev1.Taint{taint("t", "new", noSched)}},
				changed:     true,
			},
		},
		{
			name:    "same key, other effect is another taint",
			node:    testNode(nil, map[string]string{machinenode.MachineAnnotation: link}, taint("t", "v", noExec)),
			machine: testMachine(nil, nil, taint("t", "v", noSched)),
			want: want{
				annotations: map[string]string{machinenode.MachineAnnotation: link},
				taints:      []corev1.Taint{taint("t", "v", noExec), taint("t", "v", noSched)},
				record:      &lastApplied{Taints: []corev1.Taint{taint("t", "v", noSched)}},
				changed:     true,
			},
		},
		{
			name:    "duplicate machine taints: the first wins; timeAdded is not copied",
			node:    testNode(nil, map[string]string{machinenode.MachineAnnotation: link}),
			machine: testMachine(nil, nil, corev1.Taint{Key: "t", Value: "1", Effect: noExec, TimeAdded: &metav1.Time{}}, taint("t", "2", noExec)),
			want: want{
				annotations: map[string]string{machinenode.MachineAnnotation: link},
				taints:      []corev1.Taint{taint("t", "1", noExec)},
				record:      &lastApplied{Taints: []corev1.Taint{taint("t", "1", noExec)}},
				changed:     true,
			},
		},
		{
			name:    "machine annotation naming another machine is corrected",
			node:    testNode(nil, map[string]string{machinenode.MachineAnnotation: "ns/old"}),
			machine: testMachine(nil, nil),
			want:    want{annotations: map[string]string{machinenode.MachineAnnotation: link}, changed: true},
		},
		{
			name: "invalid and reserved entries are skipped and reported",
			node: testNode(nil, map[string]string{machinenode.MachineAnnotation: link}),
			machine: testMachine(
				map[string]string{"ok": "1", "bad key!": "1", "badvalue": "has space"},
				map[string]string{machinenode.MachineAnnotation: "ns/other", LastAppliedAnnotation: "{}", "fine": "x"},
				taint("t", "v", "Sometimes"), taint("good", "", noSched)),
			want: want{
				labels:      map[string]string{"ok": "1"},
				annotations: map[string]string{machinenode.MachineAnnotation: link, "fine": "x"},
				taints:      []corev1.Taint{taint("good", "", noSched)},
				record:      &lastApplied{Labels: map[string]string{"ok": "1"}, Annotations: map[string]string{"fine": "x"}, Taints: []corev1.Taint{taint("good", "", noSched)}},
				changed:     true,
				invalid: []string{
					`annotation "machine.openshift.io/machine": reserved`,
					`annotation "machine.openshift.io/nodelink-last-applied": reserved`,
					`label "bad key!"`,
					`label "badvalue"`,
					`taint "t" (Sometimes): effect must be`,
				},
			},
		},
		{
			name: "a tampered record naming our own annotations removes neither",
			node: testNode(nil, map[string]string{machinenode.MachineAnnotation: link,
				LastAppliedAnnotation: `{"annotations":{"machine.openshift.io/machine":"ns/m"}}`}),
			machine: testMachine(nil, nil),
			want:    want{annotations: map[string]string{machinenode.MachineAnnotation: link}, changed: true},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.node.DeepCopy()
			last, err := parseLastApplied(tc.node)
			if err != nil {
				t.Fatal(err)
			}
			plan := desiredNode(tc.node, tc.machine, last)
			if !reflect.DeepEqual(tc.node, before) {
				t.Fatal("desiredNode modified its input")
			}
			if plan.Changed != tc.want.changed {
				t.Errorf("changed = %v, want %v", plan.Changed, tc.want.changed)
			}
			got := plan.Node
			if !mapsEqualNilEmpty(got.Labels, tc.want.labels) {
				t.Errorf("labels = %v, want %v", got.Labels, tc.want.labels)
			}
			annotations := map[string]string{}
			for k, v := range got.Annotations {
				if k != LastAppliedAnnotation {
					annotations[k] = v
				}
			}
			if !mapsEqualNilEmpty(annotations, tc.want.annotations) {
				t.Errorf("annotations = %v, want %v", annotations, tc.want.annotations)
			}
			if !taintsEqual(got.Spec.Taints, tc.want.taints) {
				t.Errorf("taints = %v, want %v", got.Spec.Taints, tc.want.taints)
			}
			raw, has := got.Annotations[LastAppliedAnnotation]
			switch {
			case tc.want.record == nil && has:
				t.Errorf("unexpected last-applied %s", raw)
			case tc.want.record != nil && !has:
				t.Errorf("no last-applied, want %s", record(t, *tc.want.record))
			case tc.want.record != nil && raw != record(t, *tc.want.record):
				t.Errorf("last-applied = %s, want %s", raw, record(t, *tc.want.record))
			}
			if len(plan.Invalid) != len(tc.want.invalid) {
				t.Fatalf("invalid = %q, want %d entries like %q", plan.Invalid, len(tc.want.invalid), tc.want.invalid)
			}
			for i, sub := range tc.want.invalid {
				if !strings.Contains(plan.Invalid[i], sub) {
					t.Errorf("invalid[%d] = %q, want it to contain %q", i, plan.Invalid[i], sub)
				}
			}
			// Applying the plan again is a no-op (convergence).
			if plan.Changed {
				last2, err := parseLastApplied(plan.Node)
				if err != nil {
					t.Fatal(err)
				}
				if again := desiredNode(plan.Node, tc.machine, last2); again.Changed {
					t.Errorf("second pass still changes the node: %+v", again.Node)
				}
			}
		})
	}
}

func mapsEqualNilEmpty(a, b map[string]string) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func TestParseLastApplied(t *testing.T) {
	for _, tc := range []struct {
		name    string
		raw     *string
		want    lastApplied
		wantErr bool
	}{
		{name: "absent"},
		{name: "empty", raw: ptr("")},
		{name: "valid", raw: ptr(`{"labels":{"a":"1"},"taints":[{"key":"t","effect":"NoSchedule"}]}`),
			want: lastApplied{Labels: map[string]string{"a": "1"}, Taints: []corev1.Taint{taint("t", "", noSched)}}},
		{name: "malformed", raw: ptr(`{"labels":`), wantErr: true},
		{name: "wrong shape", raw: ptr(`["a"]`), wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := testNode(nil, map[string]string{})
			if tc.raw != nil {
				n.Annotations[LastAppliedAnnotation] = *tc.raw
			}
			got, err := parseLastApplied(n)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestMalformedRecordRemovesNothing(t *testing.T) {
	n := testNode(map[string]string{"a": "1"}, map[string]string{machinenode.MachineAnnotation: "ns/m", LastAppliedAnnotation: "not json"})
	last, err := parseLastApplied(n)
	if err == nil {
		t.Fatal("want an error for a malformed record")
	}
	plan := desiredNode(n, testMachine(nil, nil), last)
	if plan.Node.Labels["a"] != "1" {
		t.Errorf("label removed on the strength of an unreadable record")
	}
	if _, ok := plan.Node.Annotations[LastAppliedAnnotation]; ok || !plan.Changed {
		t.Errorf("the malformed record should be dropped (changed=%v)", plan.Changed)
	}
}

func TestLastAppliedEncodingIsCanonical(t *testing.T) {
	l := lastApplied{Labels: map[string]string{"b": "2", "a": "1", "c": "3"}, Taints: []corev1.Taint{taint("t", "", noSched)}}
	want := `{"labels":{"a":"1","b":"2","c":"3"},"taints":[{"key":"t","effect":"NoSchedule"}]}`
	for range 20 {
		if got := l.encode(); got != want {
			t.Fatalf("encode = %s, want %s", got, want)
		}
	}
	var back lastApplied
	if err := json.Unmarshal([]byte(want), &back); err != nil || !reflect.DeepEqual(back, l) {
		t.Errorf("round trip = %+v, %v", back, err)
	}
}

func TestPickMachine(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "u1"}}
	machine := func(name string, deleting bool, ref *corev1.ObjectReference) *machinev1beta1.Machine {
		m := testMachine(nil, nil)
		m.Name = name
		m.Status.NodeRef = ref
		if deleting {
			m.DeletionTimestamp = &metav1.Time{}
		}
		return m
	}
	ref := func(name string, uid types.UID) *corev1.ObjectReference {
		return &corev1.ObjectReference{Kind: "Node", Name: name, UID: uid}
	}
	a := machine("a", false, nil)
	b := machine("b", false, nil)
	// Machines being deleted: linked to this node, to another one, to an
	// earlier node of the same name, by name only, and to none.
	delHere := machine("del-here", true, ref("n", "u1"))
	delElsewhere := machine("del-elsewhere", true, ref("old", "u0"))
	delRecreated := machine("del-recreated", true, ref("n", "u0"))
	delByName := machine("del-by-name", true, ref("n", ""))
	delNoRef := machine("del-no-ref", true, nil)
	// A Machine whose Node was deleted keeps its nodeRef (old UID).
	keptRef := machine("kept-ref", false, ref("n", "u0"))
	ms := func(m ...*machinev1beta1.Machine) []*machinev1beta1.Machine { return m }
	for _, tc := range []struct {
		name     string
		byID     []*machinev1beta1.Machine
		byIP     []*machinev1beta1.Machine
		want     *machinev1beta1.Machine
		wantKind matchKind
		others   []*machinev1beta1.Machine // ambiguous or deleting
	}{
		{name: "none", wantKind: matchNone},
		{name: "providerID", byID: ms(a), byIP: ms(b), want: a, wantKind: matchProviderID},
		{name: "providerID wins over ambiguous IPs", byID: ms(a), byIP: ms(a, b), want: a, wantKind: matchProviderID},
		{name: "two providerID matches", byID: ms(a, b), wantKind: matchAmbiguous, others: ms(a, b)},
		{name: "one IP match", byIP: ms(b), want: b, wantKind: matchIP},
		{name: "two IP matches", byIP: ms(a, b), wantKind: matchAmbiguous, others: ms(a, b)},

		{name: "node recreated under its name: linked again", byID: ms(keptRef), want: keptRef, wantKind: matchProviderID},

		{name: "deleting, IP reused by a new node", byIP: ms(delElsewhere), wantKind: matchDeleting, others: ms(delElsewhere)},
		{name: "deleting, nodeRef cleared, IP reused", byIP: ms(delNoRef), wantKind: matchDeleting, others: ms(delNoRef)},
		{name: "deleting, node recreated under its name", byIP: ms(delRecreated), wantKind: matchDeleting, others: ms(delRecreated)},
		{name: "deleting, new node has its providerID", byID: ms(delNoRef), wantKind: matchDeleting, others: ms(delNoRef)},
		{name: "deleting, keeps its own node by IP", byIP: ms(delHere), want: delHere, wantKind: matchIP},
		{name: "deleting, keeps its own node by providerID", byID: ms(delHere), want: delHere, wantKind: matchProviderID},
		{name: "deleting, nodeRef without UID names the node", byIP: ms(delByName), want: delByName, wantKind: matchIP},
		{name: "deleting machine does not make a new one ambiguous", byIP: ms(delElsewhere, a), want: a, wantKind: matchIP},
		{name: "excluded providerID match still beats IP matches", byID: ms(delElsewhere), byIP: ms(a), wantKind: matchDeleting, others: ms(delElsewhere)},
		{name: "two linkable of three", byIP: ms(a, delNoRef, b), wantKind: matchAmbiguous, others: ms(a, b)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, kind, others := pickMachine(node, tc.byID, tc.byIP)
			if got != tc.want || kind != tc.wantKind || !reflect.DeepEqual(machineKeys(others), machineKeys(tc.others)) {
				t.Errorf("got %v %s %v, want %v %s %v", got, kind, machineKeys(others), tc.want, tc.wantKind, machineKeys(tc.others))
			}
		})
	}
}

func TestNodeRefUpToDate(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "u1"}}
	recreated := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "u2"}}
	ref := func(name string, uid types.UID) *corev1.ObjectReference {
		return &corev1.ObjectReference{Kind: "Node", Name: name, UID: uid}
	}
	m := testMachine(nil, nil)
	if nodeRefUpToDate(m, node) {
		t.Error("no ref is not up to date")
	}
	m.Status.NodeRef = ref("n", "u1")
	if !nodeRefUpToDate(m, node) {
		t.Error("same kind/name/uid is up to date")
	}
	m.Status.NodeRef.APIVersion = "v1"
	if !nodeRefUpToDate(m, node) {
		t.Error("extra fields do not matter")
	}
	if nodeRefUpToDate(m, recreated) {
		t.Error("another UID is not up to date")
	}
	if got := machinenode.NodeRef(node); got != (corev1.ObjectReference{Kind: "Node", Name: "n", UID: "u1"}) {
		t.Errorf("NodeRef = %+v", got)
	}
}

func ptr[T any](v T) *T { return &v }

// TestNeedsLock: the Node patch carries an optimistic lock exactly when it
// removes a label or annotation or changes the taints. Breaks if: needsLock
// ignored removed annotations (row "removes an annotation" would patch a
// stale Node unlocked) or always locked (row "only adds" would conflict with
// the node controllers' writes to a new Node).
func TestNeedsLock(t *testing.T) {
	node := func(labels, annotations map[string]string, taints ...corev1.Taint) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations}, Spec: corev1.NodeSpec{Taints: taints}}
	}
	taint := corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name     string
		from, to *corev1.Node
		want     bool
	}{
		{"only adds", node(map[string]string{"a": "1"}, nil), node(map[string]string{"a": "1", "b": "2"}, map[string]string{machinenode.MachineAnnotation: "ns/m"}), false},
		{"sets a value", node(map[string]string{"a": "1"}, nil), node(map[string]string{"a": "2"}, nil), false},
		{"removes a label", node(map[string]string{"a": "1", "b": "2"}, nil), node(map[string]string{"a": "1"}, nil), true},
		{"removes an annotation", node(nil, map[string]string{"x": "1"}), node(nil, map[string]string{}), true},
		{"adds a taint", node(nil, nil), node(nil, nil, taint), true},
		{"same taints", node(nil, nil, taint), node(map[string]string{"a": "1"}, nil, taint), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := needsLock(tc.from, tc.to); got != tc.want {
				t.Errorf("needsLock = %v, want %v", got, tc.want)
			}
		})
	}
}
