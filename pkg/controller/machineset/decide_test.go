package machineset

import (
	"slices"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func testMachineSet(replicas int32) *machinev1beta1.MachineSet {
	ms := &machinev1beta1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: "ms", Namespace: "ns", UID: "ms-uid", Generation: 4},
		Spec: machinev1beta1.MachineSetSpec{
			Replicas: ptr.To(replicas),
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"set": "a"}},
		},
	}
	ms.Spec.Template.Labels = map[string]string{"set": "a", "extra": "x"}
	return ms
}

func ownedBy(uid string) func(*machinev1beta1.Machine) {
	return func(m *machinev1beta1.Machine) {
		m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{
			APIVersion: "machine.openshift.io/v1beta1", Kind: "MachineSet", Name: "owner-" + uid, UID: metav1UID(uid), Controller: ptr.To(true),
		})
	}
}

func metav1UID(s string) types.UID { return types.UID(s) }

func withLabels(kv ...string) func(*machinev1beta1.Machine) {
	return func(m *machinev1beta1.Machine) {
		m.Labels = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m.Labels[kv[i]] = kv[i+1]
		}
	}
}

func TestClassifyMachines(t *testing.T) {
	ms := testMachineSet(3)
	machines := []*machinev1beta1.Machine{
		mk("mine", 0, ownedBy("ms-uid"), withLabels("set", "a")),
		mk("mine-deleting", 0, ownedBy("ms-uid"), withLabels("set", "a"), deleting),
		mk("mine-unmatched", 0, ownedBy("ms-uid"), withLabels("set", "b")),
		mk("mine-unmatched-deleting", 0, ownedBy("ms-uid"), withLabels("set", "b"), deleting),
		mk("orphan", 0, withLabels("set", "a", "more", "y")),
		mk("orphan-deleting", 0, withLabels("set", "a"), deleting),
		mk("orphan-unmatched", 0, withLabels("set", "c")),
		mk("orphan-nolabels", 0),
		mk("theirs", 0, ownedBy("other-uid"), withLabels("set", "a")),
	}
	// A non-controller ownerReference to us does not make a Machine ours.
	machines = append(machines, mk("weak-ref", 0, withLabels("set", "a"), func(m *machinev1beta1.Machine) {
		m.OwnerReferences = []metav1.OwnerReference{{Kind: "MachineSet", Name: "ms", UID: "ms-uid"}}
	}))
	c := classifyMachines(ms, selectorOf(ms), machines)
	if got := names(c.active); !slices.Equal(got, []string{"mine"}) {
		t.Errorf("active = %v", got)
	}
	if got := names(c.adopt); !slices.Equal(got, []string{"orphan", "weak-ref"}) {
		t.Errorf("adopt = %v", got)
	}
	if got := names(c.release); !slices.Equal(got, []string{"mine-unmatched"}) {
		t.Errorf("release = %v", got)
	}
	if c.deleting != 2 {
		t.Errorf("deleting = %d, want 2", c.deleting)
	}

	// An empty selector matches nothing: nothing adopted, owned ones released.
	empty := ms.DeepCopy()
	empty.Spec.Selector = metav1.LabelSelector{}
	c = classifyMachines(empty, selectorOf(empty), machines)
	if len(c.active) != 0 || len(c.adopt) != 0 {
		t.Errorf("empty selector: active %v adopt %v, want none", names(c.active), names(c.adopt))
	}
	if selectorOf(empty) != labels.Nothing() {
		t.Error("selectorOf(empty) must be labels.Nothing()")
	}
}

