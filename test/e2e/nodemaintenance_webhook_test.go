//go:build e2e

package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestNodeMaintenanceForMissingNodeRefused: the operator's NodeMaintenance
// webhook (served by machineset-controller) refuses a NodeMaintenance for a
// node that does not exist, with medik8s's message. failurePolicy is
// Ignore, so a request before the webhook serves is accepted: that one is
// deleted and the request repeated.
func TestNodeMaintenanceForMissingNodeRefused(t *testing.T) {
	requireNodeMaintenanceAPI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const want = `admission webhook "vnodemaintenance.kb.io" denied the request: invalid nodeName, no node with name e2e-no-such-node found`
	waitFor(ctx, t, "a NodeMaintenance for a missing node refused", func(ctx context.Context) (bool, error) {
		nm := newNodeMaintenance("e2e-missing-node", "e2e-no-such-node", "e2e: refused by the webhook")
		err := cluster.Create(ctx, nm)
		if err == nil {
			_ = cluster.Delete(ctx, nm)
			return false, errors.New("accepted: the webhook does not serve yet")
		}
		if !strings.Contains(err.Error(), want) {
			return false, err
		}
		return true, nil
	})
}
