// Package updates builds the predicates that drop update events changing
// nothing a controller reads.
package updates

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Matter passes every event but updates of T for which matters(old, new) is
// false (an update not of two T passes).
func Matter[T client.Object](matters func(oldObj, newObj T) bool) predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldObj, ok1 := e.ObjectOld.(T)
			newObj, ok2 := e.ObjectNew.(T)
			return !ok1 || !ok2 || matters(oldObj, newObj)
		},
	}
}
