package machinehealthcheck

import (
	"fmt"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func testMachine(mutate ...func(*machinev1beta1.Machine)) *machinev1beta1.Machine {
	m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m", CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))}}
	m.Status.NodeRef = &corev1.ObjectReference{Kind: "Node", Name: "n"}
	for _, f := range mutate {
		f(m)
	}
	return m
}

func testNode(conds ...corev1.NodeCondition) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Conditions: conds}}
}

func cond(t corev1.NodeConditionType, s corev1.ConditionStatus, since time.Time) corev1.NodeCondition {
	return corev1.NodeCondition{Type: t, Status: s, LastTransitionTime: metav1.NewTime(since)}
}

func TestAssess(t *testing.T) {
	params := healthParams{
		conditions: []machinev1beta1.UnhealthyCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Timeout: metav1.Duration{Duration: 5 * time.Minute}},
			{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Timeout: metav1.Duration{Duration: 5 * time.Minute}},
			{Type: "DiskPressure", Status: corev1.ConditionTrue, Timeout: metav1.Duration{Duration: 2 * time.Minute}},
		},
		startupTimeout: 10 * time.Minute,
	}
	lastUpdatedClock := params
	lastUpdatedClock.startupFrom = StartupFromLastUpdated
	noNode := func(created time.Time) func(*machinev1beta1.Machine) {
		return func(m *machinev1beta1.Machine) {
			m.Status.NodeRef = nil
			m.CreationTimestamp = metav1.NewTime(created)
			// An old lastUpdated must not matter: the timer runs from creation.
			m.Status.LastUpdated = ptr.To(metav1.NewTime(t0.Add(-time.Hour)))
		}
	}
	tests := []struct {
		name        string
		machine     *machinev1beta1.Machine
		node        *corev1.Node
		params      *healthParams
		want        Health
		wantRecheck time.Duration
		wantReason  string
	}{
		{name: "healthy", machine: testMachine(), node: testNode(cond(corev1.NodeReady, corev1.ConditionTrue, t0.Add(-time.Hour))), want: Healthy},
		{name: "no conditions at all is healthy", machine: testMachine(), node: testNode(), want: Healthy},
		{name: "phase Failed", machine: testMachine(func(m *machinev1beta1.Machine) { m.Status.Phase = ptr.To(machinev1beta1.PhaseFailed) }),
			node: testNode(), want: Unhealthy, wantReason: "Failed"},
		{name: "node gone", machine: testMachine(), node: nil, want: Unhealthy, wantReason: "gone"},
		{name: "Ready=False past timeout", machine: testMachine(),
			node: testNode(cond(corev1.NodeReady, corev1.ConditionFalse, t0.Add(-6*time.Minute))), want: Unhealthy, wantReason: "Ready=False"},
		{name: "Ready=Unknown exactly at timeout", machine: testMachine(),
			node: testNode(cond(corev1.NodeReady, corev1.ConditionUnknown, t0.Add(-5*time.Minute))), want: Unhealthy},
		{name: "Ready=False within timeout", machine: testMachine(),
			node: testNode(cond(corev1.NodeReady, corev1.ConditionFalse, t0.Add(-2*time.Minute))), want: Suspect, wantRecheck: 3 * time.Minute},
		{name: "two conditions within timeout: earliest expiry", machine: testMachine(),
			node: testNode(cond(corev1.NodeReady, corev1.ConditionFalse, t0.Add(-time.Minute)), cond("DiskPressure", corev1.ConditionTrue, t0.Add(-90*time.Second))),
			want: Suspect, wantRecheck: 30 * time.Second},
		{name: "other condition past its own timeout", machine: testMachine(),
			node: testNode(cond(corev1.NodeReady, corev1.ConditionTrue, t0.Add(-time.Hour)), cond("DiskPressure", corev1.ConditionTrue, t0.Add(-3*time.Minute))),
			want: Unhealthy, wantReason: "DiskPressure=True"},
		{name: "no node, inside startup window from creation", machine: testMachine(noNode(t0.Add(-4 * time.Minute))),
			want: Starting, wantRecheck: 6 * time.Minute},
		{name: "no node, past startup timeout from creation", machine: testMachine(noNode(t0.Add(-11 * time.Minute))),
			want: Unhealthy, wantReason: "no Node"},
		{name: "no node, lastUpdated recent but created long ago", machine: testMachine(noNode(t0.Add(-11*time.Minute)), func(m *machinev1beta1.Machine) {
			m.Status.LastUpdated = ptr.To(metav1.NewTime(t0))
		}), want: Unhealthy},
		{name: "lastUpdated clock: updated 4m ago, created long ago", machine: testMachine(noNode(t0.Add(-time.Hour)), func(m *machinev1beta1.Machine) {
			m.Status.LastUpdated = ptr.To(metav1.NewTime(t0.Add(-4 * time.Minute)))
		}), params: &lastUpdatedClock, want: Starting, wantRecheck: 6 * time.Minute},
		{name: "lastUpdated clock: updated 11m ago, created just now", machine: testMachine(noNode(t0), func(m *machinev1beta1.Machine) {
			m.Status.LastUpdated = ptr.To(metav1.NewTime(t0.Add(-11 * time.Minute)))
		}), params: &lastUpdatedClock, want: Unhealthy, wantReason: "last status update"},
		{name: "lastUpdated clock: never updated, created long ago", machine: testMachine(noNode(t0.Add(-time.Hour)), func(m *machinev1beta1.Machine) {
			m.Status.LastUpdated = nil
		}), params: &lastUpdatedClock, want: Starting, wantReason: "lastUpdated not set"},
		{name: "no node, startup timeout disabled", machine: testMachine(noNode(t0.Add(-24 * time.Hour))),
			params: &healthParams{conditions: params.conditions}, want: Starting},
		{name: "deleting", machine: testMachine(func(m *machinev1beta1.Machine) {
			m.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
			m.Status.Phase = ptr.To(machinev1beta1.PhaseFailed)
		}), want: Deleting},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := params
			if tc.params != nil {
				p = *tc.params
			}
			got := assess(tc.machine, tc.node, p, t0)
			if got.Health != tc.want || got.Recheck != tc.wantRecheck {
				t.Errorf("assess = %v recheck %v (%q), want %v recheck %v", got.Health, got.Recheck, got.Reason, tc.want, tc.wantRecheck)
			}
			if !strings.Contains(got.Reason, tc.wantReason) {
				t.Errorf("reason %q does not mention %q", got.Reason, tc.wantReason)
			}
		})
	}
}

