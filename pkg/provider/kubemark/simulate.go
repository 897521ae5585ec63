package kubemark

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kubemarkv1alpha1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/kubemark/v1alpha1"
	"github.com/machine-api-operator/machine-api-operator/pkg/nodeutil"
)

// HealthWindow is the node's simulated health at some moment: the spell it is in, from Since (registration
// or failure) until Until (the next change; zero: never).
type HealthWindow struct {
	Healthy      bool // the node is to be kept Ready
	Since, Until time.Time
}

// HealthAt is the health schedule (docs/kubemark.md): given the defaulted policy, when the node registered and
// now, whether the node is healthy and when that changes. Times before registration are the first healthy spell.
func HealthAt(policy kubemarkv1alpha1.HealthPolicy, registeredAt, now time.Time) HealthWindow {
	after := ptr.Deref(policy.UnhealthyAfter, metav1.Duration{}).Duration
	if after <= 0 {
		return HealthWindow{Healthy: true, Since: registeredAt}
	}
	if policy.Mode != kubemarkv1alpha1.HealthModePeriodic {
		failAt := registeredAt.Add(after)
		if now.Before(failAt) {
			return HealthWindow{Healthy: true, Since: registeredAt, Until: failAt}
		}
		return HealthWindow{Healthy: false, Since: failAt}
	}

	spell := cmp.Or(max(ptr.Deref(policy.UnhealthyFor, metav1.Duration{}).Duration, 0), after)
	elapsed := now.Sub(registeredAt)
	if elapsed < 0 {
		return HealthWindow{Healthy: true, Since: registeredAt, Until: registeredAt.Add(after)}
	}
	cycle := after + spell
	if cycle <= 0 { // overflow: durations of centuries
		cycle = math.MaxInt64
	}
	start := registeredAt.Add(elapsed / cycle * cycle)
	failAt := start.Add(after)
	if now.Before(failAt) {
		return HealthWindow{Healthy: true, Since: start, Until: failAt}
	}
	return HealthWindow{Healthy: false, Since: failAt, Until: start.Add(cycle)}
}

// ensureUnhealthy takes over the Node's Lease, swaps the kwok annotation for SimulatedUnhealthyAnnotation
// and sets Ready=Unknown, each only when it differs. See docs/kubemark.md.
func (a *Actuator) ensureUnhealthy(ctx context.Context, node *corev1.Node, w HealthWindow) error {
	if err := a.holdLease(ctx, node, w.Since, w.Until); err != nil {
		return err
	}
	since := w.Since.UTC().Truncate(time.Second)
	sinceText := since.Format(time.RFC3339)
	if _, kwok := node.Annotations[KwokNodeAnnotation]; kwok || node.Annotations[SimulatedUnhealthyAnnotation] != sinceText {
		orig := node.DeepCopy()
		if node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		delete(node.Annotations, KwokNodeAnnotation)
		node.Annotations[SimulatedUnhealthyAnnotation] = sinceText
		if err := a.client.Patch(ctx, node, client.MergeFrom(orig)); err != nil {
			return fmt.Errorf("marking node %q unhealthy: %w", node.Name, err)
		}
	}

	ready := corev1.NodeCondition{
		Type:               corev1.NodeReady,
		Status:             corev1.ConditionUnknown,
		Reason:             ReadyReasonSimulatedUnhealthy,
		Message:            "kubemark health simulation: the node is no longer kept Ready (providerSpec health)",
		LastHeartbeatTime:  metav1.NewTime(since),
		LastTransitionTime: metav1.NewTime(since),
	}
	if cur := nodeutil.ReadyCondition(node); cur != nil && cur.Status == ready.Status && cur.Reason == ready.Reason &&
		cur.LastTransitionTime.Equal(&ready.LastTransitionTime) {
		return nil
	}
	orig := node.DeepCopy()
	nodeutil.SetReadyCondition(node, ready)
	if err := a.client.Status().Patch(ctx, node, client.StrategicMergeFrom(orig)); err != nil {
		return fmt.Errorf("setting Ready=Unknown on node %q: %w", node.Name, err)
	}
	log.FromContext(ctx).Info("health simulation: node made unhealthy", "node", node.Name, "since", sinceText)
	return nil
}

