//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The MachineSet contract, by name, as OpenShift's Machine API spells it.
const (
	// machineSetLabel selects a test MachineSet's Machines; its value is
	// unique to the test.
	machineSetLabel = "e2e-machineset"
	// templateAnnotation is put on the template to check that Machines
	// inherit the template's annotations.
	templateAnnotation = "e2e.machine-api-operator.io/template"

	deleteMachineAnnotation       = "machine.openshift.io/delete-machine"
	legacyDeleteMachineAnnotation = "machine.openshift.io/cluster-api-delete-machine"

	vCPUAnnotation            = "machine.openshift.io/vCPU"
	memoryMbAnnotation        = "machine.openshift.io/memoryMb"
	maxPodsAnnotation         = "machine.openshift.io/maxPods"
	capacityCPUAnnotation     = "capacity.cluster-autoscaler.kubernetes.io/cpu"
	capacityMemoryAnnotation  = "capacity.cluster-autoscaler.kubernetes.io/memory"
	capacityMaxPodsAnnotation = "capacity.cluster-autoscaler.kubernetes.io/maxPods"
)

// newKubemarkMachineSet returns a MachineSet whose template is the Machine of
// newKubemarkMachine (pool = name) plus the label e2e-machineset=name, which
// is also its selector.
func newKubemarkMachineSet(name string, replicas int32) *machinev1beta1.MachineSet {
	m := newKubemarkMachine("", name)
	labels := map[string]string{machineSetLabel: name}
	maps.Copy(labels, m.Labels)
	return &machinev1beta1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: operandNamespace()},
		Spec: machinev1beta1.MachineSetSpec{
			Replicas: ptr.To(replicas),
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{machineSetLabel: name}},
			Template: machinev1beta1.MachineTemplateSpec{
				ObjectMeta: machinev1beta1.ObjectMeta{
					Labels:      labels,
					Annotations: map[string]string{templateAnnotation: name},
				},
				Spec: m.Spec,
			},
		},
	}
}

// createMachineSet creates ms and, when the test ends, deletes it and waits
// until every Machine it owned is gone.
func createMachineSet(ctx context.Context, t *testing.T, ms *machinev1beta1.MachineSet) {
	t.Helper()
	if err := cluster.Create(ctx, ms); err != nil {
		t.Fatalf("creating machineset %s: %v", ms.Name, err)
	}
	deleteMachineSetOnCleanup(t, ms)
}

func deleteMachineSetOnCleanup(t *testing.T, ms *machinev1beta1.MachineSet) {
	owner := ms.DeepCopy()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		deleteAndWaitGone(ctx, t, "machineset "+owner.Name, owner)
		// The garbage collector would delete the owned Machines too; deleting
		// them here keeps the cleanup independent of it.
		waitFor(ctx, t, "machines of machineset "+owner.Name+" removed", func(ctx context.Context) (bool, error) {
			machines, err := machinesControlledBy(ctx, owner)
			if err != nil {
				return false, err
			}
			if err := deleteMachines(ctx, machines); err != nil {
				return false, err
			}
			return len(machines) == 0, nil
		})
	})
}

// machinesControlledBy lists the Machines (deleting ones included) whose
// controller is ms.
func machinesControlledBy(ctx context.Context, ms *machinev1beta1.MachineSet) ([]machinev1beta1.Machine, error) {
	list := &machinev1beta1.MachineList{}
	if err := cluster.List(ctx, list, client.InNamespace(ms.Namespace)); err != nil {
		return nil, err
	}
	var owned []machinev1beta1.Machine
	for _, m := range list.Items {
		if metav1.IsControlledBy(&m, ms) {
			owned = append(owned, m)
		}
	}
	return owned, nil
}

// machinesWithLabels lists the Machines (deleting ones included) in the
// operand namespace that carry labels.
func machinesWithLabels(ctx context.Context, labels map[string]string) ([]machinev1beta1.Machine, error) {
	list := &machinev1beta1.MachineList{}
	err := cluster.List(ctx, list, client.InNamespace(operandNamespace()), client.MatchingLabels(labels))
	return list.Items, err
}

