package machinedeployment

import (
	"maps"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
)

// TestRollback: the template goes back to revision 1's; that set becomes
// the new one again (revision 3, history "1") instead of a new set.
func TestRollback(t *testing.T) {
	md := newMD("a", 3, oneU, zero)
	p := Decide(md, states(md,
		sst{v: "a", replicas: 0, revision: 1},
		sst{v: "b", age: 1, replicas: 3, revision: 2, avail: avail(3)}), t0)
	if p.Create != nil {
		t.Fatalf("created %s, want the old set reused", p.Create.Name)
	}
	if p.NewSet != "w-a" || !p.Rollback || p.Revision != "3" {
		t.Errorf("new set %q rollback %t revision %q; want w-a, true, 3", p.NewSet, p.Rollback, p.Revision)
	}
	a := p.Sets[0]
	if a.Annotations[mdv1beta1.RevisionAnnotation] != "3" || a.Annotations[mdv1beta1.RevisionHistoryAnnotation] != "1" {
		t.Errorf("w-a annotations %v, want revision 3 and revision-history 1", a.Annotations)
	}
	if got, want := sizes(p), map[string]int32{"w-a": 1, "w-b": 3}; !maps.Equal(got, want) {
		t.Errorf("sizes %v, want %v (the reused set grows by maxSurge)", got, want)
	}
	// A second rollback to it appends to the history.
	if got := appendHistory("1,4", "6"); got != "1,4,6" {
		t.Errorf("appendHistory = %q, want 1,4,6", got)
	}
	long := strings.Repeat("9", maxRevisionHistoryChars-1)
	if got := appendHistory(long, "7"); got != "7" {
		t.Errorf("appendHistory past the limit = %q, want the oldest dropped", got)
	}
}

// TestPaused: a paused MachineDeployment does not roll out a new template
// but still scales, and says so on Progressing (Unknown); resuming says
// so too.
func TestPaused(t *testing.T) {
	md := newMD("b", 5, oneU, zero)
	md.Spec.Paused = true
	p := Decide(md, states(md, sst{v: "a", replicas: 3, revision: 1, avail: avail(3),
		annot: map[string]string{mdv1beta1.DesiredReplicasAnnotation: "3"}}), t0)
	if p.Create != nil || p.NewSet != "" {
		t.Errorf("paused: created %v / new set %q, want none", p.Create, p.NewSet)
	}
	if got, want := sizes(p), map[string]int32{"w-a": 5}; !maps.Equal(got, want) {
		t.Errorf("paused scaling: sizes %v, want %v", got, want)
	}
	c := cond(p.Status, mdv1beta1.ProgressingCondition)
	if c.Status != corev1.ConditionUnknown || c.Reason != mdv1beta1.ReasonDeploymentPaused {
		t.Errorf("Progressing %s/%s, want Unknown/DeploymentPaused", c.Status, c.Reason)
	}
	if p.RequeueAfter != 0 {
		t.Errorf("paused: requeue after %s, want none (no deadline while paused)", p.RequeueAfter)
	}

	md.Spec.Paused = false
	md.Status = p.Status
	later := t0.Add(time.Hour)
	// The paused pass scaled w-a to 5; 3 Machines so far: no progress yet.
	p = Decide(md, states(md, sst{v: "a", replicas: 5, revision: 1, avail: avail(3)}), later)
	if p.Create == nil {
		t.Fatal("resumed: no new MachineSet")
	}
	c = cond(p.Status, mdv1beta1.ProgressingCondition)
	if c.Status != corev1.ConditionTrue || c.Reason != mdv1beta1.ReasonNewMachineSetCreated || !c.LastTransitionTime.Time.Equal(later) {
		t.Errorf("resumed: Progressing %s/%s at %s, want True/NewMachineSetCreated at %s", c.Status, c.Reason, c.LastTransitionTime, later)
	}
}

