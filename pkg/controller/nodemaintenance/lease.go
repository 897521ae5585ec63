package nodemaintenance

// The node lease, shared with NodeHealthCheck and Self Node Remediation, says who has the node
// (docs/architecture.md); planLease and decideLease decide, this file reads and writes.

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	nmv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
)

// LeaseName is the name of a node's lease.
func LeaseName(nodeName string) string { return LeaseNamePrefix + nodeName }

func (r *Reconciler) leaseRef(nodeName string) string {
	return r.opts.LeaseNamespace + "/" + LeaseName(nodeName)
}

// takeLease creates, renews or takes over the node's lease as planLease decides (read uncached, written
// under its resourceVersion); the lease namespace is the install's to create.
func (r *Reconciler) takeLease(ctx context.Context, node *corev1.Node) (leasePlan, error) {
	leases := r.opts.KubeClient.CoordinationV1().Leases(r.opts.LeaseNamespace)
	name := LeaseName(node.Name)
	var plan leasePlan
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur, err := leases.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cur = nil
		} else if err != nil {
			return err
		}
		plan = planLease(cur, r.opts.LeaseNamespace, name, node, r.opts.Clock.Now())
		if plan.want == nil {
			return nil
		}
		if cur != nil {
			_, err := leases.Update(ctx, plan.want, metav1.UpdateOptions{FieldManager: ControllerName})
			return err
		}
		_, err = leases.Create(ctx, plan.want, metav1.CreateOptions{FieldManager: ControllerName})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace %s does not exist: the Machine API install creates it and the Role that lets this controller hold leases there; create both, or point --lease-namespace at a namespace that has them: %w",
				r.opts.LeaseNamespace, err)
		}
		if apierrors.IsAlreadyExists(err) { // created meanwhile: look again
			return apierrors.NewConflict(coordinationv1.Resource("leases"), name, err)
		}
		if err == nil {
			log.FromContext(ctx).V(1).Info("created the node lease", "lease", r.leaseRef(node.Name))
		}
		return err
	})
	if err != nil {
		return leasePlan{}, fmt.Errorf("lease %s: %w", r.leaseRef(node.Name), err)
	}
	return plan, nil
}

// releaseLease deletes the node's lease if this controller holds it (that
// version only: one taken meanwhile is re-read and left alone).
func (r *Reconciler) releaseLease(ctx context.Context, nodeName string) error {
	leases := r.opts.KubeClient.CoordinationV1().Leases(r.opts.LeaseNamespace)
	name := LeaseName(nodeName)
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil || leaseHolder(cur) != LeaseHolderIdentity {
			return client.IgnoreNotFound(err)
		}
		err = leases.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID, ResourceVersion: &cur.ResourceVersion}})
		if err == nil {
			log.FromContext(ctx).V(1).Info("released the node lease", "lease", r.leaseRef(nodeName))
		}
		return client.IgnoreNotFound(err)
	})
	if err != nil {
		return fmt.Errorf("releasing lease %s: %w", r.leaseRef(nodeName), err)
	}
	return nil
}

// leaseStep holds the node's lease before the node is touched and fills the outcome into st;
// proceed is false when the node is to be left alone; res says when to look again (or renew).
func (r *Reconciler) leaseStep(ctx context.Context, nm *nmv1beta1.NodeMaintenance, node *corev1.Node, st *nmv1beta1.NodeMaintenanceStatus) (res ctrl.Result, proceed bool, err error) {
	plan, err := r.takeLease(ctx, node)
	if err != nil { // retried with backoff; it does not count towards failing
		LeaseFailuresTotal.WithLabelValues(LeaseFailureError).Inc()
		if st.Phase == "" {
			st.Phase = nmv1beta1.MaintenanceRunning
		}
		st.LastError = patch.Truncate(leaseErrorMessage+": "+err.Error(), 1024)
		return ctrl.Result{}, false, err
	}
	restart := failedForLease(st)
	verdict, after := decideLease(st, plan, r.opts.Clock.Now(), r.opts.PollInterval)
	res = ctrl.Result{RequeueAfter: after}
	switch verdict {
	case leaseProceed:
		if restart { // counted afresh, as a new maintenance
			if err := r.countPods(ctx, node.Name, st); err != nil {
				return ctrl.Result{}, false, err
			}
		}
		return res, true, nil
	case leaseWait, leaseRetry:
		LeaseFailuresTotal.WithLabelValues(LeaseFailureHeld).Inc()
		log.FromContext(ctx).V(1).Info("the node lease is held by another holder", "holder", plan.holder, "expires", plan.expires, "errorOnLeaseCount", st.ErrorOnLeaseCount)
		return res, false, nil
	case leaseFail:
		LeaseFailuresTotal.WithLabelValues(LeaseFailureHeld).Inc()
	}
	// Failed for the lease: give the node back to the lease holder.
	released, err := r.releaseNode(ctx, nm)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	if released != nil && verdict == leaseFail { // medik8s: on the Node, when it gives the node up
		r.events.Eventf(released, nil, corev1.EventTypeNormal, EventUncordonNode, "Release", "%s", EventMessageUncordonNode)
	}
	return res, false, nil
}

// soonest merges two results: the earlier requeue wins.
func soonest(a, b ctrl.Result) ctrl.Result {
	if a.RequeueAfter <= 0 || (b.RequeueAfter > 0 && b.RequeueAfter < a.RequeueAfter) {
		return b
	}
	return a
}
