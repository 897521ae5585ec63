package apply

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// IsNeverPruned reports whether Prune refuses to delete objects of kind gk:
// deleting a CRD or a Namespace deletes user data (Machines).
func IsNeverPruned(gk schema.GroupKind) bool {
	return gk == schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"} ||
		gk == schema.GroupKind{Kind: "Namespace"}
}

// Prune deletes and returns the Obsolete objects not yet being deleted, with a
// UID precondition (background propagation unless opts say otherwise).
func (a *Applier) Prune(ctx context.Context, kinds []schema.GroupVersionKind, namespace string, keep []client.Object,
	opts ...client.DeleteOption) ([]ObjectRef, error) {
	objs, errs := a.Obsolete(ctx, kinds, namespace, keep)
	var deleted []ObjectRef
	for _, o := range objs {
		if o.Object.GetDeletionTimestamp() != nil {
			continue
		}
		uid := o.Object.GetUID()
		err := a.client.Delete(ctx, o.Object, append([]client.DeleteOption{
			client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &uid}}, opts...)...)
		switch {
		case err == nil:
			log.FromContext(ctx).Info("pruned an obsolete object", "object", o.Ref.String())
			deleted = append(deleted, o.Ref)
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		default:
			errs = errors.Join(errs, fmt.Errorf("prune: deleting %s: %w", o.Ref, err))
		}
	}
	return deleted, errs
}

// ObsoleteObject is an object Prune deletes (or that is being deleted).
type ObsoleteObject struct {
	Ref    ObjectRef
	Object client.Object
}

// Obsolete lists this installation's objects (by labels, never by name; namespace
// "" = all) of kinds not in keep, those being deleted included; it needs an Owner.
func (a *Applier) Obsolete(ctx context.Context, kinds []schema.GroupVersionKind, namespace string, keep []client.Object) ([]ObsoleteObject, error) {
	if a.owner == "" {
		return nil, errors.New("prune: the Applier has no Owner, so it cannot tell its objects from another installation's")
	}
	type key struct {
		gk        schema.GroupKind
		namespace string
		name      string
	}
	keepSet := map[key]bool{}
	for _, obj := range keep {
		gvk, err := apiutil.GVKForObject(obj, a.scheme)
		if err != nil {
			return nil, fmt.Errorf("prune: keep object %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
		}
		ns := obj.GetNamespace()
		if namespaced, err := a.client.IsObjectNamespaced(obj); err == nil && !namespaced {
			ns = ""
		}
		keepSet[key{gvk.GroupKind(), ns, obj.GetName()}] = true
	}

	var found []ObsoleteObject
	var errs []error
	for _, gvk := range kinds {
		if IsNeverPruned(gvk.GroupKind()) {
			log.FromContext(ctx).V(1).Info("not pruning a protected kind", "kind", gvk.String())
			continue
		}
		items, namespaced, err := a.listOwned(ctx, gvk, namespace)
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("prune: listing %s: %w", gvk, err))
			continue
		}
		for _, obj := range items {
			ns := obj.GetNamespace()
			if !namespaced {
				ns = ""
			}
			if keepSet[key{gvk.GroupKind(), ns, obj.GetName()}] {
				continue
			}
			if obj.GetLabels()[config.ManagedByLabel] != config.ManagedByValue || ownedBy(obj) != a.owner {
				continue // a reader that ignores the selector; never guess
			}
			found = append(found, ObsoleteObject{Ref: ObjectRef{GroupVersionKind: gvk, Namespace: ns, Name: obj.GetName()}, Object: obj})
		}
	}
	return found, errors.Join(errs...)
}

// listOwned lists this installation's objects of kind gvk (in namespace, if set).
func (a *Applier) listOwned(ctx context.Context, gvk schema.GroupVersionKind, namespace string) ([]client.Object, bool, error) {
	namespaced, err := a.client.IsObjectNamespaced(&metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{
		APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
	}})
	if err != nil {
		return nil, false, err
	}
	listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	var list client.ObjectList = &unstructured.UnstructuredList{}
	if o, err := a.scheme.New(listGVK); err == nil { // the scheme's type shares the watches' informers
		var ok bool
		if list, ok = o.(client.ObjectList); !ok {
			return nil, false, fmt.Errorf("%T is not a list", o)
		}
	}
	list.GetObjectKind().SetGroupVersionKind(listGVK)
	opts := []client.ListOption{client.MatchingLabels{config.ManagedByLabel: config.ManagedByValue, OwnerLabel: a.owner}}
	if namespaced && namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := a.reader.List(ctx, list, opts...); err != nil {
		return nil, false, err
	}
	var items []client.Object
	err = meta.EachListItem(list, func(o runtime.Object) error {
		obj, ok := o.(client.Object)
		if !ok {
			return fmt.Errorf("%T is not a client.Object", o)
		}
		items = append(items, obj)
		return nil
	})
	return items, namespaced, err
}