// scaleMachineSet sets the replicas through the scale subresource, the way
// `kubectl scale` and the cluster autoscaler do.
func scaleMachineSet(ctx context.Context, t *testing.T, ms *machinev1beta1.MachineSet, replicas int32) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		scale := &autoscalingv1.Scale{}
		if err := cluster.SubResource("scale").Get(ctx, ms, scale); err != nil {
			return err
		}
		scale.Spec.Replicas = replicas
		return cluster.SubResource("scale").Update(ctx, ms, client.WithSubResourceBody(scale))
	})
	if err != nil {
		t.Fatalf("scaling machineset %s to %d through the scale subresource: %v", ms.Name, replicas, err)
	}
}

// patchMachineSet applies a JSON merge patch to the MachineSet.
func patchMachineSet(ctx context.Context, t *testing.T, ms *machinev1beta1.MachineSet, patch string) {
	t.Helper()
	if err := cluster.Patch(ctx, ms, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("patching machineset %s with %s: %v", ms.Name, patch, err)
	}
}

// waitMachineSetReady waits until exactly n Machines match the MachineSet's
// selector, none of them deleting, each created by the MachineSet from its
// template and Running with a Ready node, and the MachineSet's status says
// so for its current generation. It returns those Machines.
func waitMachineSetReady(ctx context.Context, t *testing.T, ms *machinev1beta1.MachineSet, n int32) []*machinev1beta1.Machine {
	t.Helper()
	selected := func(ctx context.Context) ([]machinev1beta1.Machine, error) {
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(ms), ms); err != nil {
			return nil, err
		}
		sel, err := metav1.LabelSelectorAsSelector(&ms.Spec.Selector)
		if err != nil {
			return nil, err
		}
		list := &machinev1beta1.MachineList{}
		err = cluster.List(ctx, list, client.InNamespace(ms.Namespace), client.MatchingLabelsSelector{Selector: sel})
		return list.Items, err
	}
	var machines []*machinev1beta1.Machine
	waitFor(ctx, t, fmt.Sprintf("exactly %d machines of machineset %s, none deleting", n, ms.Name), func(ctx context.Context) (bool, error) {
		list, err := selected(ctx)
		if err != nil {
			return false, err
		}
		machines = machines[:0]
		for i := range list {
			if list[i].DeletionTimestamp != nil {
				return false, nil
			}
			machines = append(machines, &list[i])
		}
		return len(machines) == int(n), nil
	})
	for _, m := range machines {
		checkCreatedFromTemplate(t, ms, m)
		waitRunning(ctx, t, m)
	}
	waitFor(ctx, t, fmt.Sprintf("machineset %s status: %d replicas, fully labeled, ready, available, generation observed", ms.Name, n), func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(ms), ms); err != nil {
			return false, err
		}
		s := ms.Status
		return s.ObservedGeneration == ms.Generation && s.Replicas == n && s.FullyLabeledReplicas == n &&
			s.ReadyReplicas == n && s.AvailableReplicas == n, nil
	})
	list, err := selected(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != int(n) {
		t.Fatalf("machineset %s has %d machines once its status says %d: %v", ms.Name, len(list), n, machineNames(list))
	}
	return machines
}

// checkCreatedFromTemplate checks that m was created by ms: generated name,
// controller reference, and the template's labels, annotations and spec.
func checkCreatedFromTemplate(t *testing.T, ms *machinev1beta1.MachineSet, m *machinev1beta1.Machine) {
	t.Helper()
	if m.GenerateName != ms.Name+"-" || !strings.HasPrefix(m.Name, ms.Name+"-") {
		t.Errorf("machine %s: generateName %q, want %q", m.Name, m.GenerateName, ms.Name+"-")
	}
	ref := metav1.GetControllerOf(m)
	if ref == nil || ref.UID != ms.UID || ref.Kind != "MachineSet" || ref.APIVersion != machinev1beta1.GroupVersion.String() || ref.Name != ms.Name {
		t.Errorf("machine %s: controller reference %+v, want machineset %s (uid %s)", m.Name, ref, ms.Name, ms.UID)
	}
	for k, v := range ms.Spec.Template.Labels {
		if m.Labels[k] != v {
			t.Errorf("machine %s: label %s=%q, want %q from the template", m.Name, k, m.Labels[k], v)
		}
	}
	for k, v := range ms.Spec.Template.Annotations {
		if m.Annotations[k] != v {
			t.Errorf("machine %s: annotation %s=%q, want %q from the template", m.Name, k, m.Annotations[k], v)
		}
	}
	if !reflect.DeepEqual(m.Spec.ObjectMeta.Labels, ms.Spec.Template.Spec.ObjectMeta.Labels) {
		t.Errorf("machine %s: spec.metadata.labels %v, want %v from the template", m.Name, m.Spec.ObjectMeta.Labels, ms.Spec.Template.Spec.ObjectMeta.Labels)
	}
	if got, want := providerSpecOf(t, &m.Spec), providerSpecOf(t, &ms.Spec.Template.Spec); !reflect.DeepEqual(got, want) {
		t.Errorf("machine %s: providerSpec %v, want %v from the template", m.Name, got, want)
	}
}

