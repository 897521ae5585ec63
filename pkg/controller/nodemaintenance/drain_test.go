package nodemaintenance

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	nmv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"
)

// TestDrainerError: medik8s's kubectl drain error texts. Breaks if: a text, the pods' order or the
// aggregation ("[a, b]", one alone bare) differs from kubectl's.
func TestDrainerError(t *testing.T) {
	pod := func(ns, name string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	pdb := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
	other := apierrors.NewForbidden(corev1.Resource("pods"), "x", fmt.Errorf("no"))
	tests := []struct {
		name string
		pods []corev1.Pod
		errs map[string]error
		want string
	}{
		{"blocked by a PDB", []corev1.Pod{pod("ns", "db-0")}, map[string]error{"ns/db-0": pdb},
			`error when evicting pods/"db-0" -n "ns": global timeout reached: 30s`},
		{"terminating", []corev1.Pod{pod("ns", "slow-0")}, nil,
			`error when waiting for pod "slow-0" in namespace "ns" to terminate: context deadline exceeded`},
		{"another eviction error", []corev1.Pod{pod("ns", "x")}, map[string]error{"ns/x": other},
			`error when evicting pods/"x" -n "ns": ` + other.Error()},
		{"several, by namespace and name", []corev1.Pod{pod("b", "a"), pod("a", "z"), pod("a", "b")}, map[string]error{"a/z": pdb},
			`[error when waiting for pod "b" in namespace "a" to terminate: context deadline exceeded, ` +
				`error when evicting pods/"z" -n "a": global timeout reached: 30s, ` +
				`error when waiting for pod "a" in namespace "b" to terminate: context deadline exceeded]`},
	}
	for _, tt := range tests {
		if got := drainerError(tt.pods, tt.errs); got != tt.want {
			t.Errorf("%s: drainerError = %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

// TestLastErrorIsKubectlsAfterTheDrainerTimeout: in the drain's first DrainerTimeout lastError is this
// project's; after it, the error medik8s's drain returns for the pods left. Breaks if: lastError keeps
// this project's text past DrainerTimeout (or takes kubectl's before).
func TestLastErrorIsKubectlsAfterTheDrainerTimeout(t *testing.T) {
	const node = "kubectl-text-node"
	createNode(t, node)
	ns := createNamespace(t, "")
	db := map[string]string{"app": "db"}
	createPod(t, ns, "db-0", node, db)
	createPDB(t, ns, "db", db, 0)
	createPod(t, ns, "slow-0", node, nil, func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](3600) })

	createNM(t, "kubectl-text", node)
	waitPhase(t, "kubectl-text", nmv1beta1.MaintenanceRunning, func(st nmv1beta1.NodeMaintenanceStatus) bool {
		return st.LastError == "eviction blocked by a PodDisruptionBudget: "+ns+"/db-0"
	})
	clk.Advance(DrainerTimeout + time.Second)
	wakeNode(t, node)
	want := fmt.Sprintf(`[error when evicting pods/"db-0" -n %q: global timeout reached: 30s, `+
		`error when waiting for pod "slow-0" in namespace %q to terminate: context deadline exceeded]`, ns, ns)
	waitPhase(t, "kubectl-text", nmv1beta1.MaintenanceRunning, func(st nmv1beta1.NodeMaintenanceStatus) bool { return st.LastError == want })
}
