package machinedeployment

import (
	"fmt"
	"slices"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
)

// TestRollingUpdateBounds: 6 Machines rolled from v1 to v2 with maxSurge 2
// and maxUnavailable 1; a watch on Machines sees no moment with more than
// 8 Machines or fewer than 5 available. The old MachineSet stays, scaled to
// 0, with its revision; the new one is owned and labelled.
func TestRollingUpdateBounds(t *testing.T) {
	h := newHarness(t)
	h.createMD("v1", 6, nil)
	h.waitComplete("v1", 6)
	b := h.watchBounds(8, 5)
	writes, start := h.writes.n.Load(), time.Now()
	h.update(func(md *mdv1beta1.MachineDeployment) { md.Spec.Template = template("v2") })
	h.waitComplete("v2", 6)
	t.Logf("rollout of 6 Machines: %s, %d MachineDeployment controller writes", time.Since(start).Round(time.Millisecond), h.writes.n.Load()-writes)
	b.check(t)

	md := h.md()
	sets := h.sets()
	if len(sets) != 2 {
		t.Fatalf("%d MachineSets, want 2", len(sets))
	}
	for _, ms := range sets {
		hash := ms.Spec.Template.Labels[mdv1beta1.MachineTemplateHashLabel]
		if ms.Name != "w-"+hash || ms.Labels[mdv1beta1.MachineTemplateHashLabel] != hash {
			t.Errorf("set %s: hash label %q (labels %v), want the name's", ms.Name, hash, ms.Labels)
		}
		ref := metav1.GetControllerOf(&ms)
		if ref == nil || ref.UID != md.UID || ref.Kind != "MachineDeployment" {
			t.Errorf("%s: controller %v, want the MachineDeployment", ms.Name, ref)
		}
		switch {
		case ms.Spec.Template.Spec.ObjectMeta.Labels["version"] == "v2":
			if *ms.Spec.Replicas != 6 || ms.Annotations[mdv1beta1.RevisionAnnotation] != "2" ||
				ms.Spec.Selector.MatchLabels[mdv1beta1.MachineTemplateHashLabel] != hash || ms.Spec.Template.Labels[mdv1beta1.MachineTemplateHashLabel] != hash {
				t.Errorf("new set %s: replicas %d annotations %v selector %v", ms.Name, *ms.Spec.Replicas, ms.Annotations, ms.Spec.Selector.MatchLabels)
			}
		default:
			if *ms.Spec.Replicas != 0 || ms.Annotations[mdv1beta1.RevisionAnnotation] != "1" {
				t.Errorf("old set %s: replicas %d revision %q, want 0 and 1", ms.Name, *ms.Spec.Replicas, ms.Annotations[mdv1beta1.RevisionAnnotation])
			}
		}
	}
	if md.Annotations[mdv1beta1.RevisionAnnotation] != "2" {
		t.Errorf("MachineDeployment revision %q, want 2", md.Annotations[mdv1beta1.RevisionAnnotation])
	}
	h.eventually("Progressing NewMachineSetAvailable", func() error {
		c := conditions.Get(h.md().Status.Conditions, mdv1beta1.ProgressingCondition)
		if c == nil || c.Reason != mdv1beta1.ReasonNewMachineSetAvailable {
			return fmt.Errorf("Progressing %+v", c)
		}
		return nil
	})
	for _, m := range h.machines() {
		if tainted, err := h.nodeTainted(&m); err != nil || tainted {
			t.Errorf("new Machine %s: Node tainted %t (%v), want untainted", m.Name, tainted, err)
		}
	}
	if n := len(h.rec.find(EventScalingMachineSet)); n < 4 {
		t.Errorf("%d ScalingMachineSet events, want several", n)
	}
}