func providerSpecOf(t *testing.T, spec *machinev1beta1.MachineSpec) map[string]any {
	t.Helper()
	if spec.ProviderSpec.Value == nil {
		return nil
	}
	var v map[string]any
	if err := json.Unmarshal(spec.ProviderSpec.Value.Raw, &v); err != nil {
		t.Errorf("decoding providerSpec: %v", err)
	}
	return v
}

func machineNames(machines []machinev1beta1.Machine) []string {
	names := make([]string, 0, len(machines))
	for _, m := range machines {
		names = append(names, m.Name)
	}
	return names
}

// nodeOf returns the name of the Machine's node (waitRunning saw it set).
func nodeOf(t *testing.T, m *machinev1beta1.Machine) string {
	t.Helper()
	if m.Status.NodeRef == nil {
		t.Fatalf("machine %s has no nodeRef", m.Name)
	}
	return m.Status.NodeRef.Name
}

// creationRecorder records, from a watch, the name of every Machine that
// appeared with the labels it was started for.
type creationRecorder struct {
	mu    sync.Mutex
	added map[string]bool
	err   error
}

// recordCreatedMachines starts watching the Machines carrying labels, from
// before any exists, and records each ADDED one until the test ends. The
// watch resumes from the last resource version it saw if the API server
// closes it, so no creation is missed.
func recordCreatedMachines(ctx context.Context, t *testing.T, labels map[string]string) *creationRecorder {
	t.Helper()
	ns := operandNamespace()
	list := &machinev1beta1.MachineList{}
	if err := cluster.List(ctx, list, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Fatalf("machines labelled %v exist before the test created any: %v", labels, machineNames(list.Items))
	}
	r := &creationRecorder{added: map[string]bool{}}
	watchFrom(t, &machinev1beta1.MachineList{}, list.ResourceVersion, func(ev watch.Event) {
		r.mu.Lock()
		defer r.mu.Unlock()
		switch ev.Type {
		case watch.Added:
			if m, ok := ev.Object.(*machinev1beta1.Machine); ok {
				r.added[m.Name] = true
			}
		case watch.Error:
			r.err = apierrors.FromObject(ev.Object)
		}
	}, client.InNamespace(ns), client.MatchingLabels(labels))
	return r
}

func (r *creationRecorder) snapshot() ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.added)), r.err
}

// check waits until the watch has delivered the creation of every machine
// in machines, then asserts that exactly want Machines were created so far.
func (r *creationRecorder) check(ctx context.Context, t *testing.T, machines []*machinev1beta1.Machine, want int) {
	t.Helper()
	waitFor(ctx, t, "the watch saw every machine's creation", func(ctx context.Context) (bool, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.err != nil {
			return true, nil // reported below
		}
		for _, m := range machines {
			if !r.added[m.Name] {
				return false, nil
			}
		}
		return true, nil
	})
	names, err := r.snapshot()
	if err != nil {
		t.Errorf("the machine watch broke, creations may be missing: %v", err)
	}
	if len(names) != want {
		t.Errorf("%d machines were created, want exactly %d: %v", len(names), want, names)
	}
}

