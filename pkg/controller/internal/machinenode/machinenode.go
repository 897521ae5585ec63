// Package machinenode holds the links between Machines and Nodes that several controllers read: the Node's
// annotation naming its Machine, the Machine's status.nodeRef, the cache indexes on both, and the lookup
// of a Node's Machines. Nodelink writes the links; the other controllers only read them.
package machinenode

import (
	"context"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/index"
)

// MachineAnnotation on a Node names its Machine as "<namespace>/<name>".
const MachineAnnotation = "machine.openshift.io/machine"

// NodeRefNameField is the cache field index on Machines holding status.nodeRef.name.
const NodeRefNameField = "status.nodeRef.name"

// IndexNodeProviderID is the cache field index on Nodes holding spec.providerID; the "nodelink:" prefix is
// kept from the controller that registered it first, so every controller registers the same index.
const IndexNodeProviderID = "nodelink:node.spec.providerID"

// NodeRef is the status.nodeRef of a Machine linked to node.
func NodeRef(node *corev1.Node) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "Node", Name: node.Name, UID: node.UID}
}

// NodeProviderIDIndex extracts IndexNodeProviderID.
func NodeProviderIDIndex(o client.Object) []string {
	if n, ok := o.(*corev1.Node); ok && n.Spec.ProviderID != "" {
		return []string{n.Spec.ProviderID}
	}
	return nil
}

// IndexMachinesByNodeRef adds the NodeRefNameField index unless another controller did.
func IndexMachinesByNodeRef(ctx context.Context, indexer client.FieldIndexer) error {
	return index.Register(ctx, indexer, index.Index{Object: &machinev1beta1.Machine{}, Name: NodeRefNameField, Extract: machineNodeRefName})
}

func machineNodeRefName(o client.Object) []string {
	m, ok := o.(*machinev1beta1.Machine)
	if !ok || m.Status.NodeRef == nil || m.Status.NodeRef.Name == "" {
		return nil
	}
	return []string{m.Status.NodeRef.Name}
}

// MachinesOfNode returns, from c's cache (never to be modified), the Machines in namespace
// ("": all) whose nodeRef names node (NodeRefNameField) and the one its annotation names.
func MachinesOfNode(ctx context.Context, c client.Reader, namespace string, node client.Object) []*machinev1beta1.Machine {
	var out []*machinev1beta1.Machine
	list := &machinev1beta1.MachineList{}
	if err := c.List(ctx, list, client.InNamespace(namespace),
		client.MatchingFields{NodeRefNameField: node.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "mapping a Node to Machines", "node", node.GetName())
	}
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	if ns, name, ok := strings.Cut(node.GetAnnotations()[MachineAnnotation], "/"); ok && ns != "" && name != "" &&
		(namespace == "" || ns == namespace) {
		m := &machinev1beta1.Machine{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, m, client.UnsafeDisableDeepCopy); err == nil {
			out = append(out, m)
		}
	}
	return out
}
