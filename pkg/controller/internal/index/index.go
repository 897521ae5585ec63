// Package index registers field indexes so that controllers sharing a
// manager can each ask for the same one: a second registration is recognised
// by the informer's index names, not by the text of an "indexer conflict" error.
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

// Register adds the indexes the cache's informers lack, before the manager starts. A namespace-restricted cache
// hides its informers' indexes (a second registration fails): controllers sharing one register a shared index once.
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
// index name for obj's type (false when the cache cannot tell).
func Registered(ctx context.Context, indexer client.FieldIndexer, obj client.Object, name string) (bool, error) {
	getter, ok := indexer.(cache.Informers)
	if !ok {
		return false, nil
	}
	// Created (not started) if needed, as IndexField does.
	inf, err := getter.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return false, fmt.Errorf("getting the informer for %T to look up the field index %q: %w", obj, name, err)
	}
	owner, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return false, nil
	}
	// controller-runtime names a field index's informer index "field:<name>".
	_, exists := owner.GetIndexer().GetIndexers()["field:"+name]
	return exists, nil
}