// TestStuckRolloutDeadline: new Machines never become available: the
// rollout stops with 5 available old Machines and 3 new ones (8 in all),
// the old Machines' Nodes get the PreferNoSchedule taint, Progressing turns
// False (ProgressDeadlineExceeded) after progressDeadlineSeconds; once the
// new Machines become available it resumes and completes.
func TestStuckRolloutDeadline(t *testing.T) {
	h := newHarness(t)
	h.createMD("v1", 6, func(md *mdv1beta1.MachineDeployment) { md.Spec.ProgressDeadlineSeconds = ptr.To[int32](3) })
	h.waitComplete("v1", 6)
	b := h.watchBounds(8, 5)
	h.hold("v2")
	h.update(func(md *mdv1beta1.MachineDeployment) { md.Spec.Template = template("v2") })
	h.eventually("ProgressDeadlineExceeded", func() error {
		c := conditions.Get(h.md().Status.Conditions, mdv1beta1.ProgressingCondition)
		if c == nil || c.Status != corev1.ConditionFalse || c.Reason != mdv1beta1.ReasonProgressDeadlineExceeded {
			return fmt.Errorf("Progressing %+v", c)
		}
		return nil
	})
	counts := map[string]int{}
	for _, m := range h.machines() {
		counts[version(&m)]++
		if version(&m) == "v1" {
			if tainted, err := h.nodeTainted(&m); err != nil || !tainted {
				t.Errorf("old Machine %s: Node tainted %t (%v), want the PreferNoSchedule taint", m.Name, tainted, err)
			}
		}
	}
	if counts["v1"] != 5 || counts["v2"] != 3 {
		t.Errorf("stuck at %v, want 5 v1 and 3 v2 (replicas−maxUnavailable old, the surge new)", counts)
	}
	if st := h.md().Status; st.AvailableReplicas != 5 || st.UnavailableReplicas != 3 {
		t.Errorf("status available %d unavailable %d, want 5 and 3", st.AvailableReplicas, st.UnavailableReplicas)
	}

	h.release("v2")
	h.waitComplete("v2", 6)
	h.eventually("Progressing NewMachineSetAvailable", func() error {
		c := conditions.Get(h.md().Status.Conditions, mdv1beta1.ProgressingCondition)
		if c == nil || c.Status != corev1.ConditionTrue || c.Reason != mdv1beta1.ReasonNewMachineSetAvailable {
			return fmt.Errorf("Progressing %+v", c)
		}
		return nil
	})
	b.check(t)
}

// TestRollbackReusesOldSet: after v1 → v2, the template goes back to v1:
// the v1 MachineSet becomes the new one again (revision 3, history 1); no
// third set is created.
func TestRollbackReusesOldSet(t *testing.T) {
	h := newHarness(t)
	h.createMD("v1", 3, nil)
	h.waitComplete("v1", 3)
	v1 := h.sets()[0]
	h.update(func(md *mdv1beta1.MachineDeployment) { md.Spec.Template = template("v2") })
	h.waitComplete("v2", 3)
	b := h.watchBounds(5, 2)
	h.update(func(md *mdv1beta1.MachineDeployment) { md.Spec.Template = template("v1") })
	h.waitComplete("v1", 3)
	b.check(t)
	sets := h.sets()
	if len(sets) != 2 {
		t.Fatalf("%d MachineSets after the rollback, want 2 (the old one reused)", len(sets))
	}
	for _, ms := range sets {
		if ms.UID != v1.UID {
			continue
		}
		if *ms.Spec.Replicas != 3 || ms.Annotations[mdv1beta1.RevisionAnnotation] != "3" || ms.Annotations[mdv1beta1.RevisionHistoryAnnotation] != "1" {
			t.Errorf("reused set: replicas %d annotations %v, want 3, revision 3, history 1", *ms.Spec.Replicas, ms.Annotations)
		}
	}
	if len(h.rec.find(EventRollback)) == 0 {
		t.Error("no DeploymentRollback event")
	}
}