// TestProgressDeadline: Deployments' rules with lastTransitionTime as the
// time of the last progress.
func TestProgressDeadline(t *testing.T) {
	stuck := []sst{{v: "a", replicas: 5, revision: 1, avail: avail(5)}, {v: "b", age: 1, replicas: 3, revision: 2, avail: unav(3)}}
	for _, tc := range []struct {
		name        string
		now         time.Duration // after t0
		before      machinev1beta1.Condition
		prevStatus  mdv1beta1.MachineDeploymentStatus
		sets        []sst
		wantReason  string
		wantStatus  corev1.ConditionStatus
		wantAt      time.Duration
		wantRequeue time.Duration
	}{
		{"no progress within the deadline: unchanged, look again when it ends", 4 * time.Second,
			progressingAt(mdv1beta1.ReasonMachineSetUpdated, corev1.ConditionTrue, t0), mdv1beta1.MachineDeploymentStatus{Replicas: 8, UpdatedReplicas: 3, ReadyReplicas: 5, AvailableReplicas: 5},
			stuck, mdv1beta1.ReasonMachineSetUpdated, corev1.ConditionTrue, 0, 7 * time.Second},
		{"no progress past the deadline: ProgressDeadlineExceeded", 11 * time.Second,
			progressingAt(mdv1beta1.ReasonMachineSetUpdated, corev1.ConditionTrue, t0), mdv1beta1.MachineDeploymentStatus{Replicas: 8, UpdatedReplicas: 3, ReadyReplicas: 5, AvailableReplicas: 5},
			stuck, mdv1beta1.ReasonProgressDeadlineExceeded, corev1.ConditionFalse, 11 * time.Second, 0},
		{"progress after the deadline was exceeded: progressing again", 60 * time.Second,
			progressingAt(mdv1beta1.ReasonProgressDeadlineExceeded, corev1.ConditionFalse, t0), mdv1beta1.MachineDeploymentStatus{Replicas: 8, UpdatedReplicas: 3, ReadyReplicas: 5, AvailableReplicas: 5},
			[]sst{{v: "a", replicas: 5, revision: 1, avail: avail(5)}, {v: "b", age: 1, replicas: 3, revision: 2, avail: []bool{true, false, false}}},
			mdv1beta1.ReasonMachineSetUpdated, corev1.ConditionTrue, 60 * time.Second, 11 * time.Second},
		{"complete: NewMachineSetAvailable", 60 * time.Second,
			progressingAt(mdv1beta1.ReasonMachineSetUpdated, corev1.ConditionTrue, t0), mdv1beta1.MachineDeploymentStatus{Replicas: 6, UpdatedReplicas: 6, ReadyReplicas: 6, AvailableReplicas: 6},
			[]sst{{v: "a", replicas: 0, revision: 1}, {v: "b", age: 1, replicas: 6, revision: 2, avail: avail(6)}},
			mdv1beta1.ReasonNewMachineSetAvailable, corev1.ConditionTrue, 60 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := newMD("b", 6, twoS, oneU)
			md.Spec.ProgressDeadlineSeconds = ptr.To[int32](10)
			md.Status = tc.prevStatus
			md.Status.ObservedGeneration = 1
			md.Status.Conditions = []machinev1beta1.Condition{tc.before}
			p := Decide(md, states(md, tc.sets...), t0.Add(tc.now))
			c := cond(p.Status, mdv1beta1.ProgressingCondition)
			if c.Reason != tc.wantReason || c.Status != tc.wantStatus || !c.LastTransitionTime.Time.Equal(t0.Add(tc.wantAt)) {
				t.Errorf("Progressing %s/%s at %s; want %s/%s at %s", c.Status, c.Reason, c.LastTransitionTime.Time, tc.wantStatus, tc.wantReason, t0.Add(tc.wantAt))
			}
			if p.RequeueAfter != tc.wantRequeue {
				t.Errorf("requeue after %s, want %s", p.RequeueAfter, tc.wantRequeue)
			}
		})
	}
}

// TestStatus: counts from the observed Machines, Available from
// replicas − maxUnavailable.
func TestStatus(t *testing.T) {
	md := newMD("b", 6, twoS, oneU)
	md.Generation = 4
	p := Decide(md, states(md,
		sst{v: "a", replicas: 5, revision: 1, avail: []bool{true, true, true, true, false}, deleting: 1},
		sst{v: "b", age: 1, replicas: 3, revision: 2, avail: []bool{true, false}}), t0)
	st := p.Status
	got := [6]int32{st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas, st.UnavailableReplicas, int32(st.ObservedGeneration)}
	if want := [6]int32{7, 2, 5, 5, 3, 4}; got != want {
		t.Errorf("replicas/updated/ready/available/unavailable/observedGeneration = %v, want %v", got, want)
	}
	if st.LabelSelector != "app=w" {
		t.Errorf("labelSelector %q", st.LabelSelector)
	}
	if c := cond(st, mdv1beta1.AvailableCondition); c.Status != corev1.ConditionTrue || c.Reason != mdv1beta1.ReasonMinimumReplicasAvailable {
		t.Errorf("Available %s/%s, want True/MinimumReplicasAvailable (5 ≥ 6−1)", c.Status, c.Reason)
	}
	p = Decide(md, states(md, sst{v: "b", replicas: 6, revision: 2, avail: []bool{true, true, true, true, false, false}}), t0)
	if c := cond(p.Status, mdv1beta1.AvailableCondition); c.Status != corev1.ConditionFalse || c.Reason != mdv1beta1.ReasonMinimumReplicasUnavailable {
		t.Errorf("Available %s/%s, want False/MinimumReplicasUnavailable (4 < 5)", c.Status, c.Reason)
	}
}

