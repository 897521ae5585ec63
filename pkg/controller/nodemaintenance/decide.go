package nodemaintenance

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	nmv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/nodeutil"
)

// addedOrder is the canonical order of AddedAnnotation's items.
var addedOrder = []string{AddedCordon, AddedDrainTaint, AddedUnschedulableTaint, AddedLabel}

// owner picks the NodeMaintenance holding a node among those naming it, deleting ones too: the one
// OwnerAnnotation names (one in progress is never taken over), else the oldest, then by name.
func owner(nms []nmv1beta1.NodeMaintenance, nodeName, annotatedOwner string) *nmv1beta1.NodeMaintenance {
	var oldest *nmv1beta1.NodeMaintenance
	for i := range nms {
		switch nm := &nms[i]; {
		case nm.Spec.NodeName != nodeName:
		case annotatedOwner != "" && nm.Name == annotatedOwner:
			return nm
		case oldest == nil || cmp.Or(nm.CreationTimestamp.Compare(oldest.CreationTimestamp.Time), cmp.Compare(nm.Name, oldest.Name)) < 0:
			oldest = nm
		}
	}
	return oldest
}

func parseAdded(v string) map[string]bool {
	out := map[string]bool{}
	for _, item := range strings.Split(v, ",") {
		out[strings.TrimSpace(item)] = true // "" is never looked up
	}
	return out
}

func formatAdded(set map[string]bool) string {
	return strings.Join(slices.DeleteFunc(slices.Clone(addedOrder), func(k string) bool { return !set[k] }), ",")
}

// hasTaint and withoutTaint match by key and effect only (earlier versions set timeAdded).
func hasTaint(taints []corev1.Taint, key string, effect corev1.TaintEffect) bool {
	return slices.ContainsFunc(taints, func(t corev1.Taint) bool { return t.Key == key && t.Effect == effect })
}

func withoutTaint(taints []corev1.Taint, key string, effect corev1.TaintEffect) []corev1.Taint {
	return slices.DeleteFunc(slices.Clone(taints), func(t corev1.Taint) bool { return t.Key == key && t.Effect == effect })
}

// withMaintenanceTaints puts the missing maintenance taints on, in medik8s's order: when one is added, the
// unschedulable and drain taints go first (one already there moves, unchanged) and the others follow in
// their order; with both there nothing moves. The added ones are recorded in added.
func withMaintenanceTaints(taints []corev1.Taint, added map[string]bool) []corev1.Taint {
	keys := [][2]string{{UnschedulableTaintKey, AddedUnschedulableTaint}, {DrainTaintKey, AddedDrainTaint}}
	if hasTaint(taints, keys[0][0], corev1.TaintEffectNoSchedule) && hasTaint(taints, keys[1][0], corev1.TaintEffectNoSchedule) {
		return taints
	}
	out := make([]corev1.Taint, 0, len(taints)+2)
	for _, k := range keys {
		if i := slices.IndexFunc(taints, func(t corev1.Taint) bool { return t.Key == k[0] && t.Effect == corev1.TaintEffectNoSchedule }); i >= 0 {
			out = append(out, taints[i])
			continue
		}
		// No timeAdded: the API defines it for NoExecute only, and medik8s sets none.
		out = append(out, corev1.Taint{Key: k[0], Effect: corev1.TaintEffectNoSchedule})
		added[k[1]] = true
	}
	for _, t := range taints {
		if !(t.Effect == corev1.TaintEffectNoSchedule && (t.Key == keys[0][0] || t.Key == keys[1][0])) {
			out = append(out, t)
		}
	}
	return out
}

// planMaintenance returns the node cordoned, tainted and labelled for nmName, OwnerAnnotation and
// AddedAnnotation recording what was added in the same write; changed is false when it already is.
func planMaintenance(node *corev1.Node, nmName string) (*corev1.Node, bool) {
	n := node.DeepCopy()
	added := parseAdded(n.Annotations[AddedAnnotation])
	if !n.Spec.Unschedulable {
		n.Spec.Unschedulable = true
		added[AddedCordon] = true
	}
	n.Spec.Taints = withMaintenanceTaints(n.Spec.Taints, added)
	if n.Labels[ExcludeFromRemediationLabel] != "true" {
		metav1.SetMetaDataLabel(&n.ObjectMeta, ExcludeFromRemediationLabel, "true")
		added[AddedLabel] = true
	}
	metav1.SetMetaDataAnnotation(&n.ObjectMeta, OwnerAnnotation, nmName)
	if a := formatAdded(added); a != "" {
		n.Annotations[AddedAnnotation] = a
	} else {
		delete(n.Annotations, AddedAnnotation)
	}
	return n, !nodeMaintenanceFieldsEqual(node, n)
}

