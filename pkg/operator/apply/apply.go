// Package apply server-side applies the operator's objects, reverts what others
// change in them and prunes obsolete ones. See docs/architecture.md.
package apply

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// AppliedHashAnnotation is the hash of the desired object as last applied: a
// changed desired object changes it, which makes Apply send it.
const AppliedHashAnnotation = "machine.openshift.io/applied-configuration-hash"

// OwnerLabel is the namespace of the installation that applied a prunable object:
// Prune deletes and Apply takes over only its own.
const OwnerLabel = "machine.openshift.io/operator-namespace"

// Options configure an Applier.
type Options struct {
	// Client sends the writes and uncached re-reads. Required.
	Client client.Client
	// Reader reads live objects (a cache that keeps managedFields); defaults to Client.
	Reader client.Reader
	// FieldManager defaults to config.FieldManager.
	FieldManager string
	// Owner is the operator's namespace, stamped as OwnerLabel; Prune requires it.
	Owner string
}

// Applier applies objects that drifted and removes what others add to them.
// It is stateless and safe for concurrent use.
type Applier struct {
	client       client.Client
	reader       client.Reader
	scheme       *runtime.Scheme
	fieldManager string
	owner        string
	types        typeConverter
}

// New returns an Applier. It panics when opts.Client is nil.
func New(opts Options) *Applier {
	if opts.Client == nil {
		panic("apply.New: Options.Client is required")
	}
	return &Applier{
		client:       opts.Client,
		reader:       cmp.Or[client.Reader](opts.Reader, opts.Client),
		scheme:       opts.Client.Scheme(),
		fieldManager: cmp.Or(opts.FieldManager, config.FieldManager),
		owner:        opts.Owner,
		types:        newTypeConverter(opts.Client.Scheme()),
	}
}

// ObjectRef names one object for results, logs and metrics.
type ObjectRef struct {
	schema.GroupVersionKind
	Namespace string
	Name      string
}

// String renders the reference as Kind[.group]/[namespace/]name.
func (r ObjectRef) String() string {
	return r.GroupKind().String() + "/" + cache.ObjectName{Namespace: r.Namespace, Name: r.Name}.String()
}

// Result says what Apply did with each object.
type Result struct {
	Applied   []ObjectRef // written, in order
	Created   []ObjectRef // the subset of Applied that did not exist
	Unchanged []ObjectRef // not drifted: no request sent
	Failed    []ObjectRef // the error says why
}

// Apply applies each drifted object in order (not modified), continuing past
// failures (another live installation's objects among them) and joining them.
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

	desired, err := Desired(a.withOwner(obj, gvk.GroupKind()), a.scheme)
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
		if err := a.checkOwner(ctx, ref, live); err != nil {
			return ref, false, false, err
		}
		desiredSet, err := a.types.fieldSet(desired)
		if err != nil {
			return ref, false, false, err
		}
		d, err := checkDrift(desired, desiredSet, live, a.fieldManager)
		if err != nil {
			return ref, false, false, err
		}
		if d.none() {
			return ref, false, false, nil
		}
		log.FromContext(ctx).Info("live object drifted", "object", ref.String(), "drift", d.String())
		if d.reapply == "" {
			wrote, err := a.removeForeign(ctx, ref, live, d.foreign)
			return ref, false, wrote, err
		}
		if first := removableFirst(d.foreign, desiredSet); !first.Empty() {
			wrote, err := a.removeForeign(ctx, ref, live, first)
			switch {
			case apierrors.IsInvalid(err):
				// Removing first left it invalid: apply first, remove after.
				log.FromContext(ctx).V(1).Info("applying before removing others' fields", "object", ref.String(), "err", err)
			case err != nil:
				return ref, false, wrote, err
			case !wrote:
				return ref, false, false, nil // raced; the next sync retries
			}
			applied = wrote
		}
	}

	sent := desired.DeepCopy()
	if err := a.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(sent),
		client.FieldOwner(a.fieldManager), client.ForceOwnership); err != nil {
		return ref, false, applied, err
	}
	log.FromContext(ctx).V(1).Info("applied", "object", ref.String(), "created", created)
	// A forced apply keeps what others added next to our fields.
	foreign, _, err := foreignFields(gvk.GroupKind(), sent.GetManagedFields(), a.fieldManager)
	if err != nil {
		return ref, created, true, err
	}
	if !foreign.Empty() {
		if _, err := a.removeForeign(ctx, ref, sent, foreign); err != nil {
			return ref, created, true, err
		}
	}
	return ref, created, true, nil
}

// removeForeign updates live without the foreign fields and reports whether it
// wrote; a conflict re-reads (uncached) and retries up to removalAttempts.
func (a *Applier) removeForeign(ctx context.Context, ref ObjectRef, live *unstructured.Unstructured, foreign *fieldpath.Set) (bool, error) {
	for attempt := 1; ; attempt++ {
		clean, err := a.types.withoutForeign(live, foreign, a.fieldManager)
		if err != nil {
			return false, err
		}
		err = a.client.Update(ctx, clean, client.FieldOwner(a.fieldManager+RevertManagerSuffix))
		switch {
		case err == nil:
			log.FromContext(ctx).V(1).Info("removed fields others added", "object", ref.String(), "fields", firstPaths(foreign, 10))
			return true, nil
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err) && attempt == removalAttempts:
			log.FromContext(ctx).V(1).Info("object changed while removing others' fields; the next sync retries", "object", ref.String(), "err", err)
			return false, nil
		case !apierrors.IsConflict(err):
			return false, fmt.Errorf("removing fields others added (%s): %w", firstPaths(foreign, 3), err)
		}
		fresh := &unstructured.Unstructured{}
		fresh.SetGroupVersionKind(ref.GroupVersionKind)
		if err := a.client.Get(ctx, client.ObjectKeyFromObject(live), fresh); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		still, _, err := foreignFields(ref.GroupKind(), fresh.GetManagedFields(), a.fieldManager)
		if err != nil {
			return false, err
		}
		if foreign = foreign.Intersection(still); foreign.Empty() {
			return false, nil
		}
		live = fresh
	}
}

// removalAttempts bounds the updates removeForeign sends per call.
const removalAttempts = 3

// getLive reads the live object as the desired object's type (so a cache
// shares the watches' informers) and returns it as unstructured.
func (a *Applier) getLive(ctx context.Context, obj client.Object, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	var live client.Object = u
	if _, ok := obj.(runtime.Unstructured); !ok {
		o, err := a.scheme.New(gvk)
		if err != nil {
			return nil, err
		}
		if live, ok = o.(client.Object); !ok {
			return nil, fmt.Errorf("%T is not a client.Object", o)
		}
	}
	if err := a.reader.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
		return nil, err
	} else if live == u {
		return u, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return nil, err
	}
	u.Object = m
	u.SetGroupVersionKind(gvk)
	return u, nil
}
