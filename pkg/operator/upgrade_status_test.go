package operator

import (
	"context"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/status"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// TestDegradedSuppressedWhileInstalling: while versions differ (here a fresh install), an
// operand outage past --degraded-after turns Degraded=True only once Progressing has lasted
// --upgrade-degraded-after, as OpenShift's operator; "Status upgrade" is recorded once for
// the version however the rollout progresses, "Status degraded" once for the outage.
// Breaks if: the suppression is dropped (Degraded at once, 1ms after the outage began) or
// the upgrade event is recorded per Progressing message.
func TestDegradedSuppressedWhileInstalling(t *testing.T) {
	const suppression = 4 * time.Second
	ns := newNamespace(t)
	setInfrastructure(t, configv1.ExternalPlatformType, "kubemark")
	startOperator(t, writeImages(t, testImages), harnessOptions{ns: ns, degradedAfter: time.Millisecond, upgradeDegradedAfter: suppression})
	waitDeployment(t, ns)

	progressing := waitCondition(t, configv1.OperatorProgressing, configv1.ConditionTrue, status.ReasonSyncing, "Progressing towards operator: "+testRelease)
	degraded := waitCondition(t, configv1.OperatorDegraded, configv1.ConditionTrue, status.ReasonOperandUnavailable, "")
	if held := degraded.LastTransitionTime.Sub(progressing.LastTransitionTime.Time); held < suppression-time.Second {
		t.Errorf("Degraded=True %s after Progressing=True, want about %s (the suppression while installing)", held, suppression)
	}

	setDeploymentAvailable(t, ns, true)
	waitCondition(t, configv1.OperatorAvailable, configv1.ConditionTrue, status.ReasonAsExpected, "")
	waitCondition(t, configv1.OperatorDegraded, configv1.ConditionFalse, status.ReasonAsExpected, "")
	co, err := getCO(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var events map[string]int
	poll.Eventually(t, 10*time.Second, "the upgrade and degraded events", func(context.Context) (bool, error) {
		events = coEvents(t, co.UID)
		return events[status.EventReasonUpgrade] > 0 && events[status.EventReasonDegraded] > 0 && events["DegradedFalse"] > 0, nil
	})
	if events[status.EventReasonUpgrade] != 1 || events[status.EventReasonDegraded] != 1 {
		t.Errorf("events %v: want %q and %q once each", events, status.EventReasonUpgrade, status.EventReasonDegraded)
	}
}
