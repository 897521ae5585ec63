package kubemark

import (
	"context"
	"strings"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machine"
)

// The machine controller with the kubemark provider leaves a Machine of
// another provider (an AWS providerSpec, as on an OpenShift cluster where
// this binary would be deployed by mistake) untouched: no Node, no
// finalizer, no phase, not Failed; it says which provider the Machine needs.
// (Before, the kubemark provider rejected the providerSpec as invalid and the
// Machine became Failed, which a MachineHealthCheck then deletes.)
func TestForeignProviderSpecUntouched(t *testing.T) {
	a, _ := setup(t, Options{})
	ctx := t.Context()
	m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "foreign-aws"}}
	m.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: []byte(`{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig","instanceType":"m6i.xlarge"}`)}
	if err := env.Client.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), m) })

	r := machine.NewReconciler(machine.Options{Client: env.Client, APIReader: env.Client, Actuator: a})
	for range 2 {
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(m)}); err != nil {
			t.Fatal(err)
		}
	}
	got := &machinev1beta1.Machine{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(m), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != nil || got.Status.ErrorReason != nil || len(got.Finalizers) > 0 {
		t.Errorf("touched: phase %v, errorReason %v, finalizers %v", got.Status.Phase, got.Status.ErrorReason, got.Finalizers)
	}
	var c *machinev1beta1.Condition
	for i := range got.Status.Conditions {
		if got.Status.Conditions[i].Type == machine.ProviderSupportedCondition {
			c = &got.Status.Conditions[i]
		}
	}
	if c == nil || c.Status != corev1.ConditionFalse || c.Reason != machine.ReasonUnsupportedProvider ||
		!strings.Contains(c.Message, "AWSMachineProviderConfig") || !strings.Contains(c.Message, "kubemark.machine-api-operator.io") {
		t.Errorf("ProviderSupported condition: %+v", c)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: m.Name}, &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Errorf("a node was registered for a Machine of another provider: %v", err)
	}
}
