package nodemaintenance

import (
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	nmv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/nodeutil"
)

// The messages of medik8s's NodeMaintenance webhook: scripts see the same refusals with either operator.
const (
	ErrorNodeNotExists               = "invalid nodeName, no node with name %s found"
	ErrorNodeMaintenanceExists       = "invalid nodeName, a NodeMaintenance for node %s already exists"
	ErrorControlPlaneQuorumViolation = "can not put master/control-plane node into maintenance at this moment, disrupting node %s will violate etcd quorum"
	ErrorNodeNameUpdateForbidden     = "updating spec.NodeName isn't allowed"
)

// createFacts is what deciding on a new NodeMaintenance needs.
type createFacts struct {
	node         *corev1.Node // spec.nodeName's; nil when it does not exist
	maintenances []nmv1beta1.NodeMaintenance
	openShift    bool        // read for a control-plane node only
	quorum       quorumFacts // read for a control-plane node on OpenShift only
}

// quorumFacts are the budgets in openshift-etcd and the pods a single one selects.
type quorumFacts struct {
	pdbs      []policyv1.PodDisruptionBudget
	guardPods []corev1.Pod
}

// decideCreate applies medik8s's rules in its order: the node exists, has no
// NodeMaintenance, and (control plane on OpenShift) keeps etcd quorum.
func decideCreate(nodeName string, f createFacts) error {
	if f.node == nil {
		return fmt.Errorf(ErrorNodeNotExists, nodeName)
	}
	if slices.ContainsFunc(f.maintenances, func(nm nmv1beta1.NodeMaintenance) bool { return nm.Spec.NodeName == nodeName }) {
		return fmt.Errorf(ErrorNodeMaintenanceExists, nodeName)
	}
	if f.openShift && nodeutil.IsControlPlane(f.node) && !etcdDisruptionAllowed(f.node.Name, f.quorum) {
		return fmt.Errorf(ErrorControlPlaneQuorumViolation, nodeName)
	}
	return nil
}

// decideUpdate refuses a changed spec.nodeName, for a CRD without our CEL rule.
func decideUpdate(oldNM, newNM *nmv1beta1.NodeMaintenance) error {
	if oldNM.Spec.NodeName != newNM.Spec.NodeName {
		return errors.New(ErrorNodeNameUpdateForbidden)
	}
	return nil
}

// etcdDisruptionAllowed is medik8s's rule: one budget in openshift-etcd (else cannot tell: no) that
// allows a disruption, or the node's first guard pod is not ready (no Ready condition True or Unknown:
// the node is disrupted already), or the node has none.
func etcdDisruptionAllowed(nodeName string, q quorumFacts) bool {
	if len(q.pdbs) != 1 {
		return false
	}
	if q.pdbs[0].Status.DisruptionsAllowed >= 1 {
		return true
	}
	i := slices.IndexFunc(q.guardPods, func(p corev1.Pod) bool { return p.Spec.NodeName == nodeName })
	return i < 0 || !nodeutil.GuardPodReady(&q.guardPods[i])
}
