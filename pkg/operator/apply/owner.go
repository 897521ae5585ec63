package apply

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// withOwner returns a copy of obj with OwnerLabel set, or obj itself when
// there is no owner or kind gk is never pruned.
func (a *Applier) withOwner(obj client.Object, gk schema.GroupKind) client.Object {
	if a.owner == "" || IsNeverPruned(gk) {
		return obj
	}
	out, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return obj
	}
	out.SetLabels(withKey(out.GetLabels(), OwnerLabel, a.owner))
	return out
}

// ownedBy is the installation that applied obj ("" if unlabeled).
func ownedBy(obj client.Object) string { return obj.GetLabels()[OwnerLabel] }

// checkOwner refuses to write live when another live installation applied it
// (fixed names: two operators would fight); a removed one's are taken over.
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
		log.FromContext(ctx).Info("taking over an object of a removed installation", "object", ref.String(), "installation", other)
		return nil
	}
	return fmt.Errorf("it belongs to the machine-api-operator of namespace %s (label %s=%s), not to this one (namespace %s): "+
		"its name is fixed, so only one installation per cluster can deploy it; remove one of the installations",
		other, OwnerLabel, other, a.owner)
}

// namespaceGone reports whether namespace ns is absent or being deleted
// (an uncached read: no informer on every Namespace for a rare check).
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