// ensureHealthy undoes ensureUnhealthy on a Node that carries SimulatedUnhealthyAnnotation, leaving the Ready
// condition to kwok (which creates a fresh Lease).
func (a *Actuator) ensureHealthy(ctx context.Context, node *corev1.Node) error {
	if _, marked := node.Annotations[SimulatedUnhealthyAnnotation]; !marked {
		return nil
	}
	if err := a.releaseLease(ctx, node.Name, ""); err != nil {
		return err
	}
	orig := node.DeepCopy()
	delete(node.Annotations, SimulatedUnhealthyAnnotation)
	node.Annotations[KwokNodeAnnotation] = KwokNodeAnnotationValue
	if err := a.client.Patch(ctx, node, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("handing node %q back to kwok: %w", node.Name, err)
	}
	log.FromContext(ctx).Info("health simulation: node handed back to kwok", "node", node.Name)
	return nil
}

// leaseKey is the key of a Node's Lease.
func leaseKey(nodeName string) types.NamespacedName {
	return types.NamespacedName{Namespace: corev1.NamespaceNodeLease, Name: nodeName}
}

// leaseSeconds is the leaseDurationSeconds that makes a Lease renewed at renew expire at until (zero: never).
func leaseSeconds(renew, until time.Time) int32 {
	if until.IsZero() {
		return math.MaxInt32
	}
	s := math.Ceil(until.Sub(renew).Seconds())
	return int32(min(max(s, 1), math.MaxInt32))
}

// holdLease makes LeaseHolderIdentity the holder of the Node's Lease until until (zero: for ever), creating
// the Lease (renewed at since, owned by the Node) when there is none.
func (a *Actuator) holdLease(ctx context.Context, node *corev1.Node, since, until time.Time) error {
	lease := &coordinationv1.Lease{}
	err := a.client.Get(ctx, leaseKey(node.Name), lease)
	found := err == nil
	switch {
	case apierrors.IsNotFound(err):
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Namespace:       corev1.NamespaceNodeLease,
			Name:            node.Name,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}},
		}}
	case err != nil:
		return fmt.Errorf("getting the lease of node %q: %w", node.Name, err)
	}
	renew := ptr.Deref(lease.Spec.RenewTime, metav1.NewMicroTime(since)).Time
	seconds := leaseSeconds(renew, until)
	held := ptr.Deref(lease.Spec.HolderIdentity, "") == LeaseHolderIdentity
	if held && ptr.Deref(lease.Spec.LeaseDurationSeconds, 0) == seconds && lease.Spec.RenewTime != nil {
		return nil
	}
	if !held && found {
		lease.Spec.LeaseTransitions = new(ptr.Deref(lease.Spec.LeaseTransitions, 0) + 1)
	}
	lease.Spec.HolderIdentity = new(LeaseHolderIdentity)
	if lease.Spec.RenewTime == nil {
		lease.Spec.RenewTime = new(metav1.NewMicroTime(renew))
	}
	lease.Spec.LeaseDurationSeconds = &seconds
	if found {
		// The resourceVersion makes a concurrent renewal by kwok a conflict; the retry sees the new renewTime.
		err = a.client.Update(ctx, lease)
	} else {
		err = a.client.Create(ctx, lease)
	}
	if err != nil {
		return fmt.Errorf("taking the lease of node %q: %w", node.Name, err)
	}
	return nil
}

// releaseLease deletes the Node's Lease if LeaseHolderIdentity holds it (and, when nodeUID is set, only if it
// belongs to that Node or to none).
func (a *Actuator) releaseLease(ctx context.Context, nodeName string, nodeUID types.UID) error {
	lease := &coordinationv1.Lease{}
	if err := a.client.Get(ctx, leaseKey(nodeName), lease); err != nil {
		// Forbidden: without access to node Leases (config/kubemark-rbac.yaml) it cannot have taken one either.
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
			return nil
		}
		return fmt.Errorf("getting the lease of node %q: %w", nodeName, err)
	}
	if ptr.Deref(lease.Spec.HolderIdentity, "") != LeaseHolderIdentity {
		return nil
	}
	if nodeUID != "" {
		for _, o := range lease.OwnerReferences {
			if o.Kind == "Node" && o.UID != nodeUID {
				return nil
			}
		}
	}
	uid, rv := lease.UID, lease.ResourceVersion
	err := a.client.Delete(ctx, lease, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("releasing the lease of node %q: %w", nodeName, err)
	}
	return nil
}