// TestRecreateRollout: no Machine of v2 exists while one of v1 does.
func TestRecreateRollout(t *testing.T) {
	h := newHarness(t)
	h.createMD("v1", 3, func(md *mdv1beta1.MachineDeployment) {
		md.Spec.Strategy = mdv1beta1.MachineDeploymentStrategy{Type: mdv1beta1.RecreateStrategy}
	})
	h.waitComplete("v1", 3)
	b := h.watchBounds(3, 0)
	b.extra = func(seen map[string]*machinev1beta1.Machine) string {
		vs := map[string]int{}
		for _, m := range seen {
			vs[version(m)]++
		}
		if vs["v1"] > 0 && vs["v2"] > 0 {
			return fmt.Sprintf("old and new Machines together: %v", vs)
		}
		return ""
	}
	h.update(func(md *mdv1beta1.MachineDeployment) { md.Spec.Template = template("v2") })
	h.waitComplete("v2", 3)
	b.check(t)
}

// TestSteadyStateNoWrites: once a rollout is complete, a reconcile writes
// nothing (no status, set, Node or annotation patch).
func TestSteadyStateNoWrites(t *testing.T) {
	h := newHarness(t)
	h.createMD("v1", 3, nil)
	h.waitComplete("v1", 3)
	h.update(func(md *mdv1beta1.MachineDeployment) { md.Spec.Template = template("v2") })
	h.waitComplete("v2", 3)
	h.eventually("Progressing NewMachineSetAvailable", func() error {
		c := conditions.Get(h.md().Status.Conditions, mdv1beta1.ProgressingCondition)
		if c == nil || c.Reason != mdv1beta1.ReasonNewMachineSetAvailable {
			return fmt.Errorf("Progressing %+v", c)
		}
		return nil
	})
	h.settle()
	writes := h.writes.n.Load()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: h.ns, Name: "w"}}
	before := h.wt.Reconciles(req)
	h.update(func(md *mdv1beta1.MachineDeployment) {
		if md.Labels == nil {
			md.Labels = map[string]string{}
		}
		md.Labels["poke"] = "1"
	})
	h.eventually("a reconcile after the poke", func() error {
		if n := h.wt.Reconciles(req); n <= before {
			return fmt.Errorf("%d reconciles, want more than %d", n, before)
		}
		return nil
	})
	h.settle()
	if n := h.writes.n.Load() - writes; n != 0 {
		t.Errorf("%d writes at rest, want 0", n)
	}
}

