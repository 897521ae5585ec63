package kubemark

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// The Node Create registers carries the Machine's ownership mark, and ListInstances lists only Nodes whose
// mark names their providerID's Machine: not a kubemark Node without a mark (another tool's, or registered
// before marks), nor one whose mark names another Machine. Breaks if: newNode dropped the mark, or
// ListInstances listed by providerID alone.
func TestNodesCarryOwnershipMark(t *testing.T) {
	a, _ := setup(t, Options{})
	ctx := t.Context()
	m := newMachine(t, "")
	if err := a.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	if got := getNode(t, m.Name).Annotations[OwnerAnnotation]; got != testNamespace+"/"+m.Name+"/"+string(m.UID) {
		t.Fatalf("node annotation %s = %q, want <namespace>/<name>/<uid> of its Machine", OwnerAnnotation, got)
	}
	for name, mark := range map[string]string{"unmarked-kubemark-node": "", "mismarked-kubemark-node": testNamespace + "/someone-else/uid"} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{OwnerAnnotation: mark}},
			Spec: corev1.NodeSpec{ProviderID: ProviderID(testNamespace, name)}}
		if err := env.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), n) })
	}
	insts, err := a.ListInstances(ctx, testNamespace)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(insts, func(i provider.Instance) bool { return i.Name == m.Name })
	if i < 0 || !insts[i].Owner.Owns(m) || insts[i].ProviderID != ProviderID(m.Namespace, m.Name) {
		t.Errorf("instances %+v: want %s with its Machine's mark", insts, m.Name)
	}
	for _, inst := range insts {
		if inst.Name == "unmarked-kubemark-node" || inst.Name == "mismarked-kubemark-node" {
			t.Errorf("listed %s (%+v): its mark does not name its Machine", inst.Name, inst.Owner)
		}
	}
}