// TestHistory: only old sets scaled to 0 without Machines, oldest revision
// first, beyond revisionHistoryLimit, once the rollout is complete.
func TestHistory(t *testing.T) {
	md := newMD("d", 2, oneU, zero)
	md.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	md.Status = mdv1beta1.MachineDeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}
	sets := []sst{
		{v: "a", replicas: 0, revision: 1},
		{v: "b", age: 1, replicas: 0, revision: 2, deleting: 1},
		{v: "c", age: 2, replicas: 0, revision: 3},
		{v: "d", age: 3, replicas: 2, revision: 4, avail: avail(2)},
	}
	p := Decide(md, states(md, sets...), t0)
	var got []string
	for _, ms := range p.Delete {
		got = append(got, ms.Name)
	}
	if strings.Join(got, ",") != "w-a" {
		t.Errorf("deleted %v, want [w-a] (w-b still has a Machine, w-c is within the limit)", got)
	}
	md.Status.AvailableReplicas = 1
	if p := Decide(md, states(md, sets...), t0); len(p.Delete) != 0 {
		t.Errorf("incomplete rollout deleted %d sets, want none", len(p.Delete))
	}
}

// TestTaints: during a rollout old sets' Nodes are tainted and the new
// set's are not; afterwards nothing is.
func TestTaints(t *testing.T) {
	md := newMD("b", 2, oneU, zero)
	p := Decide(md, states(md,
		sst{v: "a", replicas: 2, revision: 1, avail: avail(2), nodes: []string{"n1", "n2"}},
		sst{v: "b", age: 1, replicas: 1, revision: 2, avail: avail(1), nodes: []string{"n3"}}), t0)
	if want := map[string]bool{"n1": true, "n2": true, "n3": false}; !maps.Equal(p.Taints, want) {
		t.Errorf("taints %v, want %v", p.Taints, want)
	}
	p = Decide(md, states(md,
		sst{v: "a", replicas: 0, revision: 1},
		sst{v: "b", age: 1, replicas: 2, revision: 2, avail: avail(2), nodes: []string{"n3", "n4"}}), t0)
	if want := map[string]bool{"n3": false, "n4": false}; !maps.Equal(p.Taints, want) {
		t.Errorf("complete: taints %v, want %v", p.Taints, want)
	}
	if got := withTaint(nil, true); len(got) != 1 || got[0].Key != PreferNoScheduleTaintKey || got[0].Value != "True" || got[0].Effect != corev1.TaintEffectPreferNoSchedule {
		t.Errorf("withTaint added %v", got)
	}
	other := corev1.Taint{Key: "x", Effect: corev1.TaintEffectNoSchedule}
	if got := withTaint([]corev1.Taint{other, {Key: PreferNoScheduleTaintKey, Effect: corev1.TaintEffectPreferNoSchedule}}, false); len(got) != 1 || got[0] != other {
		t.Errorf("withTaint removed to %v, want only the other taint", got)
	}
	if got := withTaint([]corev1.Taint{other}, false); got != nil {
		t.Errorf("withTaint with nothing to do = %v, want nil", got)
	}
}

// TestTemplateHash: the hash ignores its own label, changes with the
// template and with collisionCount, and names the set.
func TestTemplateHash(t *testing.T) {
	a, b := template("a"), template("b")
	h := TemplateHash(&a, nil)
	if h != "6b79bb5bf5" {
		t.Errorf("hash %q changed: every MachineDeployment would roll out after an upgrade", h)
	}
	withLabel := a.DeepCopy()
	withLabel.Labels[mdv1beta1.MachineTemplateHashLabel] = "zzz"
	if TemplateHash(withLabel, nil) != h || !EqualIgnoringHash(withLabel, &a) {
		t.Error("the hash label changed the hash or equality")
	}
	defaulted := a.DeepCopy()
	defaulted.Spec.AuthoritativeAPI = machinev1beta1.MachineAuthorityMachineAPI
	if !EqualIgnoringHash(defaulted, &a) {
		t.Error("authoritativeAPI MachineAPI (the MachineDeployment CRD's default) differs from unset (a MachineSet without the gate)")
	}
	if TemplateHash(&b, nil) == h || EqualIgnoringHash(&a, &b) {
		t.Error("different templates, same hash or equal")
	}
	if TemplateHash(&a, ptr.To[int32](1)) == h {
		t.Error("collisionCount did not change the hash")
	}
	if got := SetName(strings.Repeat("x", 300), "abc"); len(got) != 253 || !strings.HasSuffix(got, "-abc") {
		t.Errorf("SetName of a long name: %d chars %q", len(got), got[len(got)-8:])
	}
}
