package machine

import (
	"context"
	"fmt"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cordonForDrain cordons the node with DrainingAnnotation, unless it is a control-plane node and another
// one is being drained by us: that one's name is returned then. The check and cordon are serialized and
// read uncached, so two concurrent reconciles cannot both start a control-plane drain.
func (r *Reconciler) cordonForDrain(ctx context.Context, node *corev1.Node, m *machinev1beta1.Machine) (string, error) {
	want := m.Namespace + "/" + m.Name
	if node.Spec.Unschedulable && node.Annotations[DrainingAnnotation] == want {
		return "", nil
	}
	if isControlPlaneNode(node) {
		r.cpMu.Lock()
		defer r.cpMu.Unlock()
		reader := r.freshReader()
		nodes := &corev1.NodeList{}
		if err := reader.List(ctx, nodes); err != nil {
			return "", fmt.Errorf("listing nodes: %w", err)
		}
		active := map[string]bool{}
		for i := range nodes.Items {
			n := &nodes.Items[i]
			owner := n.Annotations[DrainingAnnotation]
			if _, seen := active[owner]; seen || !isControlPlaneNode(n) || !cordonedByUs(n) || n.DeletionTimestamp != nil {
				continue
			}
			ok, err := drainOwnerActive(ctx, reader, owner)
			if err != nil {
				return "", err
			}
			active[owner] = ok
		}
		if ok, other := controlPlaneDrainAllowed(node, nodes.Items, active); !ok {
			return other, nil
		}
	}
	base := node.DeepCopy()
	node.Spec.Unschedulable = true
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[DrainingAnnotation] = want
	if err := r.client.Patch(ctx, node, client.MergeFrom(base)); err != nil {
		return "", fmt.Errorf("cordoning node %s: %w", node.Name, err)
	}
	return "", nil
}

// drainOwnerActive reports whether the Machine a DrainingAnnotation names exists and is being deleted.
func drainOwnerActive(ctx context.Context, reader client.Reader, owner string) (bool, error) {
	ns, name, ok := strings.Cut(owner, "/")
	if !ok || ns == "" || name == "" {
		return false, nil
	}
	m := &machinev1beta1.Machine{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("getting Machine %s named by the %s annotation: %w", owner, DrainingAnnotation, err)
	}
	return !m.DeletionTimestamp.IsZero(), nil
}