// TestStatusMixRecomputed: a status that is not the one the controller
// computes, with no MachineSet or Machine change after it, is recomputed.
// The controller leaves such a mix itself: its patch holds only the fields
// that differ from a cached object behind its previous write (the
// TestScaleDownMidRollout flake ended at replicas 3, available 4). Breaks
// if: the MachineDeployment watch ignores status-only changes again
// (setup.go's predicate).
func TestStatusMixRecomputed(t *testing.T) {
	h := newHarness(t)
	h.createMD("v1", 2, nil)
	h.waitComplete("v1", 2)
	h.settle()
	md := h.md()
	base := md.DeepCopy()
	md.Status.Replicas, md.Status.UpdatedReplicas = 1, 1
	if err := h.c.Status().Patch(h.ctx, md, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	h.waitComplete("v1", 2)
}

// TestScaleDownMidRollout: replicas go from 6 to 3 while a rollout is
// stuck (5 old, 3 new Machines, sized for 6 + maxSurge 2 = 8): every set
// shrinks in proportion to 5 (3 old, 2 new), not the new set alone; the
// rollout then completes at 3.
func TestScaleDownMidRollout(t *testing.T) {
	h := newHarness(t)
	h.createMD("v1", 6, nil)
	h.waitComplete("v1", 6)
	h.hold("v2")
	h.update(func(md *mdv1beta1.MachineDeployment) { md.Spec.Template = template("v2") })
	sizesAre := func(want map[string]int32) func() error {
		return func() error {
			got := map[string]int32{}
			for _, ms := range h.sets() {
				got[ms.Spec.Template.Spec.ObjectMeta.Labels["version"]] = *ms.Spec.Replicas
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("set sizes %v, want %v", got, want)
			}
			return nil
		}
	}
	h.eventually("stuck at 5 old and 3 new", sizesAre(map[string]int32{"v1": 5, "v2": 3}))
	var oldSet, newSet string
	for _, ms := range h.sets() {
		if ms.Spec.Template.Spec.ObjectMeta.Labels["version"] == "v1" {
			oldSet = ms.Name
		} else {
			newSet = ms.Name
		}
	}
	h.update(func(md *mdv1beta1.MachineDeployment) { md.Spec.Replicas = ptr.To[int32](3) })
	// The rollout goes on from there (old 3 → 2 is within the new bounds),
	// so the proportional step shows in the events, not in a steady state.
	want := []string{
		fmt.Sprintf("ScalingMachineSet: Scaled down MachineSet %s from 5 to 3", oldSet),
		fmt.Sprintf("ScalingMachineSet: Scaled down MachineSet %s from 3 to 2", newSet),
	}
	h.eventually("both sets scaled down in proportion", func() error {
		got := h.rec.find(EventScalingMachineSet)
		for _, w := range want {
			if !slices.Contains(got, w) {
				return fmt.Errorf("events %q lack %q", got, w)
			}
		}
		return nil
	})
	for _, ms := range h.sets() {
		if ms.Annotations[mdv1beta1.DesiredReplicasAnnotation] != "3" || ms.Annotations[mdv1beta1.MaxReplicasAnnotation] != "5" {
			t.Errorf("%s annotations %v, want desired-replicas 3 and max-replicas 5 (3 + maxSurge 2)", ms.Name, ms.Annotations)
		}
	}
	h.release("v2")
	h.waitComplete("v2", 3)
}

// TestSelectorNotMatchingTemplate: a MachineDeployment admission would
// refuse (its webhook fails open) makes no MachineSet, only an event.
func TestSelectorNotMatchingTemplate(t *testing.T) {
	h := newHarness(t)
	h.createMD("v1", 2, func(md *mdv1beta1.MachineDeployment) {
		md.Spec.Selector.MatchLabels = map[string]string{"app": "other"}
	})
	h.eventually("an InvalidConfiguration event", func() error {
		if len(h.rec.find(EventInvalidConfiguration)) == 0 {
			return fmt.Errorf("no event yet")
		}
		return nil
	})
	h.settle()
	if n := len(h.sets()); n != 0 {
		t.Errorf("%d MachineSets, want none", n)
	}
	if n := len(h.rec.find(EventInvalidConfiguration)); n != 1 {
		t.Errorf("%d InvalidConfiguration events, want 1", n)
	}
}

// TestAdoptsMatchingMachineSet: an orphan MachineSet the selector matches,
// with the deployment's template, is adopted and becomes its new set (no
// second set); one whose labels stop matching is released.
func TestAdoptsMatchingMachineSet(t *testing.T) {
	h := newHarness(t)
	orphan := &machinev1beta1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "existing", Labels: map[string]string{"app": "w"}},
		Spec: machinev1beta1.MachineSetSpec{
			Replicas: ptr.To[int32](2),
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "w"}},
			Template: template("v1"),
		},
	}
	if err := h.c.Create(h.ctx, orphan); err != nil {
		t.Fatal(err)
	}
	// A deployment that does not see it yet makes its own set, as
	// Deployments do; here the cache has it first.
	h.eventually("the orphan in the controllers' cache", func() error {
		return h.cached.Get(h.ctx, client.ObjectKeyFromObject(orphan), &machinev1beta1.MachineSet{})
	})
	h.createMD("v1", 2, nil)
	h.waitComplete("v1", 2)
	md := h.md()
	sets := h.sets()
	if len(sets) != 1 || sets[0].Name != "existing" {
		t.Fatalf("%d sets (%s first), want only the adopted one", len(sets), sets[0].Name)
	}
	if ref := metav1.GetControllerOf(&sets[0]); ref == nil || ref.UID != md.UID {
		t.Fatalf("controller of the orphan: %v, want the MachineDeployment", ref)
	}
	h.eventually("the adopted set released when its labels stop matching", func() error {
		ms := &h.sets()[0]
		if metav1.GetControllerOf(ms) == nil {
			return nil
		}
		ms.Labels = map[string]string{"app": "elsewhere"}
		if err := h.c.Update(h.ctx, ms); err != nil {
			return err
		}
		return fmt.Errorf("still controlled")
	})
}

