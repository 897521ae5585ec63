package kubemark

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

var _ provider.InstanceLister = &Actuator{}

// ListInstances implements provider.InstanceLister: the Nodes with a kubemark providerID
// (kubemark://<namespace>/<name>) and this provider's ownership mark (OwnerAnnotation) naming that Machine. Nodes
// are cluster-wide, so every namespace's are listed: the collector checks each mark against its namespace.
func (a *Actuator) ListInstances(ctx context.Context, _ string) ([]provider.Instance, error) {
	nodes := &corev1.NodeList{}
	if err := a.nodes.List(ctx, nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	var out []provider.Instance
	for i := range nodes.Items {
		n := &nodes.Items[i]
		owner := provider.ParseOwner(n.Annotations[OwnerAnnotation])
		if owner.IsZero() || n.Spec.ProviderID != ProviderID(owner.Namespace, owner.Name) || n.DeletionTimestamp != nil {
			continue
		}
		out = append(out, provider.Instance{ProviderID: n.Spec.ProviderID, Name: n.Name, CreatedAt: n.CreationTimestamp.Time, Owner: owner})
	}
	return out, nil
}

// DeleteInstance implements provider.InstanceLister: it deletes the Node named inst.Name if it still has
// inst.ProviderID and mark (read uncached; UID precondition), and the Lease the health simulation may hold for it.
func (a *Actuator) DeleteInstance(ctx context.Context, inst provider.Instance) error {
	node := &corev1.Node{}
	if err := a.client.Get(ctx, client.ObjectKey{Name: inst.Name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading node %q: %w", inst.Name, err)
	}
	if node.Spec.ProviderID != inst.ProviderID || provider.ParseOwner(node.Annotations[OwnerAnnotation]) != inst.Owner {
		log.FromContext(ctx).Info("not deleting a node that changed since it was listed", "node", node.Name,
			"providerID", node.Spec.ProviderID, "listed", inst.ProviderID)
		return nil
	}
	if err := a.deleteNode(ctx, node); err != nil {
		return err
	}
	return a.releaseLease(ctx, node.Name, node.UID)
}
