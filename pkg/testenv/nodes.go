package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/nodeutil"
)

// SetNodeReady sets the Node's Ready condition to status since since, with
// a heartbeat now; its other conditions are kept.
func SetNodeReady(ctx context.Context, c client.Client, name string, status corev1.ConditionStatus, since time.Time) error {
	n := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		return fmt.Errorf("getting node %s: %w", name, err)
	}
	base := n.DeepCopy()
	nodeutil.SetReadyCondition(n, corev1.NodeCondition{
		Status: status, Reason: "Test",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.NewTime(since),
	})
	if err := c.Status().Patch(ctx, n, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("setting node %s Ready=%s: %w", name, status, err)
	}
	return nil
}

// CreateNode creates Node name (as mutate changes it) with its Ready condition status since since,
// and deletes it when the test ends.
func CreateNode(t testing.TB, c client.Client, name string, ready corev1.ConditionStatus, since time.Time, mutate ...func(*corev1.Node)) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, f := range mutate {
		f(n)
	}
	if err := c.Create(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}) })
	MustSetNodeReady(t, c, name, ready, since)
}

// MustSetNodeReady is SetNodeReady failing the test on an error.
func MustSetNodeReady(t testing.TB, c client.Client, name string, status corev1.ConditionStatus, since time.Time) {
	t.Helper()
	if err := SetNodeReady(context.Background(), c, name, status, since); err != nil {
		t.Fatal(err)
	}
}
