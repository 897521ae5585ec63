package machine

import (
	"context"
	"fmt"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// reconcileDelete runs the deletion pipeline, as far as it can go in one
// pass: phase Deleting → drain → preTerminate hooks → Delete → Exists=false →
// delete the Node → remove the finalizer.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	m := s.m
	logger := log.FromContext(ctx)
	if !controllerutil.ContainsFinalizer(m, machinev1beta1.MachineFinalizer) {
		// Not ours any more (another finalizer keeps the object): hands off.
		s.gone = true
		return ctrl.Result{}, nil
	}
	setPhase(m, machinev1beta1.PhaseDeleting)

	if decideDeletionStage(m) == stageDrain {
		res, done, err := r.drainStage(ctx, s)
		if !done || err != nil {
			return res, err
		}
	}
	if decideDeletionStage(m) == stageWaitPreTerminate {
		// The Terminable condition names the hooks; removing them is a
		// Machine update that wakes the controller.
		logger.V(1).Info("waiting for pre-terminate hooks", "hooks", hookNames(m.Spec.LifecycleHooks.PreTerminate))
		return ctrl.Result{}, nil
	}

	if r.heldByGate(ctx, OperationDelete) {
		return ctrl.Result{RequeueAfter: gateRequeueAfter}, nil
	}
	if err := r.callProvider(ctx, s, OperationDelete, r.actuator.Delete); err != nil {
		switch {
		case IsInvalidConfiguration(err) && len(m.Status.Addresses) == 0:
			// Never got an instance the provider could describe: deletable.
			logger.Info("ignoring invalid configuration on delete: the Machine never got addresses", "error", err.Error())
		default:
			if _, ok := AsRequeueAfter(err); !ok {
				r.events.Once(s.key, "", m, corev1.EventTypeWarning, EventFailedDelete, "Delete", err.Error())
			}
			return requeueOrError(err)
		}
	}
	r.events.Clear(s.key, "", EventFailedDelete)

	exists, err := r.exists(ctx, s)
	if err != nil {
		if !(IsInvalidConfiguration(err) && len(m.Status.Addresses) == 0) {
			return requeueOrError(err)
		}
		exists = false
	}
	if exists {
		// Still terminating: look again with backoff.
		after := r.waitBackoff.When(s.key)
		logger.V(1).Info("waiting for the instance to be deleted", "requeueAfter", after)
		return ctrl.Result{RequeueAfter: after}, nil
	}
	r.waitBackoff.Forget(s.key)

	if ref := m.Status.NodeRef; ref != nil && ref.Name != "" {
		if err := r.deleteNode(ctx, ref); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, r.removeFinalizer(ctx, s)
}

// removeFinalizer ends a deletion once the instance and the Node are gone:
// the final status, then our finalizer, then the Deleted event.
func (r *Reconciler) removeFinalizer(ctx context.Context, s *scope) error {
	m := s.m
	// The final status is written even when the object goes with our
	// finalizer: a watcher sees Drained=True before the Machine disappears,
	// as on OpenShift, where the drain controller persists it first.
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
	r.events.Eventf(m, nil, corev1.EventTypeNormal, EventDeleted, "Delete", "Deleted the instance%s and node", providerIDSuffix(m))
	log.FromContext(ctx).Info("machine deleted: instance gone, node deleted, finalizer removed")
	return nil
}

// deleteNode deletes the Machine's Node unless the cache shows it gone,
// being deleted or replaced (a cache that lags only costs a request the
// orphan collector would otherwise make). NotFound is fine; when nodeRef has
// a UID it is a precondition, so a new Node that reuses the name survives.
func (r *Reconciler) deleteNode(ctx context.Context, ref *corev1.ObjectReference) error {
	node := &corev1.Node{}
	switch err := r.client.Get(ctx, client.ObjectKey{Name: ref.Name}, node); {
	case apierrors.IsNotFound(err):
		// The provider's Delete removed it (kubemark), or it never
		// registered: nothing to delete, no request.
		return nil
	case err != nil:
		return fmt.Errorf("getting node %s: %w", ref.Name, err)
	case node.DeletionTimestamp != nil, ref.UID != "" && node.UID != ref.UID:
		return nil
	}
	node = &corev1.Node{}
	node.Name = ref.Name
	var opts []client.DeleteOption
	if ref.UID != "" {
		opts = append(opts, client.Preconditions{UID: &ref.UID})
	}
	err := r.client.Delete(ctx, node, opts...)
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