// TestMachineSetScale scales a kubemark MachineSet 0→10→3→0, through the
// scale subresource and a merge patch of spec.replicas. At each step exactly
// that many Machines are Running with Ready nodes, the status agrees, the
// nodes of removed Machines are gone, and, from a watch started before the
// MachineSet existed, exactly 10 Machines were ever created.
func TestMachineSetScale(t *testing.T) {
	ctx := kubemarkTest(t, 9*time.Minute)
	name := "e2e-scale-" + rand.String(5)
	ms := newKubemarkMachineSet(name, 0)
	created := recordCreatedMachines(ctx, t, ms.Spec.Selector.MatchLabels)
	createMachineSet(ctx, t, ms)
	waitMachineSetReady(ctx, t, ms, 0)

	step := func(what string, do func(context.Context)) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		start := time.Now()
		do(sctx)
		t.Logf("%s took %s", what, time.Since(start).Round(100*time.Millisecond))
	}

	var ten []*machinev1beta1.Machine
	nodes := map[string]string{} // machine → node
	step("scale 0→10 (scale subresource) until 10 Running with Ready nodes", func(ctx context.Context) {
		scaleMachineSet(ctx, t, ms, 10)
		ten = waitMachineSetReady(ctx, t, ms, 10)
		for _, m := range ten {
			nodes[m.Name] = nodeOf(t, m)
		}
		created.check(ctx, t, ten, 10)
	})

	var three []*machinev1beta1.Machine
	step("scale 10→3 (merge patch of spec.replicas) until 7 machines and nodes gone", func(ctx context.Context) {
		patchMachineSet(ctx, t, ms, `{"spec":{"replicas":3}}`)
		three = waitMachineSetReady(ctx, t, ms, 3)
		kept := map[string]bool{}
		for _, m := range three {
			if _, ok := nodes[m.Name]; !ok {
				t.Errorf("machine %s was created while scaling down", m.Name)
			}
			kept[m.Name] = true
		}
		for machine, node := range nodes {
			if !kept[machine] {
				waitGone(ctx, t, "node "+node+" of removed machine "+machine, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})
			}
		}
		created.check(ctx, t, three, 10)
	})

	step("scale 3→0 (scale subresource) until no machines and nodes left", func(ctx context.Context) {
		scaleMachineSet(ctx, t, ms, 0)
		waitMachineSetReady(ctx, t, ms, 0)
		for _, m := range three {
			waitGone(ctx, t, "node "+nodes[m.Name]+" of removed machine "+m.Name, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodes[m.Name]}})
		}
		created.check(ctx, t, nil, 10)
	})
}

// TestMachineSetDeletePolicy: Machines annotated delete-machine (or the
// legacy cluster-api-delete-machine) are removed first on scale down, even
// when the policy would keep them; then the policy picks the victim.
func TestMachineSetDeletePolicy(t *testing.T) {
	for _, policy := range []machinev1beta1.MachineSetDeletePolicy{
		machinev1beta1.OldestMachineSetDeletePolicy,
		machinev1beta1.NewestMachineSetDeletePolicy,
	} {
		t.Run(string(policy), func(t *testing.T) { testDeletePolicy(t, policy) })
	}
}

