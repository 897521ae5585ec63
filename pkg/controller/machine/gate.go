package machine

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Gate holds back the provider calls that create or delete instances (the
// API-server freeze of package safety): while Frozen reports true, a
// Machine that would call Create or Delete is requeued instead, so an
// instance is never created or deleted on a view of the cluster that the
// controller cannot update.
type Gate interface {
	Frozen() bool
}

// gateRequeueAfter is how soon a Machine held back by the Gate is looked
// at again.
const gateRequeueAfter = 10 * time.Second

// heldByGate reports whether the Gate holds back op (create or delete).
func (r *Reconciler) heldByGate(ctx context.Context, op string) bool {
	if r.gate == nil || !r.gate.Frozen() {
		return false
	}
	log.FromContext(ctx).V(1).Info("not calling the provider: the machine controller is frozen while the API server is unreachable",
		"operation", op, "requeueAfter", gateRequeueAfter)
	return true
}
