package machine

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

var _ provider.Actuator = &fakeActuator{}

// String names a stage in test failures.
func (s deletionStage) String() string {
	return [...]string{"Drain", "WaitPreTerminate", "DeleteInstance"}[s]
}

func TestDecideProvisioning(t *testing.T) {
	const (
		prov     = machinev1beta1.PhaseProvisioning
		provd    = machinev1beta1.PhaseProvisioned
		running  = machinev1beta1.PhaseRunning
		failed   = machinev1beta1.PhaseFailed
		noPhase  = ""
		yes, not = true, false
	)
	tests := []struct {
		name                         string
		phase                        string
		exists, provisioned, nodeRef bool
		want                         provisioningStep
	}{
		{"empty phase, no instance: Provisioning then Create", noPhase, not, not, not, provisioningStep{Phase: prov, Create: true}},
		{"Provisioning, no instance: Create", prov, not, not, not, provisioningStep{Phase: prov, Create: true}},
		{"instance without providerID/addresses keeps phase", prov, yes, not, not, provisioningStep{Phase: prov, Update: true}},
		{"adopted instance with empty phase", noPhase, yes, not, not, provisioningStep{Phase: prov, Update: true}},
		{"provisioned, no nodeRef: Provisioned", prov, yes, yes, not, provisioningStep{Phase: provd, Update: true}},
		{"provisioned with nodeRef: Running", provd, yes, yes, yes, provisioningStep{Phase: running, Update: true}},
		{"Running lost its nodeRef: stays Running", running, yes, yes, not, provisioningStep{Phase: running, Update: true}},
		{"provisioned instance disappeared: Failed", running, not, yes, yes, provisioningStep{Phase: failed, InstanceMissing: true}},
		{"Provisioned instance disappeared: Failed", provd, not, yes, not, provisioningStep{Phase: failed, InstanceMissing: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decideProvisioning(tt.phase, tt.exists, tt.provisioned, tt.nodeRef); got != tt.want {
				t.Errorf("decideProvisioning(%q, %v, %v, %v) = %+v, want %+v", tt.phase, tt.exists, tt.provisioned, tt.nodeRef, got, tt.want)
			}
		})
	}
}

func TestIsProvisioned(t *testing.T) {
	m := &machinev1beta1.Machine{}
	if provider.IsProvisioned(m) {
		t.Error("empty machine is not provisioned")
	}
	m.Spec.ProviderID = ptr.To("")
	if provider.IsProvisioned(m) {
		t.Error("empty providerID is not provisioned")
	}
	m.Spec.ProviderID = ptr.To("kubemark://ns/m")
	if !provider.IsProvisioned(m) {
		t.Error("providerID means provisioned")
	}
	m.Spec.ProviderID = nil
	m.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}
	if !provider.IsProvisioned(m) {
		t.Error("addresses mean provisioned")
	}
}

func hooks(names ...string) []machinev1beta1.LifecycleHook {
	var out []machinev1beta1.LifecycleHook
	for _, n := range names {
		out = append(out, machinev1beta1.LifecycleHook{Name: n, Owner: "owner-" + n})
	}
	return out
}

