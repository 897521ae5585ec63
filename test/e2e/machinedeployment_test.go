//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
)

// machineDeploymentLabel selects a test MachineDeployment's Machines; its
// value is unique to the test.
const machineDeploymentLabel = "e2e-machinedeployment"

// newKubemarkMachineDeployment returns a MachineDeployment whose template is
// the Machine of newKubemarkMachine (pool = name, so its Nodes carry
// e2e-pool=name) plus the label e2e-machinedeployment=name, its selector.
func newKubemarkMachineDeployment(name string, replicas int32, strategy mdv1beta1.MachineDeploymentStrategy) *mdv1beta1.MachineDeployment {
	m := newKubemarkMachine("", name)
	labels := map[string]string{machineDeploymentLabel: name}
	maps.Copy(labels, m.Labels)
	return &mdv1beta1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: operandNamespace()},
		Spec: mdv1beta1.MachineDeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{machineDeploymentLabel: name}},
			Strategy: strategy,
			Template: machinev1beta1.MachineTemplateSpec{
				ObjectMeta: machinev1beta1.ObjectMeta{Labels: labels},
				Spec:       m.Spec,
			},
		},
	}
}

// createMachineDeployment creates md and, when the test ends, deletes it and
// waits until its MachineSets (the garbage collector's work) and Machines are
// gone, deleting any left over.
func createMachineDeployment(ctx context.Context, t *testing.T, md *mdv1beta1.MachineDeployment) {
	t.Helper()
	if err := cluster.Create(ctx, md); err != nil {
		t.Fatalf("creating machinedeployment %s: %v", md.Name, err)
	}
	owner := md.DeepCopy()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		deleteAndWaitGone(ctx, t, "machinedeployment "+owner.Name, owner)
		waitFor(ctx, t, "machinesets and machines of machinedeployment "+owner.Name+" removed", func(ctx context.Context) (bool, error) {
			sets, err := machineSetsOf(ctx, owner)
			if err != nil {
				return false, err
			}
			machines, err := machinesWithLabels(ctx, owner.Spec.Selector.MatchLabels)
			if err != nil {
				return false, err
			}
			if err := deleteMachines(ctx, machines); err != nil {
				return false, err
			}
			return len(sets) == 0 && len(machines) == 0, nil
		})
	})
}

// machineSetsOf lists the MachineSets whose controller is md.
func machineSetsOf(ctx context.Context, md *mdv1beta1.MachineDeployment) ([]machinev1beta1.MachineSet, error) {
	list := &machinev1beta1.MachineSetList{}
	if err := cluster.List(ctx, list, client.InNamespace(md.Namespace)); err != nil {
		return nil, err
	}
	var owned []machinev1beta1.MachineSet
	for _, ms := range list.Items {
		if ref := metav1.GetControllerOf(&ms); ref != nil && ref.UID == md.UID {
			owned = append(owned, ms)
		}
	}
	return owned, nil
}

// newMachineSetOf returns md's MachineSet of the current template: the one
// the controller marks with the deployment's revision.
func newMachineSetOf(ctx context.Context, t *testing.T, md *mdv1beta1.MachineDeployment) (*machinev1beta1.MachineSet, []machinev1beta1.MachineSet) {
	t.Helper()
	sets, err := machineSetsOf(ctx, md)
	if err != nil {
		t.Fatal(err)
	}
	for i := range sets {
		if sets[i].Annotations[mdv1beta1.RevisionAnnotation] == md.Annotations[mdv1beta1.RevisionAnnotation] {
			return &sets[i], sets
		}
	}
	t.Fatalf("machinedeployment %s (revision %q) has no machineset of its revision among %d", md.Name, md.Annotations[mdv1beta1.RevisionAnnotation], len(sets))
	return nil, nil
}

func mdCondition(md *mdv1beta1.MachineDeployment, ct machinev1beta1.ConditionType) *machinev1beta1.Condition {
	for i := range md.Status.Conditions {
		if md.Status.Conditions[i].Type == ct {
			return &md.Status.Conditions[i]
		}
	}
	return nil
}

