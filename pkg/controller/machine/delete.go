package machine

import (
	"context"
	"fmt"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// reconcileDelete runs the deletion pipeline as far as it can go in one pass: phase Deleting → drain →
// preTerminate hooks → Delete → Exists=false → delete the Node → remove the finalizer.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	m := s.m
	logger := log.FromContext(ctx)
	if !controllerutil.ContainsFinalizer(m, machinev1beta1.MachineFinalizer) {
		s.gone = true // not ours any more (another finalizer keeps the object): hands off
		return ctrl.Result{}, nil
	}
	setPhase(m, machinev1beta1.PhaseDeleting)

	if decideDeletionStage(m) == stageDrain {
		if res, done, err := r.drainStage(ctx, s); !done || err != nil {
			return res, err
		}
	}
	if decideDeletionStage(m) == stageWaitPreTerminate {
		// Terminable names the hooks; removing them is a Machine update that wakes us.
		logger.V(1).Info("waiting for pre-terminate hooks", "hooks", hookNames(m.Spec.LifecycleHooks.PreTerminate))
		return ctrl.Result{}, nil
	}

	if r.heldByGate(ctx, OperationDelete) {
		return ctrl.Result{RequeueAfter: gateRequeueAfter}, nil
	}
	// An instance the provider could never describe (no addresses) may go despite an invalid configuration.
	neverDescribed := func(err error) bool { return IsInvalidConfiguration(err) && len(m.Status.Addresses) == 0 }
	if err := r.callProvider(ctx, s, OperationDelete, r.Actuator.Delete); err != nil {
		if !neverDescribed(err) {
			if _, ok := AsRequeueAfter(err); !ok {
				r.events.Once(s.key, "", m, corev1.EventTypeWarning, EventFailedDelete, "Delete", err.Error())
			}
			return requeueOrError(err)
		}
		logger.Info("ignoring invalid configuration on delete: the Machine never got addresses", "error", err.Error())
	}
	r.events.Clear(s.key, "", EventFailedDelete)

	exists, err := r.exists(ctx, s)
	if err != nil && !neverDescribed(err) {
		return requeueOrError(err)
	}
	if exists && err == nil {
		after := r.waitBackoff.When(s.key) // still terminating
		logger.V(1).Info("waiting for the instance to be deleted", "requeueAfter", after)
		return ctrl.Result{RequeueAfter: after}, nil
	}
	r.waitBackoff.Forget(s.key)

	if err := r.deleteNode(ctx, m.Status.NodeRef); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.removeFinalizer(ctx, s)
}

// removeFinalizer ends a deletion: the final status (a watcher sees Drained=True before the Machine
// disappears, as on OpenShift), then our finalizer, then the Deleted event.
func (r *Reconciler) removeFinalizer(ctx context.Context, s *scope) error {
	if err := r.patchStatus(ctx, s); err != nil {
		return err
	}
	if err := r.patchObject(ctx, s, true, func(m *machinev1beta1.Machine) {
		controllerutil.RemoveFinalizer(m, machinev1beta1.MachineFinalizer)
	}); err != nil {
		if apierrors.IsNotFound(err) {
			s.gone = true
			return nil
		}
		return fmt.Errorf("removing finalizer: %w", err)
	}
	s.gone = true
	r.drainBackoff.Forget(s.key)
	r.events.Forget(s.key)
	r.events.Eventf(s.m, nil, corev1.EventTypeNormal, EventDeleted, "Delete", "Deleted the instance%s and node", providerIDSuffix(s.m))
	log.FromContext(ctx).Info("machine deleted: instance gone, node deleted, finalizer removed")
	return nil
}

// machineNode returns the cached Node nodeRef names; nil when it is gone or a new Node reuses the name.
func (r *Reconciler) machineNode(ctx context.Context, ref *corev1.ObjectReference) (*corev1.Node, error) {
	if ref == nil || ref.Name == "" {
		return nil, nil
	}
	node := &corev1.Node{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Name: ref.Name}, node); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("getting node %s: %w", ref.Name, err)
	case ref.UID != "" && node.UID != ref.UID:
		return nil, nil
	}
	return node, nil
}

// deleteNode deletes the Machine's Node, with nodeRef's UID as precondition, unless the cache shows it gone.
func (r *Reconciler) deleteNode(ctx context.Context, ref *corev1.ObjectReference) error {
	if node, err := r.machineNode(ctx, ref); err != nil || node == nil || node.DeletionTimestamp != nil {
		return err // NotFound: the provider's Delete removed it (kubemark), or it never registered
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ref.Name}}
	var opts []client.DeleteOption
	if ref.UID != "" {
		opts = append(opts, client.Preconditions{UID: &ref.UID})
	}
	err := r.Client.Delete(ctx, node, opts...)
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err) && ref.UID != "":
		log.FromContext(ctx).Info("not deleting node: it was replaced by a new node with the same name", "node", ref.Name)
		return nil
	default:
		return fmt.Errorf("deleting node %s: %w", ref.Name, err)
	}
}