// TestRolloutSurvivesRestarts: the controllers are stopped and started
// again twice during a rollout (as a killed pod would be): the rollout
// resumes from what the API server holds and stays inside the bounds.
func TestRolloutSurvivesRestarts(t *testing.T) {
	h := newHarness(t)
	h.createMD("v1", 6, nil)
	h.waitComplete("v1", 6)
	b := h.watchBounds(8, 5)
	h.update(func(md *mdv1beta1.MachineDeployment) { md.Spec.Template = template("v2") })
	for _, n := range []int{2, 4} {
		h.eventually(fmt.Sprintf("%d Machines of v2", n), func() error {
			got := 0
			for _, m := range h.machines() {
				if version(&m) == "v2" {
					got++
				}
			}
			if got < n {
				return fmt.Errorf("%d", got)
			}
			return nil
		})
		h.stopControllers()
		h.startControllers()
	}
	h.waitComplete("v2", 6)
	b.check(t)
	if n := len(h.sets()); n != 2 {
		t.Errorf("%d MachineSets, want 2 (no set made twice)", n)
	}
}

// TestOnDeleteReplacesWithNewTemplate: under OnDelete nothing moves until
// someone deletes an old Machine; each one deleted is replaced by a Machine
// of the new template, never by the old set (which carries
// DisableMachineCreateAnnotation). Breaks if: holdOldSets did not mark the
// old set, or the MachineSet controller ignored the mark (the old set
// re-creates a v1 Machine before this controller lowers it).
func TestOnDeleteReplacesWithNewTemplate(t *testing.T) {
	h := newHarness(t)
	h.createMD("v1", 3, func(md *mdv1beta1.MachineDeployment) {
		md.Spec.Strategy = mdv1beta1.MachineDeploymentStrategy{Type: mdv1beta1.OnDeleteStrategy}
	})
	h.waitComplete("v1", 3)
	initial := map[string]bool{}
	for _, m := range h.machines() {
		initial[m.Name] = true
	}
	b := h.watchBounds(3, 0)
	b.extra = func(seen map[string]*machinev1beta1.Machine) string {
		for _, m := range seen {
			if version(m) == "v1" && !initial[m.Name] {
				return fmt.Sprintf("a new Machine %s of the old template", m.Name)
			}
		}
		return ""
	}
	h.update(func(md *mdv1beta1.MachineDeployment) { md.Spec.Template = template("v2") })
	h.eventually("the old set held, the new one created", func() error {
		sets := h.sets()
		if len(sets) != 2 {
			return fmt.Errorf("%d MachineSets", len(sets))
		}
		for _, ms := range sets {
			held := ms.Annotations[mdv1beta1.DisableMachineCreateAnnotation] == "true"
			if isOld := ms.Spec.Template.Spec.ObjectMeta.Labels["version"] == "v1"; held != isOld {
				return fmt.Errorf("MachineSet %s (old %v) held %v", ms.Name, isOld, held)
			}
		}
		return nil
	})
	for name := range initial {
		m := &machinev1beta1.Machine{}
		m.Namespace, m.Name = h.ns, name
		if err := h.c.Delete(h.ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	h.waitComplete("v2", 3)
	b.check(t)
}
