package safety_test

import (
	"fmt"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/freeze"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machineset"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/safety"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// TestFreezeStopsARunawayMachineSet: a MachineSet controller that cannot
// see its Machines (its cache selects none, as a broken watch would) creates
// replicas more every time its expectations time out; the overshoot freeze
// (its own manager, seeing the Machines) stops it at the threshold, 2×2+2 =
// 6, plus at most the one pass in flight. Breaks if: the MachineSet
// controller ignored the freeze (the count keeps growing), or the overshoot
// controller never froze the set.
func TestFreezeStopsARunawayMachineSet(t *testing.T) {
	env := safety.SharedEnv()
	ctx := t.Context()
	ns := testenv.CreateNamespace(t, env.Client, "runaway-")

	blind := env.NewManager(t, nil, cache.Options{
		DefaultNamespaces: map[string]cache.Config{ns: {}},
		ByObject: map[client.Object]cache.ByObject{
			&machinev1beta1.Machine{}: {Label: labels.SelectorFromSet(labels.Set{"never": "matches"})},
		},
	})
	wt := testenv.NewWorkTracker()
	ms := machineset.NewReconciler(machineset.Options{Namespace: ns, ExpectationsTimeout: 300 * time.Millisecond})
	testenv.Setup(t, blind, wt, ms)
	testenv.Run(t, blind)

	seeing := env.NewManager(t, nil, cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}})
	oc := safety.NewOvershootController(safety.OvershootOptions{SafetyUp: 2, SafetyDown: 1, Period: time.Second}, ns)
	testenv.Setup(t, seeing, nil, oc)
	testenv.Run(t, seeing)

	set := createSet(t, env, ns, "runaway", 2)
	count := func() int {
		list := &machinev1beta1.MachineList{}
		if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	poll.Eventually(t, 30*time.Second, "the runaway set frozen", poll.Check(func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(set), set); err != nil {
			return err
		}
		if !freeze.MachineSetFrozen(set) {
			return fmt.Errorf("not frozen with %d Machines", count())
		}
		return nil
	}))
	// Once the set controller has handled everything (its pending
	// expectations expired and the frozen set reconciled), nothing more was
	// created.
	frozenAt := count()
	poll.Eventually(t, 30*time.Second, "the MachineSet controller settled", wt.Quiescent(5*time.Second,
		testenv.CaughtUp(env.Client, blind.GetClient(), &machinev1beta1.MachineSetList{}, client.InNamespace(ns))))
	if frozenAt > 8 {
		t.Errorf("%d Machines when frozen, want at most 8 (the threshold 6 and one pass of 2 in flight)", frozenAt)
	}
	if got := count(); got != frozenAt {
		t.Errorf("%d Machines once settled, %d when frozen: the frozen set still creates", got, frozenAt)
	}
}
