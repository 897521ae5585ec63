package nodemaintenance

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	nmv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"
)

// addedOrder is the canonical order of AddedAnnotation's items.
var addedOrder = []string{AddedCordon, AddedDrainTaint, AddedUnschedulableTaint, AddedLabel}

// owner picks the NodeMaintenance that holds a node among those naming it
// (deleting ones included: they hold it until released). The one the node's
// OwnerAnnotation names wins, so a maintenance in progress is never taken
// over; otherwise the oldest by creationTimestamp, then by name.
func owner(nms []nmv1beta1.NodeMaintenance, nodeName, annotatedOwner string) *nmv1beta1.NodeMaintenance {
	var candidates []*nmv1beta1.NodeMaintenance
	for i := range nms {
		if nms[i].Spec.NodeName != nodeName {
			continue
		}
		if annotatedOwner != "" && nms[i].Name == annotatedOwner {
			return &nms[i]
		}
		candidates = append(candidates, &nms[i])
	}
	if len(candidates) == 0 {
		return nil
	}
	sort.Slice(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	return candidates[0]
}

func parseAdded(v string) map[string]bool {
	out := map[string]bool{}
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out[item] = true
		}
	}
	return out
}

func formatAdded(set map[string]bool) string {
	var items []string
	for _, k := range addedOrder {
		if set[k] {
			items = append(items, k)
		}
	}
	return strings.Join(items, ",")
}

func hasTaint(taints []corev1.Taint, key string, effect corev1.TaintEffect) bool {
	return slices.ContainsFunc(taints, func(t corev1.Taint) bool { return t.Key == key && t.Effect == effect })
}

func withoutTaint(taints []corev1.Taint, key string, effect corev1.TaintEffect) []corev1.Taint {
	return slices.DeleteFunc(slices.Clone(taints), func(t corev1.Taint) bool { return t.Key == key && t.Effect == effect })
}

// planMaintenance returns the node as maintenance nmName wants it: cordoned,
// tainted, labelled, with OwnerAnnotation and AddedAnnotation recording what
// was added (in the same write, so nothing is changed unrecorded). What was
// already there is not recorded and so never removed later. A record left by
// a NodeMaintenance that no longer exists is taken over. changed is false
// when the node is already as wanted.
func planMaintenance(node *corev1.Node, nmName string, now time.Time) (*corev1.Node, bool) {
	n := node.DeepCopy()
	added := parseAdded(n.Annotations[AddedAnnotation])
	if !n.Spec.Unschedulable {
		n.Spec.Unschedulable = true
		added[AddedCordon] = true
	}
	if !hasTaint(n.Spec.Taints, DrainTaintKey, corev1.TaintEffectNoSchedule) {
		t := metav1.NewTime(now)
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: DrainTaintKey, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &t})
		added[AddedDrainTaint] = true
	}
	if !hasTaint(n.Spec.Taints, UnschedulableTaintKey, corev1.TaintEffectNoSchedule) {
		t := metav1.NewTime(now)
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: UnschedulableTaintKey, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &t})
		added[AddedUnschedulableTaint] = true
	}
	if v, ok := n.Labels[ExcludeFromRemediationLabel]; !ok || v != "true" {
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[ExcludeFromRemediationLabel] = "true"
		added[AddedLabel] = true
	}
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[OwnerAnnotation] = nmName
	if a := formatAdded(added); a != "" {
		n.Annotations[AddedAnnotation] = a
	} else {
		delete(n.Annotations, AddedAnnotation)
	}
	return n, !nodeMaintenanceFieldsEqual(node, n)
}

// planRelease returns the node with what maintenance nmName recorded as
// added removed, and its record gone. A node not owned by nmName is left
// unchanged: whatever is there was set by someone else.
func planRelease(node *corev1.Node, nmName string) (*corev1.Node, bool) {
	if node.Annotations[OwnerAnnotation] != nmName {
		return node, false
	}
	n := node.DeepCopy()
	added := parseAdded(n.Annotations[AddedAnnotation])
	if added[AddedCordon] {
		n.Spec.Unschedulable = false
	}
	if added[AddedDrainTaint] {
		n.Spec.Taints = withoutTaint(n.Spec.Taints, DrainTaintKey, corev1.TaintEffectNoSchedule)
	}
	// The unschedulable taint belongs to the cordon: keep it while the node
	// stays cordoned by someone else.
	if added[AddedUnschedulableTaint] && !n.Spec.Unschedulable {
		n.Spec.Taints = withoutTaint(n.Spec.Taints, UnschedulableTaintKey, corev1.TaintEffectNoSchedule)
	}
	if added[AddedLabel] && n.Labels[ExcludeFromRemediationLabel] == "true" {
		delete(n.Labels, ExcludeFromRemediationLabel)
	}
	delete(n.Annotations, OwnerAnnotation)
	delete(n.Annotations, AddedAnnotation)
	if len(n.Spec.Taints) == 0 {
		n.Spec.Taints = nil
	}
	return n, !nodeMaintenanceFieldsEqual(node, n)
}

