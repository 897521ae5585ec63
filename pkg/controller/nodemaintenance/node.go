package nodemaintenance

import (
	"cmp"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nmv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"
)

// heldError says the node is held by another, existing NodeMaintenance.
type heldError struct{ node, owner string }

func (e *heldError) Error() string {
	return fmt.Sprintf("node %s is already in maintenance by NodeMaintenance %s", e.node, e.owner)
}

// applyNode cordons, taints and labels the node for nmName; heldError when OwnerAnnotation names another
// existing NodeMaintenance (two created at once may not see each other in the cache).
func (r *Reconciler) applyNode(ctx context.Context, nodeName, nmName string) error {
	_, _, err := r.updateNode(ctx, nodeName, func(n *corev1.Node) (*corev1.Node, bool, error) {
		if o := n.Annotations[OwnerAnnotation]; o != "" && o != nmName {
			other := &nmv1beta1.NodeMaintenance{}
			switch err := cmp.Or[client.Reader](r.opts.APIReader, r.opts.Client).Get(ctx, client.ObjectKey{Name: o}, other); {
			case apierrors.IsNotFound(err): // a stale record: planMaintenance takes it over
			case err != nil:
				return nil, false, fmt.Errorf("getting NodeMaintenance %s named by node %s: %w", o, nodeName, err)
			case other.Spec.NodeName == nodeName:
				return nil, false, &heldError{node: nodeName, owner: o}
			}
		}
		want, changed := planMaintenance(n, nmName)
		return want, changed, nil
	})
	return err
}

// releaseNode undoes what nm recorded on its node (if any). It returns the node (nil when gone) when no
// other NodeMaintenance holds it, which is when medik8s would uncordon it (and record UncordonNode).
func (r *Reconciler) releaseNode(ctx context.Context, nm *nmv1beta1.NodeMaintenance) (*corev1.Node, error) {
	held := false
	node, _, err := r.updateNode(ctx, nm.Spec.NodeName, func(n *corev1.Node) (*corev1.Node, bool, error) {
		o := n.Annotations[OwnerAnnotation]
		held = o != "" && o != nm.Name
		want, changed := planRelease(n, nm.Name)
		return want, changed, nil
	})
	if apierrors.IsNotFound(err) || held {
		return nil, nil
	}
	return node, err
}

// updateNode reads the node uncached, applies plan and writes the result under the read's
// resourceVersion, re-reading on conflicts; it returns the node as last read or written.
func (r *Reconciler) updateNode(ctx context.Context, nodeName string, plan func(*corev1.Node) (*corev1.Node, bool, error)) (*corev1.Node, bool, error) {
	changed := false
	var node *corev1.Node
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		n, err := r.opts.KubeClient.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		node = n
		want, ok, err := plan(n)
		if err != nil || !ok {
			return err
		}
		if node, err = r.opts.KubeClient.CoreV1().Nodes().Update(ctx, want, metav1.UpdateOptions{FieldManager: ControllerName}); err != nil {
			return err
		}
		changed = true
		return nil
	})
	if err != nil { // NotFound and heldError are still found through the wrapping
		return nil, changed, fmt.Errorf("updating node %s: %w", nodeName, err)
	}
	return node, changed, nil
}
