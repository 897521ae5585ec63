package safety_test

import (
	"fmt"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/freeze"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machineset"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/safety"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// events counts the events recorded with each reason.
type events struct{ reasons chan string }

func (e events) Eventf(_, _ runtime.Object, _, reason, _, _ string, _ ...any) {
	select {
	case e.reasons <- reason:
	default:
	}
}

// createSet creates MachineSet name of replicas, its Machines labelled set=name.
func createSet(t *testing.T, env *testenv.Env, ns, name string, replicas int32) *machinev1beta1.MachineSet {
	t.Helper()
	set := &machinev1beta1.MachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	set.Spec.Replicas = ptr.To(replicas)
	set.Spec.Selector.MatchLabels = map[string]string{"set": name}
	set.Spec.Template.Labels = map[string]string{"set": name}
	if err := env.Client.Create(t.Context(), set); err != nil {
		t.Fatal(err)
	}
	return set
}

// TestScaleDownDoesNotFreeze: scaling a set of 6 to 0 leaves, for a moment,
// 6 Machines not yet being deleted against a threshold of 2×0+2 = 2; the
// freeze waits until the MachineSet controller has acted on the new spec,
// and then its deletions have taken the Machines out of the count. Breaks
// if: decideOvershoot froze a set whose latest spec is not observed yet.
func TestScaleDownDoesNotFreeze(t *testing.T) {
	env := safety.SharedEnv()
	ctx := t.Context()
	ns := testenv.CreateNamespace(t, env.Client, "scaledown-")
	mgr := env.NewManager(t, nil, cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}})
	testenv.Setup(t, mgr, nil, machineset.NewReconciler(machineset.Options{Namespace: ns}))
	oc := safety.NewOvershootController(safety.OvershootOptions{SafetyUp: 2, SafetyDown: 1, Period: time.Second}, ns)
	rec := events{reasons: make(chan string, 100)}
	safety.SetRecorder(oc, rec)
	testenv.Setup(t, mgr, nil, oc)
	testenv.Run(t, mgr)

	set := createSet(t, env, ns, "shrinking", 6)
	count := func() (int, error) {
		list := &machinev1beta1.MachineList{}
		err := env.Client.List(ctx, list, client.InNamespace(ns))
		return len(list.Items), err
	}
	poll.Eventually(t, 30*time.Second, "6 Machines", poll.Check(func() error {
		if n, err := count(); err != nil || n != 6 {
			return fmt.Errorf("%d Machines (%v)", n, err)
		}
		return nil
	}))
	base := set.DeepCopy()
	set.Spec.Replicas = ptr.To(int32(0))
	if err := env.Client.Patch(ctx, set, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 30*time.Second, "0 Machines", poll.Check(func() error {
		if n, err := count(); err != nil || n != 0 {
			return fmt.Errorf("%d Machines (%v)", n, err)
		}
		return nil
	}))
	// A freeze would have come while the Machines were still there.
	for done := false; !done; {
		select {
		case r := <-rec.reasons:
			if r == safety.EventFrozeMachineSet {
				t.Errorf("the scale-down froze the set")
			}
		default:
			done = true
		}
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(set), set); err != nil {
		t.Fatal(err)
	}
	if freeze.MachineSetFrozen(set) {
		t.Errorf("the set is frozen: labels %v conditions %+v", set.Labels, set.Status.Conditions)
	}
}
