package testenv

import (
	"context"
	"fmt"
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