// waitRolledOut waits until md's status says its rollout of the current
// generation is complete (n updated and available Machines, Available True,
// Progressing NewMachineSetAvailable), and exactly n Machines select, none
// deleting, each of the new set's template with a Ready node.
func waitRolledOut(ctx context.Context, t *testing.T, md *mdv1beta1.MachineDeployment, n int32) {
	t.Helper()
	waitFor(ctx, t, fmt.Sprintf("machinedeployment %s rolled out: %d updated and available, Progressing %s", md.Name, n, mdv1beta1.ReasonNewMachineSetAvailable), func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(md), md); err != nil {
			return false, err
		}
		s := md.Status
		avail, prog := mdCondition(md, mdv1beta1.AvailableCondition), mdCondition(md, mdv1beta1.ProgressingCondition)
		if s.ObservedGeneration != md.Generation || s.Replicas != n || s.UpdatedReplicas != n || s.AvailableReplicas != n ||
			avail == nil || avail.Status != corev1.ConditionTrue || prog == nil || prog.Reason != mdv1beta1.ReasonNewMachineSetAvailable {
			return false, fmt.Errorf("status %+v", s)
		}
		return true, nil
	})
	newSet, _ := newMachineSetOf(ctx, t, md)
	waitMachineSetReady(ctx, t, newSet, n)
	waitFor(ctx, t, fmt.Sprintf("only the %d machines of machineset %s left", n, newSet.Name), func(ctx context.Context) (bool, error) {
		machines, err := machinesWithLabels(ctx, md.Spec.Selector.MatchLabels)
		if err != nil {
			return false, err
		}
		for _, m := range machines {
			if !metav1.IsControlledBy(&m, newSet) {
				return false, fmt.Errorf("machine %s is not of %s", m.Name, newSet.Name)
			}
		}
		return len(machines) == int(n), nil
	})
}

// patchMachineDeployment applies a JSON merge patch to the MachineDeployment.
func patchMachineDeployment(ctx context.Context, t *testing.T, md *mdv1beta1.MachineDeployment, patch string) {
	t.Helper()
	if err := cluster.Patch(ctx, md, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("patching machinedeployment %s with %s: %v", md.Name, patch, err)
	}
}

// TestMachineDeploymentRollingUpdate rolls a MachineDeployment of 10 kubemark
// Machines (maxSurge 3, maxUnavailable 1) to a new template and back. A watch
// on its Machines and their Nodes sees, at every event, at most 13 Machines
// (deleting ones included, as the controller counts them) and at least 9
// available. The rollout ends with 10 Machines of the new set, the old set
// at 0, status updatedReplicas 10, Available True, Progressing
// NewMachineSetAvailable; the rollback reuses the first set (same name), no
// third set. Breaks if: the controller's surge footprint ignored Machines
// being deleted (more than 13 seen), or the rollback hashed the template
// differently from the first time (a third set).
func TestMachineDeploymentRollingUpdate(t *testing.T) {
	ctx := kubemarkTest(t, 15*time.Minute)
	const replicas, surge, unavailable = 10, 3, 1
	name := "e2e-md-roll-" + rand.String(5)
	md := newKubemarkMachineDeployment(name, replicas, mdv1beta1.MachineDeploymentStrategy{
		Type: mdv1beta1.RollingUpdateStrategy,
		RollingUpdate: &mdv1beta1.RollingUpdateMachineDeployment{
			MaxSurge: ptr.To(intstr.FromInt32(surge)), MaxUnavailable: ptr.To(intstr.FromInt32(unavailable)),
		},
	})
	createMachineDeployment(ctx, t, md)
	start := time.Now()
	waitRolledOut(ctx, t, md, replicas)
	t.Logf("scale-up of %d machines took %s", replicas, time.Since(start).Round(100*time.Millisecond))
	first, _ := newMachineSetOf(ctx, t, md)

	fleet := watchFleet(ctx, t, md.Spec.Selector.MatchLabels, name)
	bounds := func(s *fleetState) string {
		if n, a := len(s.machines), s.available(); n > replicas+surge || a < replicas-unavailable {
			return fmt.Sprintf("%d machines (max %d), %d available (min %d)", n, replicas+surge, a, replicas-unavailable)
		}
		return ""
	}
	reported := map[string]bool{}
	roll := func(what, cpu string) *machinev1beta1.MachineSet {
		t.Helper()
		start := time.Now()
		patchMachineDeployment(ctx, t, md, `{"spec":{"template":{"spec":{"providerSpec":{"value":{"cpu":"`+cpu+`"}}}}}}`)
		waitRolledOut(ctx, t, md, replicas)
		took := time.Since(start)
		fig := fleet.replay(ctx, t, md.Spec.Selector.MatchLabels, name, bounds)
		t.Logf("%s (cpu %s) of %d machines took %s; watches so far: %d events, at most %d machines, at least %d available",
			what, cpu, replicas, took.Round(100*time.Millisecond), fig.events, fig.maxMachines, fig.minAvailable)
		for _, v := range fig.violations {
			if !reported[v] {
				t.Errorf("%s: the watches saw %s", what, v)
				reported[v] = true
			}
		}
		set, sets := newMachineSetOf(ctx, t, md)
		for _, s := range sets {
			if s.Name != set.Name && (ptr.Deref(s.Spec.Replicas, -1) != 0 || s.Status.Replicas != 0) {
				t.Errorf("%s: old machineset %s has spec.replicas %d, status.replicas %d, want 0", what, s.Name, ptr.Deref(s.Spec.Replicas, -1), s.Status.Replicas)
			}
		}
		machines, err := machinesWithLabels(ctx, md.Spec.Selector.MatchLabels)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range machines {
			if got := providerSpecOf(t, &m.Spec)["cpu"]; got != cpu {
				t.Errorf("%s: machine %s has providerSpec cpu %v, want %s", what, m.Name, got, cpu)
			}
		}
		if md.Status.UpdatedReplicas != replicas {
			t.Errorf("%s: status.updatedReplicas %d, want %d", what, md.Status.UpdatedReplicas, replicas)
		}
		return set
	}

	second := roll("rolling update", "8")
	if second.Name == first.Name {
		t.Fatalf("the rolling update kept machineset %s: no new set for the new template", first.Name)
	}
	back := roll("rollback", "4")
	if back.Name != first.Name || back.UID != first.UID {
		t.Errorf("the rollback's machineset is %s (uid %s), want the first one reused: %s (uid %s)", back.Name, back.UID, first.Name, first.UID)
	}
	sets, err := machineSetsOf(ctx, md)
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 2 {
		names := make([]string, 0, len(sets))
		for _, s := range sets {
			names = append(names, s.Name)
		}
		t.Errorf("machinedeployment %s has %d machinesets %v after a rollout and a rollback, want 2", name, len(sets), names)
	}
}

