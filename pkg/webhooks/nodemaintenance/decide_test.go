package nodemaintenance

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nmv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"
)

func node(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func maintenance(name, nodeName string) nmv1beta1.NodeMaintenance {
	return nmv1beta1.NodeMaintenance{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: nmv1beta1.NodeMaintenanceSpec{NodeName: nodeName}}
}

func pdb(allowed int32) policyv1.PodDisruptionBudget {
	return policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-etcd", Name: "etcd-guard-pdb"},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
}

func guardPod(nodeName string, ready corev1.ConditionStatus) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-etcd", Name: "etcd-guard-" + nodeName}, Spec: corev1.PodSpec{NodeName: nodeName}}
	if ready != "" {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}
	}
	return p
}

var (
	controlPlane = map[string]string{"node-role.kubernetes.io/control-plane": ""}
	master       = map[string]string{"node-role.kubernetes.io/master": ""}
)

// TestDecideCreate: medik8s's rules and messages, in its order.
func TestDecideCreate(t *testing.T) {
	tests := []struct {
		name  string
		facts createFacts
		want  string // "" allowed
	}{
		{"node missing", createFacts{}, "invalid nodeName, no node with name n1 found"},
		{"node missing, even with a NodeMaintenance for it", createFacts{maintenances: []nmv1beta1.NodeMaintenance{maintenance("a", "n1")}},
			"invalid nodeName, no node with name n1 found"},
		{"worker node, none in maintenance", createFacts{node: node("n1", nil), maintenances: []nmv1beta1.NodeMaintenance{maintenance("a", "n2")}}, ""},
		{"second NodeMaintenance for the node", createFacts{node: node("n1", nil), maintenances: []nmv1beta1.NodeMaintenance{maintenance("a", "n2"), maintenance("b", "n1")}},
			"invalid nodeName, a NodeMaintenance for node n1 already exists"},
		{"control plane off OpenShift: no quorum check", createFacts{node: node("n1", controlPlane)}, ""},
		{"control plane on OpenShift, no PDB: cannot tell, refused", createFacts{node: node("n1", controlPlane), openShift: true},
			"can not put master/control-plane node into maintenance at this moment, disrupting node n1 will violate etcd quorum"},
		{"master label on OpenShift, two PDBs: refused", createFacts{node: node("n1", master), openShift: true, quorum: quorumFacts{pdbs: []policyv1.PodDisruptionBudget{pdb(1), pdb(1)}}},
			"can not put master/control-plane node into maintenance at this moment, disrupting node n1 will violate etcd quorum"},
		{"PDB allows a disruption", createFacts{node: node("n1", controlPlane), openShift: true, quorum: quorumFacts{pdbs: []policyv1.PodDisruptionBudget{pdb(1)}}}, ""},
		{"PDB allows none, the node's guard pod is Ready: refused", createFacts{node: node("n1", controlPlane), openShift: true, quorum: quorumFacts{
			pdbs: []policyv1.PodDisruptionBudget{pdb(0)}, guardPods: []corev1.Pod{guardPod("n2", corev1.ConditionFalse), guardPod("n1", corev1.ConditionTrue)}}},
			"can not put master/control-plane node into maintenance at this moment, disrupting node n1 will violate etcd quorum"},
		{"PDB allows none, the node's guard pod is Ready Unknown (about to be ready): refused", createFacts{node: node("n1", controlPlane), openShift: true, quorum: quorumFacts{
			pdbs: []policyv1.PodDisruptionBudget{pdb(0)}, guardPods: []corev1.Pod{guardPod("n1", corev1.ConditionUnknown)}}},
			"can not put master/control-plane node into maintenance at this moment, disrupting node n1 will violate etcd quorum"},
		// medik8s: "Missing ready condition also means the pod is not ready", so the node is disrupted already.
		// Breaks if: a guard pod without a Ready condition counts as Ready.
		{"PDB allows none, the node's guard pod has no Ready condition: allowed", createFacts{node: node("n1", controlPlane), openShift: true, quorum: quorumFacts{
			pdbs: []policyv1.PodDisruptionBudget{pdb(0)}, guardPods: []corev1.Pod{guardPod("n1", "")}}}, ""},
		{"PDB allows none, the node's first guard pod decides", createFacts{node: node("n1", controlPlane), openShift: true, quorum: quorumFacts{
			pdbs: []policyv1.PodDisruptionBudget{pdb(0)}, guardPods: []corev1.Pod{guardPod("n1", corev1.ConditionFalse), guardPod("n1", corev1.ConditionTrue)}}}, ""},
		{"PDB allows none, the node is already disrupted (guard pod not Ready)", createFacts{node: node("n1", controlPlane), openShift: true, quorum: quorumFacts{
			pdbs: []policyv1.PodDisruptionBudget{pdb(0)}, guardPods: []corev1.Pod{guardPod("n1", corev1.ConditionFalse)}}}, ""},
		{"PDB allows none, no guard pod on the node", createFacts{node: node("n1", controlPlane), openShift: true, quorum: quorumFacts{
			pdbs: []policyv1.PodDisruptionBudget{pdb(0)}, guardPods: []corev1.Pod{guardPod("n2", corev1.ConditionTrue)}}}, ""},
		{"worker on OpenShift with no PDB: no quorum check", createFacts{node: node("n1", nil), openShift: true}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := decideCreate("n1", tt.facts)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("decideCreate = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDecideUpdate(t *testing.T) {
	a, b := maintenance("nm", "n1"), maintenance("nm", "n2")
	if err := decideUpdate(&a, &b); err == nil || err.Error() != "updating spec.NodeName isn't allowed" {
		t.Errorf("changed nodeName: %v, want updating spec.NodeName isn't allowed", err)
	}
	c := a
	c.Spec.Reason = "new reason"
	if err := decideUpdate(&a, &c); err != nil {
		t.Errorf("changed reason refused: %v", err)
	}
}
