// Package apply writes the operator's desired objects with server-side apply
// (field manager config.FieldManager) and deletes the ones a configuration
// change made obsolete.
//
// Steady state costs no writes: before applying an object, Apply reads the
// live object (normally from an informer cache) and sends the apply patch
// only when the object is missing, or when the live object does not match
// the desired one (see Matches), or when the desired object differs from the
// one last applied (recorded as a hash in the AppliedHashAnnotation, which
// Matches compares like any other annotation). Nothing is kept in memory, so a
// restart causes no writes either. No dry-run requests are sent.
//
// Drift (a foreign edit of a field we set, or a deletion) makes the live
// object stop matching and is reverted by the next Apply with a forced apply.
// Fields other managers add (extra labels, env vars, list items, API
// defaults) do not make the object stop matching, so there is no fight.
// Fields the operator stops setting are removed by server-side apply itself:
// the desired object changed, so its hash changed, so it is applied.
package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// AppliedHashAnnotation is set on every applied object to a hash of the
// desired object as it was applied. A desired object that differs from the
// last applied one (for example one that stops setting a field) changes the
// hash, which makes the live object not match, which makes Apply send it.
const AppliedHashAnnotation = "machine.openshift.io/applied-configuration-hash"

// Options configure an Applier.
type Options struct {
	// Client sends the writes (server-side apply patches, deletes). Its
	// scheme resolves the kinds of typed objects and its REST mapper the
	// scope of kinds. Required.
	Client client.Client
	// Reader reads live objects; normally a cache-backed reader, so that a
	// steady state causes no requests at all. Defaults to Client.
	Reader client.Reader
	// FieldManager is the server-side apply field manager. Defaults to
	// config.FieldManager.
	FieldManager string
}

// Applier applies desired objects with server-side apply, skipping objects
// whose live state already matches. It holds no state between calls and is
// safe for concurrent use.
type Applier struct {
	client       client.Client
	reader       client.Reader
	scheme       *runtime.Scheme
	fieldManager string
}

// New returns an Applier. It panics when opts.Client is nil.
func New(opts Options) *Applier {
	if opts.Client == nil {
		panic("apply.New: Options.Client is required")
	}
	a := &Applier{
		client:       opts.Client,
		reader:       opts.Reader,
		scheme:       opts.Client.Scheme(),
		fieldManager: opts.FieldManager,
	}
	if a.reader == nil {
		a.reader = opts.Client
	}
	if a.fieldManager == "" {
		a.fieldManager = config.FieldManager
	}
	return a
}

// ObjectRef names one object for results, logs and metrics.
type ObjectRef struct {
	schema.GroupVersionKind
	Namespace string
	Name      string
}

// String renders the reference as Kind.group/namespace/name (the group and
// namespace parts are left out when empty).
func (r ObjectRef) String() string {
	var b strings.Builder
	b.WriteString(r.Kind)
	if r.Group != "" {
		b.WriteString(".")
		b.WriteString(r.Group)
	}
	b.WriteString("/")
	if r.Namespace != "" {
		b.WriteString(r.Namespace)
		b.WriteString("/")
	}
	b.WriteString(r.Name)
	return b.String()
}

// Result says what Apply did with each object.
type Result struct {
	// Applied are the objects an apply patch was sent for (created or
	// updated), in order.
	Applied []ObjectRef
	// Created is the subset of Applied that did not exist before.
	Created []ObjectRef
	// Unchanged already matched; no request was sent for them.
	Unchanged []ObjectRef
	// Failed could not be read, converted or applied; the error says why.
	Failed []ObjectRef
}

// Apply applies each object in order. Objects may be typed (registered in the
// client's scheme; TypeMeta may be empty) or *unstructured.Unstructured; they
// are not modified. Apply continues past failures and returns every failure
// joined into one error.
//
// Each object is stamped with the ownership label config.ManagedByLabel =
// config.ManagedByValue (which Prune relies on) and the AppliedHashAnnotation.
// Only name, namespace, labels, annotations, ownerReferences and finalizers
// of its metadata are sent; status is never sent.
func (a *Applier) Apply(ctx context.Context, objs []client.Object) (Result, error) {
	var res Result
	var errs []error
	for _, obj := range objs {
		ref, created, applied, err := a.applyOne(ctx, obj)
		switch {
		case err != nil:
			res.Failed = append(res.Failed, ref)
			errs = append(errs, fmt.Errorf("applying %s: %w", ref, err))
		case applied:
			res.Applied = append(res.Applied, ref)
			if created {
				res.Created = append(res.Created, ref)
			}
		default:
			res.Unchanged = append(res.Unchanged, ref)
		}
	}
	return res, errors.Join(errs...)
}

func (a *Applier) applyOne(ctx context.Context, obj client.Object) (ref ObjectRef, created, applied bool, err error) {
	if obj == nil {
		return ref, false, false, errors.New("nil object")
	}
	ref = ObjectRef{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	gvk, err := apiutil.GVKForObject(obj, a.scheme)
	if err != nil {
		return ref, false, false, err
	}
	ref.GroupVersionKind = gvk

	desired, err := Desired(obj, a.scheme)
	if err != nil {
		return ref, false, false, err
	}

	live, err := a.getLive(ctx, obj, gvk)
	switch {
	case apierrors.IsNotFound(err):
		created = true
	case err != nil:
		return ref, false, false, fmt.Errorf("reading the live object: %w", err)
	default:
		path := MismatchPath(desired, live)
		if path == "" {
			return ref, false, false, nil
		}
		log.FromContext(ctx).V(1).Info("Live object differs from the desired one", "object", ref.String(), "path", path)
	}

	if err := a.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(desired),
		client.FieldOwner(a.fieldManager), client.ForceOwnership); err != nil {
		return ref, false, false, err
	}
	log.FromContext(ctx).V(1).Info("Applied", "object", ref.String(), "created", created)
	return ref, created, true, nil
}

// getLive reads the live object in the form the desired object has (typed
// objects as the same typed kind, so that a cache-backed reader shares the
// informers of the watches; unstructured as unstructured) and returns it as
// unstructured.
func (a *Applier) getLive(ctx context.Context, obj client.Object, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	key := client.ObjectKeyFromObject(obj)
	if _, ok := obj.(runtime.Unstructured); ok {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(gvk)
		if err := a.reader.Get(ctx, key, live); err != nil {
			return nil, err
		}
		return live, nil
	}
	o, err := a.scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	live, ok := o.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not a client.Object", o)
	}
	if err := a.reader.Get(ctx, key, live); err != nil {
		return nil, err
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}