// planRelease removes what nmName recorded as added, and the record; a node nmName does not own is
// left unchanged (whatever is there was set by someone else).
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
	// The unschedulable taint belongs to the cordon: kept while another's cordon stays.
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
		maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations)
}

// drainProgress is the percentage of the pods to evict that are gone.
func drainProgress(evictionPods, pending int) int {
	if evictionPods <= 0 {
		return 100
	}
	p := (evictionPods - pending) * 100 / evictionPods
	return min(max(p, 0), 100)
}

// etcdGuardBlock says why a control-plane node's drain must wait (a ready pod to evict covered by an
// nodeutil.EtcdNamespace PodDisruptionBudget allowing no disruption), "" when it need not.
func etcdGuardBlock(node *corev1.Node, pods []corev1.Pod, pdbs []policyv1.PodDisruptionBudget) string {
	if !nodeutil.IsControlPlane(node) {
		return ""
	}
	for _, p := range pods {
		if p.Namespace != nodeutil.EtcdNamespace || p.DeletionTimestamp != nil || !nodeutil.GuardPodReady(&p) {
			continue
		}
		for _, pdb := range pdbs {
			if pdb.Namespace != nodeutil.EtcdNamespace || pdb.Status.DisruptionsAllowed > 0 || pdb.Spec.Selector == nil {
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

// pendingStatus fills the pending pods of the status, sorted.
func pendingStatus(st *nmv1beta1.NodeMaintenanceStatus, pods []corev1.Pod) {
	st.PendingPods, st.PendingPodsRefs = nil, nil
	for _, p := range slices.SortedFunc(slices.Values(pods), func(a, b corev1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	}) {
		st.PendingPodsRefs = append(st.PendingPodsRefs, nmv1beta1.PodReference{Namespace: p.Namespace, Name: p.Name})
		st.PendingPods = append(st.PendingPods, p.Name)
	}
	st.EvictionPods = max(st.EvictionPods, len(pods))
	st.DrainProgress = drainProgress(st.EvictionPods, len(pods))
}

// statusEqual compares two statuses ignoring lastUpdate.
func statusEqual(a, b nmv1beta1.NodeMaintenanceStatus) bool {
	a.LastUpdate, b.LastUpdate = nil, nil
	return equality.Semantic.DeepEqual(a, b)
}

// leaseOwnerRef makes the lease go with its Node (not as controller: the lease is shared).
func leaseOwnerRef(node *corev1.Node) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: ptr.To(false)}
}

// leaseHolder is the lease's holder, "" when free.
func leaseHolder(l *coordinationv1.Lease) string {
	if l == nil {
		return ""
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

// leaseExpiry is its last renewal (else acquisition) plus its duration; zero without either.
func leaseExpiry(l *coordinationv1.Lease) time.Time {
	from := cmp.Or(l.Spec.RenewTime, l.Spec.AcquireTime)
	if from == nil {
		return time.Time{}
	}
	return from.Add(time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)) * time.Second)
}

// leasePlan: write want (nil: nothing; created when there was none); held: ours then, to renew at
// renewAt; else holder has it until expires.
type leasePlan struct {
	want    *coordinationv1.Lease
	held    bool
	renewAt time.Time
	holder  string
	expires time.Time
}

// planLease, given the lease ns/name (cur nil: none), creates it, renews ours once less than half of
// LeaseDuration remains, takes over a free or expired one and leaves another's valid one alone.
func planLease(cur *coordinationv1.Lease, ns, name string, node *corev1.Node, now time.Time) leasePlan {
	duration := int32(LeaseDuration / time.Second)
	mt := metav1.NewMicroTime(now)
	plan := leasePlan{held: true, renewAt: now.Add(LeaseDuration / 2)}
	if cur == nil {
		plan.want = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: []metav1.OwnerReference{leaseOwnerRef(node)}},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(LeaseHolderIdentity),
				LeaseDurationSeconds: ptr.To(duration),
				AcquireTime:          &mt,
				RenewTime:            &mt,
				LeaseTransitions:     ptr.To[int32](0),
			},
		}
		return plan
	}
	holder, expires := leaseHolder(cur), leaseExpiry(cur)
	l := cur.DeepCopy() // with the Node's ref (current UID) in place of any to a Node of its name
	l.OwnerReferences = append(slices.DeleteFunc(l.OwnerReferences, func(ref metav1.OwnerReference) bool {
		return ref.APIVersion == "v1" && ref.Kind == "Node" && ref.Name == node.Name
	}), leaseOwnerRef(node))
	switch renewAt := expires.Add(-LeaseDuration / 2); {
	case holder == LeaseHolderIdentity && ptr.Deref(cur.Spec.LeaseDurationSeconds, 0) == duration && now.Before(renewAt):
		if slices.ContainsFunc(cur.OwnerReferences, func(ref metav1.OwnerReference) bool {
			return ref.APIVersion == "v1" && ref.Kind == "Node" && ref.Name == node.Name && ref.UID == node.UID
		}) {
			l = nil // nothing to write
		}
		return leasePlan{want: l, held: true, renewAt: renewAt}
	case holder == LeaseHolderIdentity: // renew
		if l.Spec.AcquireTime == nil {
			l.Spec.AcquireTime = &mt
		}
	case holder != "" && now.Before(expires):
		return leasePlan{holder: holder, expires: expires}
	default: // free (released) or expired: take it over
		l.Spec.HolderIdentity = ptr.To(LeaseHolderIdentity)
		l.Spec.AcquireTime = &mt
		l.Spec.LeaseTransitions = ptr.To(ptr.Deref(cur.Spec.LeaseTransitions, 0) + 1)
	}
	l.Spec.LeaseDurationSeconds = ptr.To(duration)
	l.Spec.RenewTime = &mt
	plan.want = l
	return plan
}