// TestNodeStartupTimeoutDefault: a Machine of an MHC without
// nodeStartupTimeout waits 10 minutes (OpenShift's default) for its Node;
// "0" waits forever.
func TestNodeStartupTimeoutDefault(t *testing.T) {
	noNode := testMachine(func(m *machinev1beta1.Machine) {
		m.Status.NodeRef = nil
		m.CreationTimestamp = metav1.NewTime(t0)
	})
	mhc := &machinev1beta1.MachineHealthCheck{}
	if v := assess(noNode, nil, paramsOf(mhc, StartupFromCreation), t0.Add(10*time.Minute-time.Second)); v.Health != Starting || v.Recheck != time.Second {
		t.Errorf("at 9m59s: %v recheck %v (%q), want Starting recheck 1s", v.Health, v.Recheck, v.Reason)
	}
	if v := assess(noNode, nil, paramsOf(mhc, StartupFromCreation), t0.Add(10*time.Minute)); v.Health != Unhealthy || v.Cause != CauseNodeStartupTimeout {
		t.Errorf("at 10m: %v (%q), want Unhealthy by nodeStartupTimeout", v.Health, v.Reason)
	}
	mhc.Spec.NodeStartupTimeout = &metav1.Duration{}
	if v := assess(noNode, nil, paramsOf(mhc, StartupFromCreation), t0.Add(24*time.Hour)); v.Health != Starting || v.Recheck != 0 {
		t.Errorf("\"0\" after a day: %v recheck %v (%q), want Starting, no recheck", v.Health, v.Recheck, v.Reason)
	}
}