func TestDecide(t *testing.T) {
	three := []*machinev1beta1.Machine{mk("a", 0), mk("b", 1), mk("c", 2, nodeless)}
	tests := []struct {
		name       string
		desired    int
		active     []*machinev1beta1.Machine
		satisfied  bool
		policy     machinev1beta1.MachineSetDeletePolicy
		maxCreate  int
		wantCreate int
		wantDelete []string
		wantWait   bool
	}{
		{"steady", 3, three, true, "", 500, 0, nil, false},
		{"scale up", 5, three, true, "", 500, 2, nil, false},
		{"from zero", 4, nil, true, "", 500, 4, nil, false},
		{"scale up capped by burst", 1000, three, true, "", 500, 500, nil, false},
		{"no cap when maxCreate is 0", 10, nil, true, "", 0, 10, nil, false},
		{"scale down picks nodeless first", 2, three, true, "Oldest", 500, 0, []string{"c"}, false},
		{"scale down by policy", 1, three, true, "Newest", 500, 0, []string{"c", "b"}, false},
		{"to zero", 0, three, true, "Oldest", 500, 0, []string{"c", "a", "b"}, false},
		{"waits for expectations before creating", 5, three, false, "", 500, 0, nil, true},
		{"waits for expectations before deleting", 0, three, false, "", 500, 0, nil, true},
		{"waits even when steady", 3, three, false, "", 500, 0, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decide(tt.desired, tt.active, tt.satisfied, tt.policy, tt.maxCreate, false)
			if got.create != tt.wantCreate || got.wait != tt.wantWait {
				t.Errorf("create=%d wait=%v, want create=%d wait=%v", got.create, got.wait, tt.wantCreate, tt.wantWait)
			}
			del := names(got.remove)
			if len(del) == 0 {
				del = nil
			}
			if !slices.Equal(del, tt.wantDelete) {
				t.Errorf("delete = %v, want %v", del, tt.wantDelete)
			}
		})
	}
}

// TestDecideWhileFrozen: a frozen MachineSet creates nothing but still
// scales down and waits for expectations. Breaks if: decide ignored frozen.
func TestDecideWhileFrozen(t *testing.T) {
	three := []*machinev1beta1.Machine{mk("a", 0), mk("b", 1), mk("c", 2, nodeless)}
	tests := []struct {
		name       string
		desired    int
		satisfied  bool
		wantFrozen bool
		wantDelete []string
		wantWait   bool
	}{
		{"scale up held back", 5, true, true, nil, false},
		{"steady", 3, true, false, nil, false},
		{"scale down still deletes", 2, true, false, []string{"c"}, false},
		{"expectations still waited for", 5, false, false, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decide(tt.desired, three, tt.satisfied, "Oldest", 500, true)
			if got.create != 0 || got.frozen != tt.wantFrozen || got.wait != tt.wantWait {
				t.Errorf("create=%d frozen=%v wait=%v, want create=0 frozen=%v wait=%v", got.create, got.frozen, got.wait, tt.wantFrozen, tt.wantWait)
			}
			if del := names(got.remove); !slices.Equal(del, tt.wantDelete) && len(del)+len(tt.wantDelete) > 0 {
				t.Errorf("delete = %v, want %v", del, tt.wantDelete)
			}
		})
	}
}

func readyNode(name string, status corev1.ConditionStatus, since time.Time) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeReady, Status: status, LastTransitionTime: metav1.NewTime(since)},
		}},
	}
}

func TestAvailability(t *testing.T) {
	now := t0.Add(time.Hour)
	tests := []struct {
		name             string
		node             *corev1.Node
		minReady         time.Duration
		ready, available bool
		wait             time.Duration
	}{
		{"no node", nil, 0, false, false, 0},
		{"no Ready condition", &corev1.Node{}, 0, false, false, 0},
		{"ready false", readyNode("n", corev1.ConditionFalse, t0), 0, false, false, 0},
		{"ready unknown", readyNode("n", corev1.ConditionUnknown, t0), 0, false, false, 0},
		{"ready, minReady 0", readyNode("n", corev1.ConditionTrue, now), 0, true, true, 0},
		{"ready just now, minReady 300s", readyNode("n", corev1.ConditionTrue, now), 300 * time.Second, true, false, 300 * time.Second},
		{"ready 100s ago, minReady 300s", readyNode("n", corev1.ConditionTrue, now.Add(-100*time.Second)), 300 * time.Second, true, false, 200 * time.Second},
		{"ready exactly 300s ago", readyNode("n", corev1.ConditionTrue, now.Add(-300*time.Second)), 300 * time.Second, true, true, 0},
		{"ready long ago", readyNode("n", corev1.ConditionTrue, t0), 300 * time.Second, true, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, a, w := availability(tt.node, tt.minReady, now)
			if r != tt.ready || a != tt.available || w != tt.wait {
				t.Errorf("got ready=%v available=%v wait=%v, want %v %v %v", r, a, w, tt.ready, tt.available, tt.wait)
			}
		})
	}
}