func nodeMaintenanceFieldsEqual(a, b *corev1.Node) bool {
	return a.Spec.Unschedulable == b.Spec.Unschedulable &&
		slices.EqualFunc(a.Spec.Taints, b.Spec.Taints, func(x, y corev1.Taint) bool { return x.MatchTaint(&y) && x.Value == y.Value }) &&
		mapsEqual(a.Labels, b.Labels) && mapsEqual(a.Annotations, b.Annotations)
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// drainProgress is the percentage of the pods to evict that are gone.
func drainProgress(evictionPods, pending int) int {
	if evictionPods <= 0 {
		return 100
	}
	p := (evictionPods - pending) * 100 / evictionPods
	return min(max(p, 0), 100)
}

func isControlPlane(n *corev1.Node) bool {
	_, cp := n.Labels[ControlPlaneNodeRoleLabel]
	_, master := n.Labels[MasterNodeRoleLabel]
	return cp || master
}

// etcdGuardBlock reports why draining a control-plane node must wait: one of
// the pods to evict is in EtcdNamespace and covered by a PodDisruptionBudget
// there that allows no disruption. Empty when the drain may go on (not a
// control-plane node, or nothing blocked).
func etcdGuardBlock(node *corev1.Node, pods []corev1.Pod, pdbs []policyv1.PodDisruptionBudget) string {
	if !isControlPlane(node) {
		return ""
	}
	for _, p := range pods {
		if p.Namespace != EtcdNamespace || p.DeletionTimestamp != nil {
			continue
		}
		for _, pdb := range pdbs {
			if pdb.Namespace != EtcdNamespace || pdb.Status.DisruptionsAllowed > 0 || pdb.Spec.Selector == nil {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
			if err != nil || sel.Empty() || !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			return fmt.Sprintf("waiting for the etcd quorum guard: PodDisruptionBudget %s/%s allows no disruption of pod %s on control-plane node %s",
				pdb.Namespace, pdb.Name, p.Name, node.Name)
		}
	}
	return ""
}

// drainDeadline returns when the drain times out; ok is false when it never does.
func drainDeadline(nm *nmv1beta1.NodeMaintenance) (time.Time, bool) {
	if nm.Spec.DrainTimeout == nil || nm.Status.DrainStartTime == nil {
		return time.Time{}, false
	}
	return nm.Status.DrainStartTime.Add(nm.Spec.DrainTimeout.Duration), true
}

// pendingStatus fills the pending pods of the status, sorted.
func pendingStatus(st *nmv1beta1.NodeMaintenanceStatus, pods []corev1.Pod) {
	refs := make([]nmv1beta1.PodReference, 0, len(pods))
	for _, p := range pods {
		refs = append(refs, nmv1beta1.PodReference{Namespace: p.Namespace, Name: p.Name})
	}
	sort.Slice(refs, func(i, j int) bool {
		if refs[i].Namespace != refs[j].Namespace {
			return refs[i].Namespace < refs[j].Namespace
		}
		return refs[i].Name < refs[j].Name
	})
	st.PendingPods, st.PendingPodsRefs = nil, nil
	for _, r := range refs {
		st.PendingPods = append(st.PendingPods, r.Name)
		st.PendingPodsRefs = append(st.PendingPodsRefs, r)
	}
	if len(pods) > st.EvictionPods {
		st.EvictionPods = len(pods)
	}
	st.DrainProgress = drainProgress(st.EvictionPods, len(pods))
}

// statusEqual compares two statuses ignoring lastUpdate.
func statusEqual(a, b nmv1beta1.NodeMaintenanceStatus) bool {
	a.LastUpdate, b.LastUpdate = nil, nil
	return equality.Semantic.DeepEqual(a, b)
}
