package machinehealthcheck

import (
	"context"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A cache behind the API server must never make a live Node look gone: not
// when the Node is missing from it, and not when it still holds the Node
// that the Machine's Node replaced under the same name (nodelink already
// points the nodeRef at the new UID).
func TestListTargetsConfirmsGoneNodes(t *testing.T) {
	machine := func() *machinev1beta1.Machine {
		return &machinev1beta1.Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m", Labels: map[string]string{"a": "1"}},
			Status:     machinev1beta1.MachineStatus{NodeRef: &corev1.ObjectReference{Kind: "Node", Name: "n", UID: "new"}},
		}
	}
	node := func(uid string) *corev1.Node {
		n := testNode()
		n.Name, n.UID = "n", types.UID(uid)
		return n
	}
	cases := []struct {
		name     string
		cached   []*corev1.Node // what the cache holds
		server   []*corev1.Node // what the API server holds
		wantNode bool
	}{
		{name: "the cache has not seen the Node yet", server: []*corev1.Node{node("new")}, wantNode: true},
		{name: "the cache still holds the replaced Node", cached: []*corev1.Node{node("old")}, server: []*corev1.Node{node("new")}, wantNode: true},
		{name: "gone on the server too", wantNode: false},
		{name: "replaced on the server too", cached: []*corev1.Node{node("old")}, server: []*corev1.Node{node("old")}, wantNode: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cacheObjs := []client.Object{machine()}
			for _, n := range tc.cached {
				cacheObjs = append(cacheObjs, n)
			}
			var serverObjs []client.Object
			for _, n := range tc.server {
				serverObjs = append(serverObjs, n)
			}
			r := NewReconciler(Options{Client: fakeClient(cacheObjs...), APIReader: fakeClient(serverObjs...), Recorder: &recorder{}})
			mhc := &machinev1beta1.MachineHealthCheck{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mhc"}}
			targets, err := r.listTargets(context.Background(), mhc, labels.SelectorFromSet(labels.Set{"a": "1"}))
			if err != nil {
				t.Fatal(err)
			}
			if len(targets) != 1 {
				t.Fatalf("%d targets, want 1", len(targets))
			}
			if got := targets[0].node != nil; got != tc.wantNode {
				t.Fatalf("Node found = %v, want %v", got, tc.wantNode)
			}
			if tc.wantNode && targets[0].node.UID != "new" {
				t.Errorf("Node UID %s, want new", targets[0].node.UID)
			}
		})
	}
}