func TestMaxUnhealthyValue(t *testing.T) {
	tests := []struct {
		v       *intstr.IntOrString
		total   int
		want    int
		wantErr bool
	}{
		{v: nil, total: 7, want: 7},
		{v: ptr.To(intstr.FromInt32(3)), total: 7, want: 3},
		{v: ptr.To(intstr.FromInt32(-1)), total: 7, want: 0},
		{v: ptr.To(intstr.FromString("40%")), total: 5, want: 2},
		{v: ptr.To(intstr.FromString("60%")), total: 7, want: 4},
		{v: ptr.To(intstr.FromString("100%")), total: 3, want: 3},
		{v: ptr.To(intstr.FromString("0%")), total: 3, want: 0},
		{v: ptr.To(intstr.FromString("2")), total: 7, want: 2},
		{v: ptr.To(intstr.FromString("a")), wantErr: true},
		{v: ptr.To(intstr.FromString("a%")), wantErr: true},
		{v: ptr.To(intstr.FromString("1%0")), wantErr: true},
	}
	for _, tc := range tests {
		got, err := maxUnhealthyValue(tc.v, tc.total)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("maxUnhealthyValue(%v, %d) = %d, %v; want %d (error %v)", tc.v, tc.total, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestSummarize: OpenShift's counts (expected = every target, healthy = Healthy and
// not in remediation), and maxUnhealthy bounds the Unhealthy verdicts plus the Machines
// under remediation already (deleting, external), so at most maxUnhealthy are at once.
// Breaks if: Deleting were skipped (the old rule), External did not count, a deleting
// Machine were not expected, or starting/suspect Machines counted (DESIGN.md §3).
func TestSummarize(t *testing.T) {
	v := func(h Health, recheck time.Duration) verdict { return verdict{Health: h, Recheck: recheck} }
	ext := func(h Health) verdict { return verdict{Health: h, External: true} }
	tests := []struct {
		name     string
		vs       []verdict
		max      *intstr.IntOrString
		want     summary
		wantErr  bool
		wantNext time.Duration
	}{
		{name: "all healthy, default 100%", vs: []verdict{v(Healthy, 0), v(Healthy, 0)},
			want: summary{Expected: 2, Healthy: 2, MaxUnhealthy: 2, Allowed: true, RemediationsAllowed: 2}},
		{name: "starting and suspect machines do not count as unhealthy",
			vs:   []verdict{v(Healthy, 0), v(Starting, 4*time.Minute), v(Starting, 0), v(Suspect, time.Minute), v(Unhealthy, 0)},
			max:  ptr.To(intstr.FromInt32(1)),
			want: summary{Expected: 5, Healthy: 1, Unhealthy: 1, MaxUnhealthy: 1, Allowed: true, Requeue: time.Minute}},
		{name: "deleting machines are expected and count as unhealthy",
			vs:   []verdict{v(Healthy, 0), v(Deleting, 0), v(Deleting, 0)},
			max:  ptr.To(intstr.FromInt32(2)),
			want: summary{Expected: 3, Healthy: 1, Unhealthy: 2, Deleting: 2, MaxUnhealthy: 2, Allowed: true}},
		{name: "a spreading failure: 2 of 6 deleting, 2 more unhealthy, maxUnhealthy 2",
			vs:   []verdict{v(Deleting, 0), v(Deleting, 0), v(Unhealthy, 0), v(Unhealthy, 0), v(Healthy, 0), v(Healthy, 0)},
			max:  ptr.To(intstr.FromInt32(2)),
			want: summary{Expected: 6, Healthy: 2, Unhealthy: 4, Deleting: 2, MaxUnhealthy: 2}},
		{name: "one deleting leaves room for one more",
			vs:   []verdict{v(Deleting, 0), v(Unhealthy, 0), v(Healthy, 0), v(Healthy, 0), v(Healthy, 0), v(Healthy, 0)},
			max:  ptr.To(intstr.FromInt32(3)),
			want: summary{Expected: 6, Healthy: 4, Unhealthy: 2, Deleting: 1, MaxUnhealthy: 3, Allowed: true, RemediationsAllowed: 1}},
		{name: "deleting machines are part of a percentage's total",
			vs:   []verdict{v(Deleting, 0), v(Healthy, 0), v(Healthy, 0), v(Healthy, 0), v(Healthy, 0)},
			max:  ptr.To(intstr.FromString("40%")),
			want: summary{Expected: 5, Healthy: 4, Unhealthy: 1, Deleting: 1, MaxUnhealthy: 2, Allowed: true, RemediationsAllowed: 1}},
		{name: "external remediation in flight counts whatever the verdict, and is not healthy",
			vs:   []verdict{ext(Healthy), ext(Suspect), ext(Unhealthy), v(Unhealthy, 0), v(Healthy, 0)},
			max:  ptr.To(intstr.FromInt32(3)),
			want: summary{Expected: 5, Healthy: 1, Unhealthy: 4, External: 3, MaxUnhealthy: 3}},
		{name: "a deleting machine in external remediation counts once",
			vs:   []verdict{{Health: Deleting, External: true}, v(Healthy, 0)},
			max:  ptr.To(intstr.FromInt32(1)),
			want: summary{Expected: 2, Healthy: 1, Unhealthy: 1, Deleting: 1, MaxUnhealthy: 1, Allowed: true}},
		{name: "too many unhealthy, int", vs: []verdict{v(Unhealthy, 0), v(Unhealthy, 0), v(Healthy, 0), v(Suspect, 90*time.Second)},
			max:  ptr.To(intstr.FromInt32(1)),
			want: summary{Expected: 4, Healthy: 1, Unhealthy: 2, MaxUnhealthy: 1, Requeue: 90 * time.Second}},
		{name: "percent rounds down: 40% of 4 = 1", vs: []verdict{v(Unhealthy, 0), v(Healthy, 0), v(Healthy, 0), v(Healthy, 0)},
			max:  ptr.To(intstr.FromString("40%")),
			want: summary{Expected: 4, Healthy: 3, Unhealthy: 1, MaxUnhealthy: 1, Allowed: true}},
		{name: "percent rounds down: 40% of 4 with 2 unhealthy", vs: []verdict{v(Unhealthy, 0), v(Unhealthy, 0), v(Healthy, 0), v(Healthy, 0)},
			max:  ptr.To(intstr.FromString("40%")),
			want: summary{Expected: 4, Healthy: 2, Unhealthy: 2, MaxUnhealthy: 1}},
		{name: "remediationsAllowed", vs: []verdict{v(Unhealthy, 0), v(Healthy, 0), v(Healthy, 0), v(Healthy, 0)},
			max:  ptr.To(intstr.FromInt32(3)),
			want: summary{Expected: 4, Healthy: 3, Unhealthy: 1, MaxUnhealthy: 3, Allowed: true, RemediationsAllowed: 2}},
		{name: "invalid maxUnhealthy", vs: []verdict{v(Healthy, 0)}, max: ptr.To(intstr.FromString("x")), wantErr: true,
			want: summary{Expected: 1, Healthy: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := summarize(tc.vs, tc.max)
			if (got.MaxErr != nil) != tc.wantErr {
				t.Fatalf("MaxErr = %v", got.MaxErr)
			}
			got.MaxErr = nil
			if got != tc.want {
				t.Errorf("summarize = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestUnderExternalRemediation: the baremetal annotation counts until the provider
// removes it (OpenShift's rule); a request counts until the Machine is Healthy again.
// Breaks if: the annotation counted only while unhealthy, or a healthy Machine's
// leftover request (deleted in the same pass) counted.
func TestUnderExternalRemediation(t *testing.T) {
	annotated := testMachine(func(m *machinev1beta1.Machine) {
		m.Annotations = map[string]string{ExternalRemediationAnnotation: ""}
	})
	plain := testMachine()
	tests := []struct {
		name       string
		m          *machinev1beta1.Machine
		h          Health
		hasRequest bool
		want       bool
	}{
		{"annotated, healthy again", annotated, Healthy, false, true},
		{"annotated, unhealthy", annotated, Unhealthy, false, true},
		{"request, node rebooting (suspect)", plain, Suspect, true, true},
		{"request, no node yet", plain, Starting, true, true},
		{"request, unhealthy", plain, Unhealthy, true, true},
		{"request, healthy again", plain, Healthy, true, false},
		{"nothing", plain, Unhealthy, false, false},
	}
	for _, tc := range tests {
		if got := underExternalRemediation(tc.m, tc.h, tc.hasRequest); got != tc.want {
			t.Errorf("%s: underExternalRemediation = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNextRequeue(t *testing.T) {
	if d := summarize(nil, nil).Requeue; d != 0 {
		t.Errorf("no verdicts: %v", d)
	}
	vs := []verdict{{Health: Healthy}, {Health: Unhealthy}, {Health: Starting, Recheck: 9 * time.Minute}, {Health: Suspect, Recheck: 2 * time.Second}}
	if d := summarize(vs, nil).Requeue; d != 2*time.Second {
		t.Errorf("Requeue = %v, want 2s", d)
	}
	// Nothing will change by time alone: no requeue at all (no polling).
	if d := summarize([]verdict{{Health: Unhealthy}, {Health: Unhealthy}}, nil).Requeue; d != 0 {
		t.Errorf("only unhealthy: %v, want 0", d)
	}
}

// TestRestrictedMessage: the message says how many count, of what, and why.
// Breaks if: the deleting or external counts were left out of the message.
func TestRestrictedMessage(t *testing.T) {
	s := summary{Expected: 5, Unhealthy: 3, Deleting: 2, External: 1, MaxUnhealthy: 2}
	got := restrictedMessage(s, ptr.To(intstr.FromString("40%")))
	for _, want := range []string{"3 of 5", "2 being deleted", "1 in external remediation", "40%", "= 2"} {
		if !strings.Contains(got, want) {
			t.Errorf("message %q lacks %q", got, want)
		}
	}
}

// TestDecideRemediation: OpenShift's order (template, then
// external-baremetal for a Machine that is not Failed, then deletion of a
// Machine with a controller owner), after this project's exclusions;
// control-plane Machines are not special.
func TestDecideRemediation(t *testing.T) {
	owned := func(m *machinev1beta1.Machine) {
		m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "machine.openshift.io/v1beta1", Kind: "MachineSet", Name: "ms", UID: "ms", Controller: ptr.To(true)}}
	}
	failed := func(m *machinev1beta1.Machine) { m.Status.Phase = ptr.To(machinev1beta1.PhaseFailed) }
	master := func(m *machinev1beta1.Machine) {
		m.Labels = map[string]string{"machine.openshift.io/cluster-api-machine-role": "master", "machine.openshift.io/cluster-api-machine-type": "master"}
	}
	annotated := func(m *machinev1beta1.Machine) { m.Annotations = map[string]string{ExternalRemediationAnnotation: ""} }
	plain := &machinev1beta1.MachineHealthCheck{}
	baremetal := &machinev1beta1.MachineHealthCheck{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{RemediationStrategyAnnotation: "external-baremetal"}}}
	otherStrategy := &machinev1beta1.MachineHealthCheck{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{RemediationStrategyAnnotation: "reboot"}}}
	template := &machinev1beta1.MachineHealthCheck{Spec: machinev1beta1.MachineHealthCheckSpec{RemediationTemplate: &corev1.ObjectReference{Kind: "Metal3RemediationTemplate", Name: "t"}}}
	bothWays := template.DeepCopy()
	bothWays.Annotations = baremetal.Annotations
	maintained := testNode()
	maintained.Spec.Taints = []corev1.Taint{{Key: NodeMaintenanceTaint, Effect: corev1.TaintEffectNoSchedule}}
	for _, tc := range []struct {
		name    string
		mhc     *machinev1beta1.MachineHealthCheck
		machine *machinev1beta1.Machine
		node    *corev1.Node
		want    remediation
	}{
		{"owned: deleted", plain, testMachine(owned), testNode(), remediateDelete},
		{"no controller owner: skipped", plain, testMachine(), testNode(), remediateSkipNoController},
		{"control plane with an owner: deleted like any other", plain, testMachine(owned, master), testNode(), remediateDelete},
		{"control plane without an owner: skipped", plain, testMachine(master), nil, remediateSkipNoController},
		{"Node under maintenance: left alone", plain, testMachine(owned), maintained, remediateSkipExcluded},
		{"template: request", template, testMachine(), testNode(), remediateRequest},
		{"template wins over external-baremetal", bothWays, testMachine(owned), testNode(), remediateRequest},
		{"external-baremetal: annotate, owner or not", baremetal, testMachine(), nil, remediateAnnotate},
		{"external-baremetal, Machine without a Node: annotate", baremetal, testMachine(func(m *machinev1beta1.Machine) { m.Status.NodeRef = nil }), nil, remediateAnnotate},
		{"external-baremetal, control plane: annotate", baremetal, testMachine(master), testNode(), remediateAnnotate},
		{"external-baremetal, already annotated: nothing", baremetal, testMachine(owned, annotated), nil, remediateAnnotated},
		{"external-baremetal, Failed: deleted", baremetal, testMachine(owned, failed), testNode(), remediateDelete},
		{"external-baremetal, Failed, no owner: skipped", baremetal, testMachine(failed), testNode(), remediateSkipNoController},
		{"another strategy value: deleted", otherStrategy, testMachine(owned), testNode(), remediateDelete},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decideRemediation(tc.mhc, tc.machine, tc.node); got != tc.want {
				t.Errorf("decideRemediation = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestSameNode(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "u1"}}
	for _, tc := range []struct {
		uid  types.UID
		want bool
	}{{"u1", true}, {"u0", false}, {"", true}} {
		if got := sameNode(&corev1.ObjectReference{Name: "n", UID: tc.uid}, n); got != tc.want {
			t.Errorf("sameNode(ref uid %q, node uid u1) = %v, want %v", tc.uid, got, tc.want)
		}
	}
}

func TestExcludedNode(t *testing.T) {
	n := testNode()
	if excludedNode(n) != "" || excludedNode(nil) != "" {
		t.Error("plain node excluded")
	}
	n.Labels = map[string]string{ExcludeFromRemediationLabel: "false"}
	if excludedNode(n) != "" {
		t.Error("label false excludes")
	}
	n.Labels[ExcludeFromRemediationLabel] = "true"
	if excludedNode(n) == "" {
		t.Error("label true does not exclude")
	}
	n = testNode()
	n.Spec.Taints = []corev1.Taint{{Key: NodeMaintenanceTaint, Effect: corev1.TaintEffectNoSchedule}}
	if excludedNode(n) == "" {
		t.Error("maintenance taint does not exclude")
	}
}

func TestRequestKind(t *testing.T) {
	if k, err := requestKind("Metal3RemediationTemplate"); err != nil || k != "Metal3Remediation" {
		t.Errorf("requestKind = %q, %v", k, err)
	}
	for _, bad := range []string{"Metal3Remediation", "Template", ""} {
		if _, err := requestKind(bad); err == nil {
			t.Errorf("requestKind(%q) accepted", bad)
		}
	}
}

func TestNodeChangeMatters(t *testing.T) {
	base := testNode(cond(corev1.NodeReady, corev1.ConditionTrue, t0))
	heartbeat := base.DeepCopy()
	heartbeat.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(t0.Add(time.Minute))
	heartbeat.ResourceVersion = "2"
	if nodeChangeMatters(base, heartbeat) {
		t.Error("heartbeat matters")
	}
	flip := base.DeepCopy()
	flip.Status.Conditions[0].Status = corev1.ConditionFalse
	labelled := base.DeepCopy()
	labelled.Labels = map[string]string{ExcludeFromRemediationLabel: "true"}
	tainted := base.DeepCopy()
	tainted.Spec.Taints = []corev1.Taint{{Key: NodeMaintenanceTaint, Effect: corev1.TaintEffectNoSchedule}}
	newCond := base.DeepCopy()
	newCond.Status.Conditions = append(newCond.Status.Conditions, cond("DiskPressure", corev1.ConditionTrue, t0))
	for name, n := range map[string]*corev1.Node{"status": flip, "label": labelled, "taint": tainted, "new condition": newCond} {
		if !nodeChangeMatters(base, n) {
			t.Errorf("%s change does not matter", name)
		}
	}
	m := testMachine()
	m2 := m.DeepCopy()
	m2.Status.LastUpdated = ptr.To(metav1.NewTime(t0))
	if machineChangeMatters(m, m2) {
		t.Error("lastUpdated matters")
	}
	lastUpdatedOnly := event.UpdateEvent{ObjectOld: m, ObjectNew: m2}
	if machinePredicate(StartupFromCreation).Update(lastUpdatedOnly) {
		t.Error("lastUpdated passes with the creation clock")
	}
	if !machinePredicate(StartupFromLastUpdated).Update(lastUpdatedOnly) {
		t.Error("lastUpdated does not pass with the lastUpdated clock")
	}
	m2.Status.Phase = ptr.To(machinev1beta1.PhaseFailed)
	if !machineChangeMatters(m, m2) {
		t.Error("phase change does not matter")
	}
	// The baremetal provider removing its annotation frees a place under maxUnhealthy.
	annotated := m.DeepCopy()
	annotated.Annotations = map[string]string{ExternalRemediationAnnotation: "", "other": "x"}
	otherAnnotation := annotated.DeepCopy()
	otherAnnotation.Annotations["other"] = "y"
	if machineChangeMatters(annotated, otherAnnotation) {
		t.Error("another annotation matters")
	}
	if !machineChangeMatters(annotated, m) {
		t.Errorf("removing %s does not matter", ExternalRemediationAnnotation)
	}
}

// setRestricted reports the short-circuit's transitions only, so
// RemediationRestricted is recorded once per transition.
func TestSetRestrictedReportsTransitions(t *testing.T) {
	r := NewReconciler(Options{})
	key := types.NamespacedName{Namespace: "ns", Name: "mhc"}
	for i, step := range []struct{ restricted, changed bool }{
		{false, false}, {true, true}, {true, false}, {false, true}, {false, false}, {true, true},
	} {
		if got := r.setRestricted(key, step.restricted); got != step.changed {
			t.Errorf("step %d: setRestricted(%v) = %v, want %v", i, step.restricted, got, step.changed)
		}
	}
}

func (h Health) String() string {
	if names := [...]string{"Healthy", "Starting", "Suspect", "Unhealthy", "Deleting"}; h >= 0 && int(h) < len(names) {
		return names[h]
	}
	return fmt.Sprintf("Health(%d)", int(h))
}
