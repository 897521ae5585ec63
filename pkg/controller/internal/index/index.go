// Package index registers field indexes on a controller-runtime cache so that
// controllers sharing a manager can each ask for the same index: a second
// registration of an index name is recognised by the name, by looking at the
// indexes the cache's informer already has, never by the text of the cache's
// "indexer conflict" error.
package index

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Index is one field index over a type.
type Index struct {
	// Object is an instance of the indexed type, e.g. &Machine{}.
	Object client.Object
	// Name is the index name, used with client.MatchingFields.
	Name string
	// Extract returns the index values of an object.
	Extract client.IndexerFunc
}

// fieldIndexName is the name controller-runtime gives the informer index of
// a field index (internal.FieldIndexName in sigs.k8s.io/controller-runtime
// pkg/cache/internal): "field:" + the field index name.
func fieldIndexName(name string) string { return "field:" + name }

// informerGetter is the part of cache.Informers that Register uses; a
// manager's GetFieldIndexer() is a cache and has it.
type informerGetter interface {
	GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error)
}

// indexerOwner is an informer that exposes its store's indexes (client-go's
// SharedIndexInformer, which controller-runtime's cache hands out for a
// cache over all namespaces or one cluster-scoped type).
type indexerOwner interface {
	GetIndexer() toolscache.Indexer
}

// Register adds the indexes to indexer (a manager's GetFieldIndexer(), before
// the manager starts). An index whose name the cache's informer for the type
// already has (another controller in the same manager registered it) is left
// as it is.
//
// The informers of a namespace-restricted cache (cache.Options.
// DefaultNamespaces) do not expose their indexes: there an index is simply
// registered, and registering one name twice fails with the cache's error.
// Controllers that share such a manager register a shared index once, where
// the manager is built.
func Register(ctx context.Context, indexer client.FieldIndexer, indexes ...Index) error {
	for _, idx := range indexes {
		exists, err := Registered(ctx, indexer, idx.Object, idx.Name)
		if err != nil {
			return err
		}
		if exists {
			continue
		}
		if err := indexer.IndexField(ctx, idx.Object, idx.Name, idx.Extract); err != nil {
			return fmt.Errorf("registering the field index %q on %T: %w", idx.Name, idx.Object, err)
		}
	}
	return nil
}

// Registered reports whether the cache behind indexer already has the field
// index name for obj's type. It answers false when the cache cannot tell (see
// Register).
func Registered(ctx context.Context, indexer client.FieldIndexer, obj client.Object, name string) (bool, error) {
	getter, ok := indexer.(informerGetter)
	if !ok {
		return false, nil
	}
	// The informer IndexField would use; it is created (not started) if
	// needed, as IndexField does.
	inf, err := getter.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return false, fmt.Errorf("getting the informer for %T to look up the field index %q: %w", obj, name, err)
	}
	owner, ok := inf.(indexerOwner)
	if !ok {
		return false, nil
	}
	_, exists := owner.GetIndexer().GetIndexers()[fieldIndexName(name)]
	return exists, nil
}