func TestComputeStatus(t *testing.T) {
	now := t0.Add(time.Hour)
	ms := testMachineSet(5)
	ms.Spec.MinReadySeconds = 60
	ms.Spec.Selector = metav1.LabelSelector{
		MatchLabels:      map[string]string{"set": "a"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "zone", Operator: metav1.LabelSelectorOpIn, Values: []string{"x", "y"}}},
	}
	ms.Status.ErrorReason = ptr.To(machinev1beta1.InvalidConfigurationMachineSetError)
	ms.Status.ErrorMessage = ptr.To("old")
	nodes := map[string]*corev1.Node{
		"node-avail":  readyNode("node-avail", corev1.ConditionTrue, now.Add(-time.Hour)),
		"node-fresh":  readyNode("node-fresh", corev1.ConditionTrue, now.Add(-20*time.Second)),
		"node-fresh2": readyNode("node-fresh2", corev1.ConditionTrue, now.Add(-50*time.Second)),
		"node-down":   readyNode("node-down", corev1.ConditionFalse, now.Add(-time.Hour)),
	}
	withNode := func(n string) func(*machinev1beta1.Machine) {
		return func(m *machinev1beta1.Machine) { m.Status.NodeRef = &corev1.ObjectReference{Name: n} }
	}
	active := []*machinev1beta1.Machine{
		mk("a", 0, withLabels("set", "a", "extra", "x", "more", "1"), withNode("node-avail")),
		mk("b", 0, withLabels("set", "a"), withNode("node-fresh")),
		mk("c", 0, withLabels("set", "a", "extra", "x"), withNode("node-fresh2")),
		mk("d", 0, withLabels("set", "a", "extra", "x"), withNode("node-down")),
		mk("e", 0, withLabels("set", "a", "extra", "x"), nodeless),
		mk("f", 0, withLabels("set", "a", "extra", "x"), withNode("node-missing")),
	}
	st, requeue := computeStatus(ms, active, func(n string) *corev1.Node { return nodes[n] }, now)
	want := machinev1beta1.MachineSetStatus{
		Replicas: 6, FullyLabeledReplicas: 5, ReadyReplicas: 3, AvailableReplicas: 1,
		ObservedGeneration: 4, LabelSelector: "set=a,zone in (x,y)",
	}
	if st.Replicas != want.Replicas || st.FullyLabeledReplicas != want.FullyLabeledReplicas ||
		st.ReadyReplicas != want.ReadyReplicas || st.AvailableReplicas != want.AvailableReplicas ||
		st.ObservedGeneration != want.ObservedGeneration || st.LabelSelector != want.LabelSelector {
		t.Errorf("status = %+v, want %+v", st, want)
	}
	if st.ErrorReason != nil || st.ErrorMessage != nil {
		t.Error("a valid MachineSet's errorReason/errorMessage must be cleared")
	}
	if requeue != 10*time.Second {
		t.Errorf("requeue = %v, want 10s (node-fresh2 becomes available first)", requeue)
	}
	if ms.Status.ErrorMessage == nil {
		t.Error("computeStatus modified its input")
	}

	// Nothing waiting: no requeue.
	_, requeue = computeStatus(ms, active[:1], func(n string) *corev1.Node { return nodes[n] }, now)
	if requeue != 0 {
		t.Errorf("requeue = %v, want 0", requeue)
	}
}

func TestInvalidStatus(t *testing.T) {
	ms := testMachineSet(1)
	ms.Status.Replicas = 2
	st := invalidStatus(ms, "spec.selector: bad")
	if st.ErrorReason == nil || *st.ErrorReason != "InvalidConfiguration" || st.ErrorMessage == nil || *st.ErrorMessage != "spec.selector: bad" {
		t.Errorf("status = %+v", st)
	}
	if st.Replicas != 2 || st.ObservedGeneration != 4 || st.LabelSelector != "set=a" {
		t.Errorf("other fields: %+v", st)
	}
}

