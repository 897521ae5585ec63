package nodemaintenance

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	nmv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"
	nmcontroller "github.com/machine-api-operator/machine-api-operator/pkg/controller/nodemaintenance"
)

// The messages of medik8s's NodeMaintenance webhook, so that scripts and
// users see the same refusals with either operator.
const (
	ErrorNodeNotExists               = "invalid nodeName, no node with name %s found"
	ErrorNodeMaintenanceExists       = "invalid nodeName, a NodeMaintenance for node %s already exists"
	ErrorControlPlaneQuorumViolation = "can not put master/control-plane node into maintenance at this moment, disrupting node %s will violate etcd quorum"
	ErrorNodeNameUpdateForbidden     = "updating spec.NodeName isn't allowed"
)

// createFacts is what deciding on a new NodeMaintenance needs, read from
// the API server by the handler.
type createFacts struct {
	// node is the Node spec.nodeName names; nil when it does not exist.
	node *corev1.Node
	// maintenances are the existing NodeMaintenances (all nodes).
	maintenances []nmv1beta1.NodeMaintenance
	// openShift: the cluster is OpenShift (config.openshift.io/v1 is
	// served), the only place the etcd quorum guard exists. Only read for
	// a control-plane node.
	openShift bool
	// quorum is the etcd quorum guard, read only for a control-plane node
	// on OpenShift.
	quorum quorumFacts
}

// quorumFacts are the PodDisruptionBudgets in openshift-etcd and the pods
// the single one selects (read only when there is exactly one).
type quorumFacts struct {
	pdbs      []policyv1.PodDisruptionBudget
	guardPods []corev1.Pod
}

// decideCreate refuses a NodeMaintenance for a node that does not exist or
// already has one, and, on OpenShift, for a control-plane node whose
// maintenance would break etcd quorum: medik8s's rules, in its order.
func decideCreate(nodeName string, f createFacts) error {
	if f.node == nil {
		return fmt.Errorf(ErrorNodeNotExists, nodeName)
	}
	for _, nm := range f.maintenances {
		if nm.Spec.NodeName == nodeName {
			return fmt.Errorf(ErrorNodeMaintenanceExists, nodeName)
		}
	}
	if needsQuorumCheck(f.node, f.openShift) && !etcdDisruptionAllowed(f.node.Name, f.quorum) {
		return fmt.Errorf(ErrorControlPlaneQuorumViolation, nodeName)
	}
	return nil
}

// decideUpdate refuses a changed spec.nodeName. (The CRD's CEL rule
// refuses it first, with the same message; this holds for a CRD without
// the rule, such as one another operator installed.)
func decideUpdate(oldNM, newNM *nmv1beta1.NodeMaintenance) error {
	if oldNM.Spec.NodeName != newNM.Spec.NodeName {
		return errors.New(ErrorNodeNameUpdateForbidden)
	}
	return nil
}

// needsQuorumCheck: medik8s checks the etcd quorum for control-plane nodes
// on OpenShift only, where the etcd quorum guard exists.
func needsQuorumCheck(node *corev1.Node, openShift bool) bool {
	return openShift && isControlPlane(node)
}

func isControlPlane(node *corev1.Node) bool {
	_, cp := node.Labels[nmcontroller.ControlPlaneNodeRoleLabel]
	_, master := node.Labels[nmcontroller.MasterNodeRoleLabel]
	return cp || master
}

// etcdDisruptionAllowed is medik8s's quorum rule: exactly one
// PodDisruptionBudget in openshift-etcd (none or several: cannot tell, so
// no); it allows a disruption, or the node's guard pod is already not Ready
// (the node is disrupted already), or the node has no guard pod.
func etcdDisruptionAllowed(nodeName string, q quorumFacts) bool {
	if len(q.pdbs) != 1 {
		return false
	}
	if q.pdbs[0].Status.DisruptionsAllowed >= 1 {
		return true
	}
	for _, p := range q.guardPods {
		if p.Spec.NodeName != nodeName {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse {
				return true
			}
		}
		return false
	}
	return true
}
