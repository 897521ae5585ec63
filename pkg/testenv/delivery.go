package testenv

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// deliveryCache records, per event handler, the resourceVersion of every
// object it was last handed (once it returned): an informer stores an event
// before handing it on, so a cache caught up does not mean the controller saw it.
type deliveryCache struct {
	cache.Cache
	scheme   *runtime.Scheme
	mu       sync.Mutex
	handlers map[toolscache.ResourceEventHandlerRegistration]*deliveries
}

// informerKey names an informer: its kind, and whether it holds metadata only.
type informerKey struct {
	gvk      schema.GroupVersionKind
	metadata bool
}

// newCache is a manager.Options.NewCache: controller-runtime's cache, with
// event handlers' deliveries recorded for CaughtUp.
func newCache(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	return &deliveryCache{Cache: c, scheme: cmp.Or(opts.Scheme, clientgoscheme.Scheme),
		handlers: map[toolscache.ResourceEventHandlerRegistration]*deliveries{}}, nil
}

func (c *deliveryCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return nil, err
	}
	_, metadata := obj.(*metav1.PartialObjectMetadata)
	i, err := c.Cache.GetInformer(ctx, obj, opts...)
	// Wrapped per call: a multi-namespace cache wraps its informers anew on each call.
	return &trackedInformer{Informer: i, cache: c, key: informerKey{gvk: gvk, metadata: metadata}}, err
}

func (c *deliveryCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i, err := c.Cache.GetInformerForKind(ctx, gvk, opts...)
	return &trackedInformer{Informer: i, cache: c, key: informerKey{gvk: gvk}}, err
}

// delivered returns nil when list's kind has an event handler and every
// handler was handed exactly what its informer stores.
func (c *deliveryCache) delivered(ctx context.Context, list client.ObjectList) error {
	gvk, err := apiutil.GVKForObject(list, c.scheme)
	if err != nil {
		return err
	}
	k := informerKey{gvk: gvk.GroupVersion().WithKind(strings.TrimSuffix(gvk.Kind, "List"))}
	_, k.metadata = list.(*metav1.PartialObjectMetadataList)
	c.mu.Lock()
	handlers := map[informerKey][]*deliveries{}
	for _, d := range c.handlers {
		handlers[d.key] = append(handlers[d.key], d)
	}
	c.mu.Unlock()
	if len(handlers[k]) == 0 {
		return fmt.Errorf("no event handler on the informer of %v yet", k.gvk)
	}
	for k, ds := range handlers {
		stored, err := c.stored(ctx, k)
		if err != nil {
			return err
		}
		for _, d := range ds {
			if got := d.snapshot(); !maps.Equal(got, stored) {
				return fmt.Errorf("%v: an event handler has not been handed every event yet: handed %v, cache holds %v", k.gvk, got, stored)
			}
		}
	}
	return nil
}

// stored lists what the cache holds of kind k, by key.
func (c *deliveryCache) stored(ctx context.Context, k informerKey) (map[string]string, error) {
	var list client.ObjectList
	listGVK := k.gvk.GroupVersion().WithKind(k.gvk.Kind + "List")
	if k.metadata {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(listGVK)
		list = l
	} else {
		o, err := c.scheme.New(listGVK)
		if err != nil {
			return nil, err
		}
		list = o.(client.ObjectList)
	}
	return versions(ctx, c.Cache, list, nil)
}

// trackedInformer wraps the event handlers registered on an informer.
type trackedInformer struct {
	cache.Informer
	cache *deliveryCache
	key   informerKey
}

func (t *trackedInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return t.AddEventHandlerWithOptions(h, toolscache.HandlerOptions{})
}

func (t *trackedInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, p time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return t.AddEventHandlerWithOptions(h, toolscache.HandlerOptions{ResyncPeriod: &p})
}

func (t *trackedInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, o toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	d := &deliveries{next: h, key: t.key, versions: map[string]string{}}
	r, err := t.Informer.AddEventHandlerWithOptions(d, o)
	if err == nil {
		t.cache.mu.Lock()
		t.cache.handlers[r] = d
		t.cache.mu.Unlock()
	}
	return r, err
}

func (t *trackedInformer) RemoveEventHandler(r toolscache.ResourceEventHandlerRegistration) error {
	t.cache.mu.Lock()
	delete(t.cache.handlers, r)
	t.cache.mu.Unlock()
	return t.Informer.RemoveEventHandler(r)
}

// deliveries passes events on to a handler and records, once it returned,
// each object's last resourceVersion handed.
type deliveries struct {
	next     toolscache.ResourceEventHandler
	key      informerKey
	mu       sync.Mutex
	versions map[string]string
}

func (d *deliveries) OnAdd(obj any, initial bool) {
	d.next.OnAdd(obj, initial)
	d.record(obj, false)
}

func (d *deliveries) OnUpdate(old, obj any) {
	d.next.OnUpdate(old, obj)
	d.record(obj, false)
}

func (d *deliveries) OnDelete(obj any) {
	d.next.OnDelete(obj)
	d.record(obj, true)
}

func (d *deliveries) record(obj any, deleted bool) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	o, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	k := o.GetNamespace() + "/" + o.GetName() // as versions keys them
	d.mu.Lock()
	defer d.mu.Unlock()
	if deleted {
		delete(d.versions, k)
		return
	}
	d.versions[k] = o.GetResourceVersion()
}

func (d *deliveries) snapshot() map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.versions)
}

// trackedClient is the manager's client, carrying the cache behind it for CaughtUp.
type trackedClient struct {
	client.Client
	cache *deliveryCache
}
