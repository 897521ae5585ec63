package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/manifests"
	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand/crdwait/crdwaittest"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// machineDeploymentStarts installs the MachineDeployment CRD on the running
// binary's API server and waits until a MachineDeployment of 2 gets its
// MachineSet and 2 Machines (part of TestStartsWithoutMachineCRDs).
func machineDeploymentStarts(t *testing.T, e *crdwaittest.Env, ns string) {
	t.Helper()
	e.Install(t, manifests.MachineDeploymentCRDs)
	c := e.Client
	ctx := context.Background()
	labels := map[string]string{"machine.openshift.io/cluster-api-machineset": "md1"}
	md := &mdv1beta1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "md1"},
		Spec: mdv1beta1.MachineDeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: metav1.LabelSelector{MatchLabels: labels},
			Template: machinev1beta1.MachineTemplateSpec{ObjectMeta: machinev1beta1.ObjectMeta{Labels: labels}},
		},
	}
	// The client maps the new kind once discovery shows it.
	poll.Eventually(t, 30*time.Second, "MachineDeployment md1 created", poll.Check(func() error {
		if err := c.Create(ctx, md.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	}))
	poll.Eventually(t, 60*time.Second, "md1's MachineSet creates 2 Machines", poll.Check(func() error {
		sets := &machinev1beta1.MachineSetList{}
		if err := c.List(ctx, sets, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
			return err
		}
		if len(sets.Items) != 1 || metav1.GetControllerOf(&sets.Items[0]) == nil {
			return fmt.Errorf("%d MachineSets", len(sets.Items))
		}
		machines := &machinev1beta1.MachineList{}
		if err := c.List(ctx, machines, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
			return err
		}
		if len(machines.Items) != 2 {
			return fmt.Errorf("%d Machines, want 2", len(machines.Items))
		}
		return nil
	}))
}