func TestDecideDeletionStage(t *testing.T) {
	drained := []machinev1beta1.Condition{{Type: DrainedCondition, Status: corev1.ConditionTrue}}
	notDrained := []machinev1beta1.Condition{{Type: DrainedCondition, Status: corev1.ConditionFalse}}
	tests := []struct {
		name  string
		conds []machinev1beta1.Condition
		hooks machinev1beta1.LifecycleHooks
		want  deletionStage
	}{
		{"no Drained condition", nil, machinev1beta1.LifecycleHooks{}, stageDrain},
		{"Drained=False", notDrained, machinev1beta1.LifecycleHooks{}, stageDrain},
		{"drained, no hooks", drained, machinev1beta1.LifecycleHooks{}, stageDeleteInstance},
		{"drained, preTerminate hook", drained, machinev1beta1.LifecycleHooks{PreTerminate: hooks("keep")}, stageWaitPreTerminate},
		{"drained, preDrain hook no longer matters", drained, machinev1beta1.LifecycleHooks{PreDrain: hooks("late")}, stageDeleteInstance},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &machinev1beta1.Machine{}
			m.Status.Conditions = tt.conds
			m.Spec.LifecycleHooks = tt.hooks
			if got := decideDeletionStage(m); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestDecideDrain(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	ref := &corev1.ObjectReference{Kind: "Node", Name: "n1"}
	tests := []struct {
		name        string
		annotations map[string]string
		preDrain    []machinev1beta1.LifecycleHook
		nodeRef     *corev1.ObjectReference
		node        *corev1.Node
		want        drainAction
		wantMsg     string
	}{
		{"drain", nil, nil, ref, node, drainRun, ""},
		{"preDrain hooks block", nil, hooks("etcd-quorum", "backup"), ref, node, drainBlocked, "blocked by pre-drain hook(s): etcd-quorum (owner owner-etcd-quorum), backup (owner owner-backup)"},
		{"preDrain hooks block even a skipped drain", map[string]string{ExcludeNodeDrainingAnnotation: ""}, hooks("h1"), nil, nil, drainBlocked, "pre-drain hook(s): h1"},
		{"exclude annotation, any value", map[string]string{ExcludeNodeDrainingAnnotation: "false"}, nil, ref, node, drainSkip, ExcludeNodeDrainingAnnotation},
		{"no nodeRef", nil, nil, nil, nil, drainSkip, "has no node"},
		{"node gone", nil, nil, ref, nil, drainSkip, `node "n1" no longer exists`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &machinev1beta1.Machine{}
			m.Annotations = tt.annotations
			m.Spec.LifecycleHooks.PreDrain = tt.preDrain
			m.Status.NodeRef = tt.nodeRef
			got := decideDrain(m, tt.node)
			if got.Action != tt.want || !strings.Contains(got.Message, tt.wantMsg) {
				t.Errorf("got %+v, want action %v with message containing %q", got, tt.want, tt.wantMsg)
			}
		})
	}
}

func TestHookConditions(t *testing.T) {
	tests := []struct {
		name            string
		hooks           machinev1beta1.LifecycleHooks
		drainable, term corev1.ConditionStatus
		drainMsg, tmMsg string
	}{
		{"no hooks", machinev1beta1.LifecycleHooks{}, corev1.ConditionTrue, corev1.ConditionTrue, "", ""},
		{"preDrain", machinev1beta1.LifecycleHooks{PreDrain: hooks("a")}, corev1.ConditionFalse, corev1.ConditionTrue, "pre-drain hook(s): a (owner owner-a)", ""},
		{"preTerminate", machinev1beta1.LifecycleHooks{PreTerminate: hooks("b", "c")}, corev1.ConditionTrue, corev1.ConditionFalse, "", "pre-terminate hook(s): b (owner owner-b), c (owner owner-c)"},
		{"both", machinev1beta1.LifecycleHooks{PreDrain: hooks("a"), PreTerminate: hooks("b")}, corev1.ConditionFalse, corev1.ConditionFalse, "a (owner", "b (owner"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, term := hookConditions(tt.hooks)
			check := func(c machinev1beta1.Condition, want corev1.ConditionStatus, msg string, typ machinev1beta1.ConditionType) {
				t.Helper()
				if c.Type != typ || c.Status != want || !strings.Contains(c.Message, msg) {
					t.Errorf("%s = %+v, want status %s, message containing %q", typ, c, want, msg)
				}
				if want == corev1.ConditionFalse && (c.Reason != ReasonHookPresent || c.Severity != machinev1beta1.ConditionSeverityWarning) {
					t.Errorf("%s False must have reason HookPresent and severity Warning: %+v", typ, c)
				}
				if want == corev1.ConditionTrue && c.Severity != "" {
					t.Errorf("%s True must have no severity: %+v", typ, c)
				}
			}
			check(d, tt.drainable, tt.drainMsg, DrainableCondition)
			check(term, tt.term, tt.tmMsg, TerminableCondition)
		})
	}
}

