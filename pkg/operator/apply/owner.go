package apply

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// withOwner returns obj with OwnerLabel set to the Applier's owner (a copy;
// obj is not modified), or obj itself when there is no owner or objects of
// kind gk are never pruned.
func (a *Applier) withOwner(obj client.Object, gk schema.GroupKind) client.Object {
	if a.owner == "" || IsNeverPruned(gk) {
		return obj
	}
	out, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return obj
	}
	labels := maps.Clone(out.GetLabels())
	if labels == nil {
		labels = map[string]string{}
	}
	labels[OwnerLabel] = a.owner
	out.SetLabels(labels)
	return out
}

// ownedBy is the installation that applied obj ("" for objects applied
// before OwnerLabel existed, and for CRDs and Namespaces).
func ownedBy(obj client.Object) string { return obj.GetLabels()[OwnerLabel] }

// checkOwner refuses to write live when another installation applied it:
// its names are fixed, so two operators in two namespaces would otherwise
// take the object from each other on every sync, and the last one to apply
// it could prune it from under the other. An installation whose namespace
// is gone or being deleted has been removed: its objects are taken over.
func (a *Applier) checkOwner(ctx context.Context, ref ObjectRef, live *unstructured.Unstructured) error {
	other := ownedBy(live)
	if a.owner == "" || other == "" || other == a.owner {
		return nil
	}
	removed, err := a.namespaceGone(ctx, other)
	if err != nil {
		return fmt.Errorf("it belongs to the installation in namespace %s, which could not be checked: %w", other, err)
	}
	if removed {
		log.FromContext(ctx).Info("Taking over an object of a removed installation", "object", ref.String(), "installation", other)
		return nil
	}
	return fmt.Errorf("it belongs to the machine-api-operator of namespace %s (label %s=%s), not to this one (namespace %s): "+
		"its name is fixed, so only one installation per cluster can deploy it; remove one of the installations",
		other, OwnerLabel, other, a.owner)
}

// namespaceGone reports whether namespace ns does not exist or is being
// deleted. It reads through the Client as unstructured (not cached by a
// manager's client: no informer on every Namespace for a rare check).
func (a *Applier) namespaceGone(ctx context.Context, ns string) (bool, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	err := a.client.Get(ctx, client.ObjectKey{Name: ns}, u)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, err
	}
	return u.GetDeletionTimestamp() != nil, nil
}
