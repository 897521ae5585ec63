package machinehealthcheck

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"

	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// TestBatchedEvents: events within the delay wake a MachineHealthCheck once,
// and not before the delay.
func TestBatchedEvents(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	key := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "mhc"}}
	h := batched(handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{key}
	}), 300*time.Millisecond)
	start := time.Now()
	for range 5 {
		h.Create(t.Context(), event.CreateEvent{Object: &machinev1beta1.Machine{}}, q)
	}
	if q.Len() != 0 {
		t.Fatalf("queued at once: %d", q.Len())
	}
	poll.Eventually(t, 5*time.Second, "the batched request queued", func(context.Context) (bool, error) {
		return q.Len() > 0, nil
	})
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Errorf("queued after %s, before the delay", waited)
	}
	if q.Len() != 1 {
		t.Errorf("5 events queued %d requests, want 1", q.Len())
	}
}
