package kubemark

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machine"
)

var _ machine.InstanceLister = &Actuator{}

// ListInstances implements machine.InstanceLister: the Nodes whose providerID is kubemark://<namespace>/<name>
// (of namespace, when it is set).
func (a *Actuator) ListInstances(ctx context.Context, namespace string) ([]machine.Instance, error) {
	nodes := &corev1.NodeList{}
	if err := a.nodes.List(ctx, nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	prefix := ProviderIDScheme + "://"
	if namespace != "" {
		prefix += namespace + "/"
	}
	var out []machine.Instance
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !strings.HasPrefix(n.Spec.ProviderID, prefix) || n.DeletionTimestamp != nil {
			continue
		}
		out = append(out, machine.Instance{ProviderID: n.Spec.ProviderID, Name: n.Name, CreatedAt: n.CreationTimestamp.Time})
	}
	return out, nil
}

// DeleteInstance implements machine.InstanceLister: it deletes the Node named inst.Name if it still has
// inst.ProviderID (read uncached; UID precondition), and the Lease the health simulation may hold for it.
func (a *Actuator) DeleteInstance(ctx context.Context, inst machine.Instance) error {
	node := &corev1.Node{}
	if err := a.client.Get(ctx, client.ObjectKey{Name: inst.Name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading node %q: %w", inst.Name, err)
	}
	if node.Spec.ProviderID != inst.ProviderID {
		log.FromContext(ctx).Info("not deleting a node that changed since it was listed", "node", node.Name,
			"providerID", node.Spec.ProviderID, "listed", inst.ProviderID)
		return nil
	}
	if err := a.deleteNode(ctx, node); err != nil {
		return err
	}
	return a.releaseLease(ctx, node.Name, node.UID)
}