func testDeletePolicy(t *testing.T, policy machinev1beta1.MachineSetDeletePolicy) {
	ctx := kubemarkTest(t, 6*time.Minute)
	name := "e2e-" + strings.ToLower(string(policy)) + "-" + rand.String(5)
	ms := newKubemarkMachineSet(name, 1)
	ms.Spec.DeletePolicy = string(policy)
	createMachineSet(ctx, t, ms)

	// Grow one Machine at a time, each created at least a second after the
	// previous one: creation timestamps have a resolution of one second, and
	// the policy can only be checked on distinct ones.
	machines := waitMachineSetReady(ctx, t, ms, 1)
	for n := int32(2); n <= 4; n++ {
		newest := slices.MaxFunc(machines, func(a, b *machinev1beta1.Machine) int {
			return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
		})
		after := newest.CreationTimestamp.Add(1500 * time.Millisecond)
		waitFor(ctx, t, fmt.Sprintf("a second past the creation of %s (%s)", newest.Name, newest.CreationTimestamp.UTC().Format(time.RFC3339)),
			func(context.Context) (bool, error) { return time.Now().After(after), nil })
		scaleMachineSet(ctx, t, ms, n)
		machines = waitMachineSetReady(ctx, t, ms, n)
	}
	slices.SortFunc(machines, func(a, b *machinev1beta1.Machine) int {
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	for i := 1; i < len(machines); i++ {
		if !machines[i-1].CreationTimestamp.Before(&machines[i].CreationTimestamp) {
			t.Fatalf("machines %s and %s share the creation timestamp %s: the test cannot tell which is older",
				machines[i-1].Name, machines[i].Name, machines[i].CreationTimestamp.UTC().Format(time.RFC3339))
		}
	}
	// victims is the order in which the policy alone would delete them.
	victims := machines
	if policy == machinev1beta1.NewestMachineSetDeletePolicy {
		slices.Reverse(victims)
	}

	// Mark the two Machines the policy would keep longest.
	annotate := func(m *machinev1beta1.Machine, key string) {
		updateMachine(ctx, t, m, func(m *machinev1beta1.Machine) {
			if m.Annotations == nil {
				m.Annotations = map[string]string{}
			}
			m.Annotations[key] = "true"
		})
	}
	annotate(victims[3], deleteMachineAnnotation)
	annotate(victims[2], legacyDeleteMachineAnnotation)
	t.Logf("policy %s would delete %s, %s, %s, %s in that order; annotated %s (%s) and %s (%s)", policy,
		victims[0].Name, victims[1].Name, victims[2].Name, victims[3].Name,
		victims[3].Name, deleteMachineAnnotation, victims[2].Name, legacyDeleteMachineAnnotation)

	expectRemaining := func(remaining []*machinev1beta1.Machine, want ...*machinev1beta1.Machine) {
		t.Helper()
		var got, wantNames []string
		for _, m := range remaining {
			got = append(got, m.Name)
		}
		for _, m := range want {
			wantNames = append(wantNames, m.Name)
		}
		slices.Sort(got)
		slices.Sort(wantNames)
		if !slices.Equal(got, wantNames) {
			t.Fatalf("remaining machines %v, want %v", got, wantNames)
		}
	}
	expectNodeGone := func(m *machinev1beta1.Machine) {
		t.Helper()
		node := nodeOf(t, m)
		waitGone(ctx, t, "node "+node+" of deleted machine "+m.Name, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})
	}

	scaleMachineSet(ctx, t, ms, 2)
	expectRemaining(waitMachineSetReady(ctx, t, ms, 2), victims[0], victims[1])
	expectNodeGone(victims[2])
	expectNodeGone(victims[3])

	scaleMachineSet(ctx, t, ms, 1)
	expectRemaining(waitMachineSetReady(ctx, t, ms, 1), victims[1])
	expectNodeGone(victims[0])
}

// TestMachineSetAutoscalerAnnotationsAndStatus: a kubemark MachineSet carries
// the scale-from-zero annotations computed from its providerSpec, and its
// status (labelSelector, observedGeneration, fullyLabeledReplicas) and scale
// subresource are right.
func TestMachineSetAutoscalerAnnotationsAndStatus(t *testing.T) {
	ctx := kubemarkTest(t, 3*time.Minute)
	name := "e2e-status-" + rand.String(5)
	ms := newKubemarkMachineSet(name, 2)
	createMachineSet(ctx, t, ms)

	// newKubemarkMachine's providerSpec: cpu "4", memory 8Gi, pods 110.
	want := map[string]string{vCPUAnnotation: "4", memoryMbAnnotation: "8192", maxPodsAnnotation: "110"}
	present := []string{capacityCPUAnnotation, capacityMemoryAnnotation, capacityMaxPodsAnnotation}
	waitFor(ctx, t, "scale-from-zero annotations on machineset "+name, func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(ms), ms); err != nil {
			return false, err
		}
		for _, k := range present {
			if ms.Annotations[k] == "" {
				return false, nil
			}
		}
		for k := range want {
			if ms.Annotations[k] == "" {
				return false, nil
			}
		}
		return true, nil
	})
	for k, v := range want {
		if ms.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, ms.Annotations[k], v)
		}
	}
	t.Logf("scale-from-zero annotations: %s=%s %s=%s %s=%s", capacityCPUAnnotation, ms.Annotations[capacityCPUAnnotation],
		capacityMemoryAnnotation, ms.Annotations[capacityMemoryAnnotation], capacityMaxPodsAnnotation, ms.Annotations[capacityMaxPodsAnnotation])

	machines := waitMachineSetReady(ctx, t, ms, 2)
	if want := metav1.FormatLabelSelector(&ms.Spec.Selector); ms.Status.LabelSelector != want {
		t.Errorf("status.labelSelector = %q, want %q", ms.Status.LabelSelector, want)
	}
	scale := &autoscalingv1.Scale{}
	if err := cluster.SubResource("scale").Get(ctx, ms, scale); err != nil {
		t.Fatalf("getting the scale subresource: %v", err)
	}
	if scale.Spec.Replicas != 2 || scale.Status.Replicas != 2 || scale.Status.Selector != ms.Status.LabelSelector {
		t.Errorf("scale subresource spec %+v status %+v, want 2 replicas and selector %q", scale.Spec, scale.Status, ms.Status.LabelSelector)
	}

	// A spec change that creates or deletes nothing is observed.
	patchMachineSet(ctx, t, ms, `{"spec":{"deletePolicy":"Newest"}}`)
	generation := ms.Generation
	waitFor(ctx, t, fmt.Sprintf("observedGeneration %d", generation), func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(ms), ms); err != nil {
			return false, err
		}
		return ms.Status.ObservedGeneration == generation, nil
	})

	// A Machine that loses a template label (not one of the selector's) still
	// counts as a replica, but no longer as fully labeled.
	stripped := machines[0]
	updateMachine(ctx, t, stripped, func(m *machinev1beta1.Machine) { delete(m.Labels, "e2e-pool") })
	waitFor(ctx, t, "fullyLabeledReplicas 1 of 2 replicas", func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(ms), ms); err != nil {
			return false, err
		}
		return ms.Status.Replicas == 2 && ms.Status.FullyLabeledReplicas == 1, nil
	})
	updateMachine(ctx, t, stripped, func(m *machinev1beta1.Machine) { m.Labels["e2e-pool"] = name })
	waitMachineSetReady(ctx, t, ms, 2)
}