func TestEffectiveDrainTimeout(t *testing.T) {
	const def = 10 * time.Minute
	tests := []struct {
		name    string
		ann     map[string]string
		want    time.Duration
		wantErr string
	}{
		{"no annotation: default", nil, def, ""},
		{"annotation overrides", map[string]string{NodeDrainTimeoutAnnotation: "2s"}, 2 * time.Second, ""},
		{"compound duration", map[string]string{NodeDrainTimeoutAnnotation: " 1h30m "}, 90 * time.Minute, ""},
		{"0 waits forever", map[string]string{NodeDrainTimeoutAnnotation: "0"}, 0, ""},
		{"invalid keeps the default and names the annotation", map[string]string{NodeDrainTimeoutAnnotation: "soon"}, def, NodeDrainTimeoutAnnotation + ` annotation "soon"`},
		{"unitless number is invalid", map[string]string{NodeDrainTimeoutAnnotation: "30"}, def, "Go duration"},
		{"negative is invalid", map[string]string{NodeDrainTimeoutAnnotation: "-1m"}, def, "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := effectiveDrainTimeout(tt.ann, def)
			if got != tt.want {
				t.Errorf("timeout = %s, want %s", got, tt.want)
			}
			if tt.wantErr == "" && err != nil {
				t.Errorf("unexpected error %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func cpNode(name string, label string, unschedulable, ours bool) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, Annotations: map[string]string{}}}
	if label != "" {
		n.Labels[label] = ""
	}
	n.Spec.Unschedulable = unschedulable
	if ours {
		n.Annotations[DrainingAnnotation] = "ns/" + name
	}
	return n
}

func TestControlPlaneDrainAllowed(t *testing.T) {
	const cp, master = ControlPlaneNodeRoleLabel, MasterNodeRoleLabel
	tests := []struct {
		name      string
		node      corev1.Node
		others    []corev1.Node
		want      bool
		wantBlock string
	}{
		{"worker always allowed", cpNode("w", "", false, false), []corev1.Node{cpNode("cp1", cp, true, true)}, true, ""},
		{"control plane, no other drain", cpNode("cp0", cp, false, false), []corev1.Node{cpNode("cp1", cp, false, false)}, true, ""},
		{"control plane blocked by another one drained by us", cpNode("cp0", cp, false, false), []corev1.Node{cpNode("cp1", cp, true, true)}, false, "cp1"},
		{"master label blocked by control-plane label", cpNode("m0", master, false, false), []corev1.Node{cpNode("cp1", cp, true, true)}, false, "cp1"},
		{"control-plane label blocked by master label", cpNode("cp0", cp, false, false), []corev1.Node{cpNode("m1", master, true, true)}, false, "m1"},
		{"master blocked by master", cpNode("m0", master, false, false), []corev1.Node{cpNode("m1", master, true, true)}, false, "m1"},
		{"cordoned by someone else does not block (upstream weakness)", cpNode("cp0", cp, false, false), []corev1.Node{cpNode("cp1", cp, true, false)}, true, ""},
		{"our annotation on a schedulable node does not block", cpNode("cp0", cp, false, false), []corev1.Node{cpNode("cp1", cp, false, true)}, true, ""},
		{"a worker drained by us does not block", cpNode("cp0", cp, false, false), []corev1.Node{cpNode("w1", "", true, true)}, true, ""},
		{"already being drained by us continues", cpNode("cp0", cp, true, true), []corev1.Node{cpNode("cp1", cp, true, true)}, true, ""},
		{"the node itself in the list is ignored", cpNode("cp0", cp, false, false), []corev1.Node{cpNode("cp0", cp, true, true)}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Every annotated node's Machine exists and is being deleted.
			active := map[string]bool{}
			for _, n := range append([]corev1.Node{tt.node}, tt.others...) {
				if v, ok := n.Annotations[DrainingAnnotation]; ok {
					active[v] = true
				}
			}
			got, blocker := controlPlaneDrainAllowed(&tt.node, tt.others, active)
			if got != tt.want || blocker != tt.wantBlock {
				t.Errorf("got (%v, %q), want (%v, %q)", got, blocker, tt.want, tt.wantBlock)
			}
		})
	}
}

// A DrainingAnnotation whose Machine is gone or not being deleted (not in
// activeOwners) is stale: the node does not block other control-plane drains.
func TestControlPlaneDrainAllowedStaleAnnotation(t *testing.T) {
	const cp = ControlPlaneNodeRoleLabel
	deleting := cpNode("cp2", cp, true, true)
	deletingNode := cpNode("cp3", cp, true, true)
	deletingNode.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	tests := []struct {
		name      string
		node      corev1.Node
		others    []corev1.Node
		active    map[string]bool
		want      bool
		wantBlock string
	}{
		{"stale annotation does not block", cpNode("cp0", cp, false, false), []corev1.Node{cpNode("cp1", cp, true, true)}, nil, true, ""},
		{"owner not deleting does not block", cpNode("cp0", cp, false, false), []corev1.Node{cpNode("cp1", cp, true, true)}, map[string]bool{"ns/cp1": false}, true, ""},
		{"active owner blocks, stale one ignored", cpNode("cp0", cp, false, false), []corev1.Node{cpNode("cp1", cp, true, true), deleting}, map[string]bool{"ns/cp2": true}, false, "cp2"},
		{"a node being deleted does not block", cpNode("cp0", cp, false, false), []corev1.Node{deletingNode}, map[string]bool{"ns/cp3": true}, true, ""},
		// The node carries a stale annotation of its own: it must wait like
		// any node not being drained.
		{"own stale annotation does not bypass the rule", cpNode("cp0", cp, true, true), []corev1.Node{deleting}, map[string]bool{"ns/cp2": true}, false, "cp2"},
		{"own active annotation continues", cpNode("cp0", cp, true, true), []corev1.Node{deleting}, map[string]bool{"ns/cp0": true, "ns/cp2": true}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, blocker := controlPlaneDrainAllowed(&tt.node, tt.others, tt.active)
			if got != tt.want || blocker != tt.wantBlock {
				t.Errorf("got (%v, %q), want (%v, %q)", got, blocker, tt.want, tt.wantBlock)
			}
		})
	}
}

func TestControlPlaneDrainEnded(t *testing.T) {
	const cp = ControlPlaneNodeRoleLabel
	drained := cpNode("cp1", cp, true, true)
	uncordoned := cpNode("cp1", cp, false, true)
	unannotated := cpNode("cp1", cp, true, false)
	deleting := cpNode("cp1", cp, true, true)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	worker := cpNode("w1", "", true, true)
	tests := []struct {
		name     string
		old, new *corev1.Node
		want     bool
	}{
		{"deleted", &drained, nil, true},
		{"uncordoned", &drained, &uncordoned, true},
		{"annotation removed", &drained, &unannotated, true},
		{"being deleted", &drained, &deleting, true},
		{"still drained", &drained, &drained, false},
		{"cordoned now (drain starts)", &uncordoned, &drained, false},
		{"never ours, deleted", &unannotated, nil, false},
		{"worker deleted", &worker, nil, false},
		{"deletion already seen", &deleting, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := controlPlaneDrainEnded(tt.old, tt.new); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestWaitingForControlPlaneDrain(t *testing.T) {
	now := metav1.Now()
	cond := func(status corev1.ConditionStatus, reason, msg string) []machinev1beta1.Condition {
		return []machinev1beta1.Condition{{Type: DrainedCondition, Status: status, Reason: reason, Message: msg}}
	}
	wait := "waiting for control-plane node cp-a to finish draining"
	tests := []struct {
		name     string
		deleting bool
		conds    []machinev1beta1.Condition
		want     bool
	}{
		{"waiting", true, cond(corev1.ConditionFalse, ReasonWaitingForControlPlaneDrain, wait), true},
		{"waiting, whatever the message says", true, cond(corev1.ConditionFalse, ReasonWaitingForControlPlaneDrain, "something else"), true},
		{"a message alone does not count", true, cond(corev1.ConditionFalse, ReasonDrainInProgress, wait), false},
		{"blocked by a hook", true, cond(corev1.ConditionFalse, ReasonDrainBlocked, "blocked by pre-drain hook(s): x (owner y)"), false},
		{"draining", true, cond(corev1.ConditionFalse, ReasonDrainInProgress, "draining node cp-b"), false},
		{"drained", true, cond(corev1.ConditionTrue, ReasonDrained, "node cp-b drained"), false},
		{"no condition", true, nil, false},
		{"not deleting", false, cond(corev1.ConditionFalse, ReasonWaitingForControlPlaneDrain, wait), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &machinev1beta1.Machine{}
			if tt.deleting {
				m.DeletionTimestamp = &now
			}
			m.Status.Conditions = tt.conds
			if got := waitingForControlPlaneDrain(m); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNodeUnreachable(t *testing.T) {
	for _, tt := range []struct {
		status corev1.ConditionStatus
		want   bool
	}{{corev1.ConditionTrue, false}, {corev1.ConditionFalse, false}, {corev1.ConditionUnknown, true}, {"", false}} {
		n := &corev1.Node{}
		if tt.status != "" {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionUnknown}, {Type: corev1.NodeReady, Status: tt.status}}
		}
		if got := nodeUnreachable(n); got != tt.want {
			t.Errorf("Ready=%q: unreachable = %v, want %v", tt.status, got, tt.want)
		}
	}
}

func TestRequeueOrError(t *testing.T) {
	ra := provider.RequeueAfter(7*time.Second, "booting")
	for _, err := range []error{ra, fmt.Errorf("once: %w", ra), fmt.Errorf("twice: %w", fmt.Errorf("once: %w", ra))} {
		res, got := requeueOrError(err)
		if got != nil || res.RequeueAfter != 7*time.Second {
			t.Errorf("%v: got (%+v, %v), want requeue after 7s", err, res, got)
		}
	}
	plain := errors.New("boom")
	res, got := requeueOrError(plain)
	if got != plain || res.RequeueAfter != 0 { //nolint:errorlint // the very error, not one wrapping it
		t.Errorf("plain error: got (%+v, %v)", res, got)
	}
	if !provider.IsInvalidConfiguration(fmt.Errorf("w: %w", fmt.Errorf("w: %w", provider.InvalidConfiguration("x")))) {
		t.Error("doubly wrapped InvalidConfiguration not detected")
	}
}

func TestUnknownInstanceState(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"instanceState":"running","x":1}`, `{"instanceState":"Unknown","x":1}`},
		{`{"vmState":"Running"}`, `{"vmState":"Unknown"}`},
		{`{"other":"running"}`, `{"other":"running"}`},
		{`not json`, `not json`},
	}
	for _, tt := range tests {
		got := unknownInstanceState(&runtime.RawExtension{Raw: []byte(tt.in)})
		if string(got.Raw) != tt.want {
			t.Errorf("%s: got %s, want %s", tt.in, got.Raw, tt.want)
		}
	}
	if unknownInstanceState(nil) != nil {
		t.Error("nil must stay nil")
	}
}

func TestOnlyOwnStatusChanged(t *testing.T) {
	base := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", ResourceVersion: "1"}}
	own := base.DeepCopy()
	own.ResourceVersion = "2"
	own.Status.Phase = ptr.To("Running")
	own.Status.Conditions = []machinev1beta1.Condition{{Type: DrainedCondition}}
	own.Status.LastUpdated = &metav1.Time{Time: time.Now()}
	if !onlyOwnStatusChanged(base, own) {
		t.Error("own status change must be ignored")
	}
	started := own.DeepCopy()
	started.Annotations = map[string]string{DrainStartedAnnotation: "2026-01-01T00:00:00Z"}
	if !onlyOwnStatusChanged(base, started) {
		t.Error("the controller's own drain start annotation must be ignored")
	}
	annotated := base.DeepCopy()
	annotated.Annotations = map[string]string{NodeDrainTimeoutAnnotation: "1s"}
	annotatedStarted := annotated.DeepCopy()
	annotatedStarted.Annotations[DrainStartedAnnotation] = "2026-01-01T00:00:00Z"
	if !onlyOwnStatusChanged(annotated, annotatedStarted) {
		t.Error("the drain start annotation next to others must be ignored")
	}
	// Breaks if: our own providerID patch woke us: the pass after Create would write Provisioned before
	// nodelink's nodeRef (two status writes where one does).
	withID := base.DeepCopy()
	withID.Spec.ProviderID = ptr.To("p")
	if !onlyOwnStatusChanged(base, withID) {
		t.Error("the controller's own providerID patch must be ignored")
	}
	for name, mutate := range map[string]func(*machinev1beta1.Machine){
		"nodeRef":     func(m *machinev1beta1.Machine) { m.Status.NodeRef = &corev1.ObjectReference{Name: "n"} },
		"spec":        func(m *machinev1beta1.Machine) { m.Spec.LifecycleHooks.PreDrain = hooks("h") },
		"annotation":  func(m *machinev1beta1.Machine) { m.Annotations = map[string]string{NodeDrainTimeoutAnnotation: "1s"} },
		"deletion":    func(m *machinev1beta1.Machine) { m.DeletionTimestamp = &metav1.Time{Time: time.Now()} },
		"finalizers":  func(m *machinev1beta1.Machine) { m.Finalizers = []string{"x"} },
		"labels":      func(m *machinev1beta1.Machine) { m.Labels = map[string]string{"a": "b"} },
		"authoritive": func(m *machinev1beta1.Machine) { m.Status.AuthoritativeAPI = machinev1beta1.MachineAuthorityClusterAPI },
	} {
		changed := own.DeepCopy()
		mutate(changed)
		if onlyOwnStatusChanged(base, changed) {
			t.Errorf("%s change must wake the controller", name)
		}
	}
}

func TestNodeChangeMatters(t *testing.T) {
	ready := func(s corev1.ConditionStatus) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: s}}}}
	}
	a := ready(corev1.ConditionTrue)
	hb := a.DeepCopy()
	hb.ResourceVersion = "9"
	hb.Status.Conditions[0].LastHeartbeatTime = metav1.Now()
	if nodeChangeMatters(a, hb) {
		t.Error("a heartbeat must not wake the controller")
	}
	if !nodeChangeMatters(a, ready(corev1.ConditionUnknown)) {
		t.Error("Ready→Unknown must wake the controller")
	}
	cordoned := a.DeepCopy()
	cordoned.Spec.Unschedulable = true
	if !nodeChangeMatters(a, cordoned) {
		t.Error("cordon must wake the controller")
	}
	deleting := a.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	if !nodeChangeMatters(a, deleting) {
		t.Error("node deletion must wake the controller")
	}
}

func TestSameJSON(t *testing.T) {
	raw := func(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }
	tests := []struct {
		a, b *runtime.RawExtension
		want bool
	}{
		{nil, nil, true},
		{raw(`{}`), nil, false},
		{raw(`{"kind":"S","apiVersion":"v1","n":1}`), raw(`{"apiVersion":"v1","kind":"S","n":1}`), true},
		{raw(`{"n":1}`), raw(`{"n":2}`), false},
		{raw(`not json`), raw(`not json`), true},
		{raw(`not json`), raw(`{}`), false},
	}
	for i, tt := range tests {
		if got := sameJSON(tt.a, tt.b); got != tt.want {
			t.Errorf("case %d: sameJSON = %v, want %v", i, got, tt.want)
		}
	}
}

// TestPhaseAfterCreate: a Create that reported the instance (providerID or
// addresses) takes the Machine to Provisioned (Running with a nodeRef) in the
// same status write; otherwise it stays Provisioning. Breaks if:
// phaseAfterCreate returned Provisioning whatever the provider reported (a
// second status write per Machine).
func TestPhaseAfterCreate(t *testing.T) {
	for _, tc := range []struct {
		provisioned, nodeRef bool
		wantPhase            string
		wantExists           bool
	}{
		{false, false, machinev1beta1.PhaseProvisioning, false},
		{false, true, machinev1beta1.PhaseProvisioning, false},
		{true, false, machinev1beta1.PhaseProvisioned, true},
		{true, true, machinev1beta1.PhaseRunning, true},
	} {
		phase, exists := phaseAfterCreate(tc.provisioned, tc.nodeRef)
		if phase != tc.wantPhase || exists != tc.wantExists {
			t.Errorf("phaseAfterCreate(provisioned=%v, nodeRef=%v) = %q, %v; want %q, %v", tc.provisioned, tc.nodeRef, phase, exists, tc.wantPhase, tc.wantExists)
		}
	}
}

// TestDecideProviderError: a terminal failure fails the Machine from any operation; InvalidConfiguration
// fails it from Create, and from Exists only before it was provisioned; from Update it is a rejected
// configuration. Breaks if: the terminal check comes after the InvalidConfiguration or wait cases, or
// a provisioned Machine fails on an InvalidConfiguration from Exists.
func TestDecideProviderError(t *testing.T) {
	invalid := fmt.Errorf("decoding: %w", provider.InvalidConfiguration("spec.providerSpec.value: bad"))
	wait := provider.RequeueAfter(time.Second, "booting")
	plain := errors.New("API unavailable")
	terminal := func(err error) error {
		m := &machinev1beta1.Machine{}
		return providerResult(m, provider.Failed(m, err))
	}
	tests := []struct {
		op          string
		err         error
		provisioned bool
		want        providerVerdict
	}{
		{OperationExists, nil, false, verdictOK},
		{OperationExists, plain, false, verdictRetry},
		{OperationExists, wait, false, verdictWait},
		{OperationExists, invalid, false, verdictFail},
		{OperationExists, invalid, true, verdictRetry},
		{OperationExists, terminal(plain), true, verdictFail},
		{OperationExists, terminal(wait), false, verdictFail},
		{OperationCreate, invalid, false, verdictFail},
		{OperationCreate, wait, false, verdictWait},
		{OperationCreate, plain, false, verdictRetry},
		{OperationCreate, terminal(plain), false, verdictFail},
		{OperationUpdate, nil, true, verdictOK},
		{OperationUpdate, invalid, true, verdictRejectedUpdate},
		{OperationUpdate, wait, true, verdictWait},
		{OperationUpdate, plain, true, verdictRetry},
		{OperationUpdate, terminal(plain), true, verdictFail},
		{OperationUpdate, terminal(invalid), true, verdictFail},
		// A Failed phase without an error is no failure (OpenShift ignores it too).
		{OperationUpdate, providerResult(&machinev1beta1.Machine{Status: machinev1beta1.MachineStatus{Phase: ptr.To(machinev1beta1.PhaseFailed)}}, nil), true, verdictOK},
	}
	for _, tt := range tests {
		if got := decideProviderError(tt.op, tt.err, tt.provisioned); got != tt.want {
			t.Errorf("%s(%v, provisioned %v) = %d, want %d", tt.op, tt.err, tt.provisioned, got, tt.want)
		}
	}
}