func TestNewMachine(t *testing.T) {
	ms := testMachineSet(1)
	ms.Spec.Template.Annotations = map[string]string{"note": "n"}
	ms.Spec.Template.Spec.ProviderID = ptr.To("should-copy")
	ms.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
	m := newMachine(ms)
	if m.GenerateName != "ms-" || m.Name != "" || m.Namespace != "ns" {
		t.Errorf("meta = %+v", m.ObjectMeta)
	}
	if m.Labels["set"] != "a" || m.Labels["extra"] != "x" || m.Annotations["note"] != "n" {
		t.Errorf("labels %v annotations %v", m.Labels, m.Annotations)
	}
	ref := metav1.GetControllerOf(m)
	if ref == nil || ref.UID != "ms-uid" || ref.Kind != "MachineSet" || ref.APIVersion != "machine.openshift.io/v1beta1" ||
		ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("controller ref = %+v", ref)
	}
	// Deep copies: changing the Machine leaves the template alone.
	m.Labels["set"] = "changed"
	m.Spec.Taints[0].Key = "changed"
	if ms.Spec.Template.Labels["set"] != "a" || ms.Spec.Template.Spec.Taints[0].Key != "k" {
		t.Error("newMachine shares maps or slices with the template")
	}
}

func TestMachineSetOwner(t *testing.T) {
	m := mk("m", 0, ownedBy("u"))
	if key, ok := machineSetOwner(m); !ok || key.Name != "owner-u" || key.Namespace != "ns" {
		t.Errorf("got %v %v", key, ok)
	}
	other := mk("m", 0, func(m *machinev1beta1.Machine) {
		m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "cluster.x-k8s.io/v1beta1", Kind: "MachineSet", Name: "x", Controller: ptr.To(true)}}
	})
	if _, ok := machineSetOwner(other); ok {
		t.Error("a MachineSet of another API group is not ours")
	}
	if _, ok := machineSetOwner(mk("m", 0)); ok {
		t.Error("an orphan has no owner")
	}
	if got := machineControllerIndex(mk("m", 0)); !slices.Equal(got, []string{OrphanIndexValue}) {
		t.Errorf("orphan index = %v", got)
	}
	if got := machineControllerIndex(m); !slices.Equal(got, []string{"u"}) {
		t.Errorf("owned index = %v", got)
	}
}

func TestMachineChangeMatters(t *testing.T) {
	base := mk("m", 0, ownedBy("u"), withLabels("a", "b"))
	same := base.DeepCopy()
	same.ResourceVersion = "9"
	same.Status.Phase = ptr.To("Running")
	same.Status.ProviderStatus = nil
	same.Status.LastUpdated = &metav1.Time{Time: t0}
	if machineChangeMatters(base, same) {
		t.Error("a status change other than nodeRef must not wake the controller")
	}
	for name, f := range map[string]func(*machinev1beta1.Machine){
		"labels":   withLabels("a", "c"),
		"owner":    func(m *machinev1beta1.Machine) { m.OwnerReferences = nil },
		"deletion": deleting,
		"nodeRef":  nodeless,
	} {
		c := base.DeepCopy()
		f(c)
		if !machineChangeMatters(base, c) {
			t.Errorf("%s change must wake the controller", name)
		}
	}
}

func TestNodeChangeMatters(t *testing.T) {
	a := readyNode("n", corev1.ConditionTrue, t0)
	hb := a.DeepCopy()
	hb.Status.Conditions[1].LastHeartbeatTime = metav1.NewTime(t0.Add(time.Minute))
	hb.Labels = map[string]string{"x": "y"}
	if nodeChangeMatters(a, hb) {
		t.Error("a heartbeat must not wake the controller")
	}
	for name, b := range map[string]*corev1.Node{
		"status":     readyNode("n", corev1.ConditionFalse, t0),
		"transition": readyNode("n", corev1.ConditionTrue, t0.Add(time.Second)),
		"gone":       {},
		"annotation": func() *corev1.Node {
			n := a.DeepCopy()
			n.Annotations = map[string]string{"machine.openshift.io/machine": "ns/m"}
			return n
		}(),
	} {
		if !nodeChangeMatters(a, b) {
			t.Errorf("%s change must wake the controller", name)
		}
	}
}
