package operator

import (
	"context"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/status"
)

// ReasonMissingCRDs means a CRD the Machine API needs, which another component
// installs, does not exist (Degraded after the grace period).
const ReasonMissingCRDs = "MissingCRDs"

// Event reasons on the ClusterOperator when the NodeMaintenance API changes hands.
const (
	ReasonNodeMaintenanceForeign = "NodeMaintenanceForeign"
	ReasonNodeMaintenanceOwned   = "NodeMaintenanceOwned"
)

// reportedFacts are the facts last logged or recorded, so each change is told once.
type reportedFacts struct {
	nodeMaintenanceOwner string // "" when this operator owns the CRD
	unreported           string // status last logged without the ClusterOperator CRD
}

// notes are the facts about the cluster the Available message states.
func notes(cfg config.Config) []string {
	if cfg.NodeMaintenanceForeign {
		return []string{nodeMaintenanceForeignMessage(cfg.NodeMaintenanceOwner)}
	}
	return nil
}

func nodeMaintenanceForeignMessage(owner string) string {
	return fmt.Sprintf("the NodeMaintenance CRD was installed by another component (field managers: %s), "+
		"so this operator neither applies it nor runs the NodeMaintenance controller and webhook", owner)
}

// recordOwnership records an event on the ClusterOperator (and logs) when
// the NodeMaintenance CRD's owner changes.
func (o *Operator) recordOwnership(ctx context.Context, co *configv1.ClusterOperator, cfg config.Config) {
	owner, prev := cfg.NodeMaintenanceOwner, o.reported.nodeMaintenanceOwner
	if cfg.PlatformType == "" || owner == prev {
		return
	}
	o.reported.nodeMaintenanceOwner = owner
	reason, msg := ReasonNodeMaintenanceForeign, nodeMaintenanceForeignMessage(owner)
	if owner == "" {
		reason, msg = ReasonNodeMaintenanceOwned, fmt.Sprintf("the NodeMaintenance CRD is no longer installed by another component (was: %s): this operator installs it and runs the NodeMaintenance controller", prev)
	}
	log.FromContext(ctx).Info("NodeMaintenance API ownership: "+msg, "reason", reason)
	if o.status.Recorder != nil {
		o.status.Recorder.Eventf(co, nil, corev1.EventTypeNormal, reason, "Sync", "%s", msg)
	}
}

// logUnreported logs the status the operator cannot write for lack of the
// clusteroperators CRD, once per change.
func (o *Operator) logUnreported(ctx context.Context, obs status.Observation) {
	msg := "synced"
	if obs.Failure != nil {
		msg = obs.Failure.Reason + ": " + obs.Failure.Message
	}
	if msg == o.reported.unreported {
		return
	}
	o.reported.unreported = msg
	log.FromContext(ctx).Info("cannot report on the ClusterOperator: the clusteroperators.config.openshift.io CRD is not installed; "+
		"install the config.openshift.io CRDs (on vanilla Kubernetes: kustomize build . | kubectl apply --server-side -f -)", "status", msg)
}