// TestInvalidMachineSetFlagged: a MachineSet whose selector does not match
// its template is marked InvalidConfiguration and creates nothing; once the
// template is fixed the error clears and the Machines are created.
func TestInvalidMachineSetFlagged(t *testing.T) {
	ctx := kubemarkTest(t, 3*time.Minute)
	name := "e2e-invalid-ms-" + rand.String(5)
	ms := newKubemarkMachineSet(name, 1)
	selectorLabels := map[string]string{machineSetLabel: name + "-selected"}
	ms.Spec.Selector.MatchLabels = selectorLabels
	if err := cluster.Create(ctx, ms); err != nil {
		// Where the validating webhook is served, admission refuses it
		// (TestWebhooksRefuseInvalidObjects); the controller-side check is
		// then proven by the machineset envtests.
		if !strings.Contains(err.Error(), "spec.selector") && !strings.Contains(err.Error(), "spec.template.metadata.labels") {
			t.Fatalf("creating machineset %s: %v (want success, or a refusal naming spec.selector)", name, err)
		}
		t.Logf("admission refused the invalid machineset: %v", err)
		return
	}
	deleteMachineSetOnCleanup(t, ms)

	waitFor(ctx, t, "machineset "+name+" errorReason InvalidConfiguration naming spec.selector", func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(ms), ms); err != nil {
			return false, err
		}
		return ms.Status.ErrorReason != nil && *ms.Status.ErrorReason == machinev1beta1.InvalidConfigurationMachineSetError &&
			ms.Status.ErrorMessage != nil && strings.Contains(*ms.Status.ErrorMessage, "spec.selector"), nil
	})
	t.Logf("errorMessage: %s", *ms.Status.ErrorMessage)
	for _, labels := range []map[string]string{selectorLabels, {machineSetLabel: name}} {
		machines, err := machinesWithLabels(ctx, labels)
		if err != nil {
			t.Fatal(err)
		}
		if len(machines) != 0 {
			t.Errorf("machines labelled %v exist for the invalid machineset: %v", labels, machineNames(machines))
		}
	}
	if owned, err := machinesControlledBy(ctx, ms); err != nil || len(owned) != 0 {
		t.Errorf("the invalid machineset owns machines %v (err %v)", machineNames(owned), err)
	}

	// Fix the template: the error clears and the Machine is created.
	patchMachineSet(ctx, t, ms, fmt.Sprintf(`{"spec":{"template":{"metadata":{"labels":{%q:%q}}}}}`, machineSetLabel, selectorLabels[machineSetLabel]))
	generation := ms.Generation
	waitFor(ctx, t, "machineset "+name+" error cleared", func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(ms), ms); err != nil {
			return false, err
		}
		return ms.Status.ObservedGeneration >= generation && ms.Status.ErrorReason == nil && ms.Status.ErrorMessage == nil, nil
	})
	waitMachineSetReady(ctx, t, ms, 1)
}