// leaseVerdict is what the maintenance does after looking at the lease.
type leaseVerdict int

const (
	leaseProceed    leaseVerdict = iota // held: maintain the node
	leaseWait                           // another's, drain not started: stay Running, touch nothing
	leaseRetry                          // another's after the drain started: count the attempt, back off
	leaseFail                           // too many attempts: release the node, fail the maintenance
	leaseStayFailed                     // failed for the lease, still another's: keep the node released
)

// The lastError messages about the lease, medik8s's texts exactly (cleared once it is held); the
// node lease API error is this project's.
const (
	leaseWaitMessage  = "failed to obtain a lease that is not owned by us"
	leaseRetryMessage = "failed to extend a lease that used to be owned by us"
	leaseFailMessage  = "maintenance failed: lease could not be extended"
	leaseErrorMessage = "cannot take the node lease"
	// leaseHeldError is medik8s's lease.AlreadyHeldError.
	leaseHeldError = "can't update or invalidate the lease because it is held by different owner: %s"
)

func isLeaseMessage(s string) bool {
	return slices.ContainsFunc([]string{leaseWaitMessage, leaseRetryMessage, leaseFailMessage, leaseErrorMessage},
		func(p string) bool { return strings.HasPrefix(s, p) })
}

// failedForLease tells a maintenance failed because another holder kept the lease.
func failedForLease(st *nmv1beta1.NodeMaintenanceStatus) bool {
	return st.Phase == nmv1beta1.MaintenanceFailed && st.ErrorOnLeaseCount > MaxLeaseErrors
}

// decideLease updates st for planLease's outcome and says what follows and when to look again (the
// renewal; the other's expiry or the doubling retry backoff, whichever is first); docs/openshift.md.
func decideLease(st *nmv1beta1.NodeMaintenanceStatus, p leasePlan, now time.Time, base time.Duration) (leaseVerdict, time.Duration) {
	if p.held {
		if failedForLease(st) {
			st.Phase = nmv1beta1.MaintenanceRunning
			st.DrainStartTime, st.DrainProgress = nil, 0
			st.PendingPods, st.PendingPodsRefs = nil, nil
			st.EvictionPods, st.TotalPods = 0, 0
		}
		st.ErrorOnLeaseCount = 0
		if isLeaseMessage(st.LastError) {
			st.LastError = ""
		}
		return leaseProceed, max(p.renewAt.Sub(now), time.Second)
	}
	untilExpiry := max(p.expires.Sub(now), 0) + 10*time.Millisecond
	held := fmt.Sprintf(leaseHeldError, p.holder)
	switch {
	case failedForLease(st):
		st.LastError = leaseFailedText(st.ErrorOnLeaseCount)
		return leaseStayFailed, untilExpiry
	case st.DrainProgress == 0: // the drain has not started (medik8s's rule)
		st.Phase = nmv1beta1.MaintenanceRunning
		st.LastError = fmt.Sprintf("%s : %s errorOnLeaseCount %d", leaseWaitMessage, held, st.ErrorOnLeaseCount)
		return leaseWait, untilExpiry
	}
	st.ErrorOnLeaseCount++
	if st.ErrorOnLeaseCount > MaxLeaseErrors {
		st.Phase = nmv1beta1.MaintenanceFailed
		st.LastError = leaseFailedText(st.ErrorOnLeaseCount)
		return leaseFail, untilExpiry
	}
	st.LastError = fmt.Sprintf("%s, incrementing error on lease count: %s, errorOnLeaseCount: %d", leaseRetryMessage, held, st.ErrorOnLeaseCount)
	return leaseRetry, min(base<<(st.ErrorOnLeaseCount-1), untilExpiry)
}

// leaseFailedText is medik8s's; it names no expiry, so another's renewals do not rewrite a failed status.
func leaseFailedText(attempts int) string {
	return fmt.Sprintf("%s after %d attempts", leaseFailMessage, attempts)
}