// TestMachineDeploymentRecreate: under Recreate, a watch on the Machines of
// a MachineDeployment of 3 whose template changes never sees Machines of the
// old and the new template at once (deleting ones included); it ends with 3
// Machines of the new template. Breaks if: the controller created the new
// set before the old set's Machines were gone (both hashes seen at once).
func TestMachineDeploymentRecreate(t *testing.T) {
	ctx := kubemarkTest(t, 10*time.Minute)
	const replicas = 3
	name := "e2e-md-recreate-" + rand.String(5)
	md := newKubemarkMachineDeployment(name, replicas, mdv1beta1.MachineDeploymentStrategy{Type: mdv1beta1.RecreateStrategy})
	createMachineDeployment(ctx, t, md)
	waitRolledOut(ctx, t, md, replicas)
	first, _ := newMachineSetOf(ctx, t, md)

	fleet := watchFleet(ctx, t, md.Spec.Selector.MatchLabels, name)
	start := time.Now()
	patchMachineDeployment(ctx, t, md, `{"spec":{"template":{"spec":{"providerSpec":{"value":{"cpu":"8"}}}}}}`)
	waitRolledOut(ctx, t, md, replicas)
	took := time.Since(start)
	fig := fleet.replay(ctx, t, md.Spec.Selector.MatchLabels, name, func(s *fleetState) string {
		if hashes := s.templates(); len(hashes) > 1 {
			return fmt.Sprintf("machines of %d templates at once: %v", len(hashes), hashes)
		}
		return ""
	})
	t.Logf("recreate of %d machines took %s; watches: %d events, at most %d machines, at least %d available, at most %d templates at once",
		replicas, took.Round(100*time.Millisecond), fig.events, fig.maxMachines, fig.minAvailable, fig.maxTemplates)
	for _, v := range fig.violations {
		t.Errorf("the watches saw %s", v)
	}
	if second, _ := newMachineSetOf(ctx, t, md); second.Name == first.Name {
		t.Errorf("the recreate kept machineset %s: no new set for the new template", first.Name)
	}
	machines, err := machinesWithLabels(ctx, md.Spec.Selector.MatchLabels)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range machines {
		if got := providerSpecOf(t, &m.Spec)["cpu"]; got != "8" {
			t.Errorf("machine %s has providerSpec cpu %v, want 8", m.Name, got)
		}
	}
}
