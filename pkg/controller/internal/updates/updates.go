// Package updates builds the event predicates controllers use to drop
// update events that change nothing they read (heartbeats, their own status
// writes).
package updates

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Matter passes creations, deletions and generic events, and the updates of
// objects of type T for which matters(old, new) holds. An update whose
// objects are not both T passes (nothing is dropped that cannot be judged).
func Matter[T client.Object](matters func(oldObj, newObj T) bool) predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldObj, ok1 := e.ObjectOld.(T)
			newObj, ok2 := e.ObjectNew.(T)
			if !ok1 || !ok2 {
				return true
			}
			return matters(oldObj, newObj)
		},
	}
}
