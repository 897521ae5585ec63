package testenv

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/manifests"
)

var env *Env

func TestMain(m *testing.M) { Main(m, &env) }

func TestMissingBinariesSayWhatToRun(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", t.TempDir())
	_, err := BinDir()
	if !errors.Is(err, ErrMissingBinaries) || !strings.Contains(err.Error(), "run make tools") {
		t.Fatalf("BinDir() error = %v, want one that says to run make tools", err)
	}
	if _, err := New(Options{}); !errors.Is(err, ErrMissingBinaries) {
		t.Fatalf("New() error = %v, want ErrMissingBinaries", err)
	}
}

func TestCRDsAreEstablished(t *testing.T) {
	ctx := context.Background()
	for _, set := range []manifests.CRDSet{manifests.MachineCRDs, manifests.ConfigCRDs, manifests.NodeMaintenanceCRDs, manifests.MachineDeploymentCRDs} {
		crds, err := manifests.CRDs(set)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range crds {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: want.Name}, got); err != nil {
				t.Fatalf("getting CRD %s: %v", want.Name, err)
			}
			if !crdEstablished(got) {
				t.Errorf("CRD %s is not Established: %+v", want.Name, got.Status.Conditions)
			}
		}
	}
}

func crdEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

func TestMachineRoundTrip(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := createNamespace(ctx, t)

	want := &machinev1beta1.Machine{
		ObjectMeta: metav1.ObjectMeta{
			Name:      "worker-0",
			Namespace: ns,
			Labels:    map[string]string{"machine.openshift.io/cluster-api-cluster": "test"},
		},
		Spec: machinev1beta1.MachineSpec{
			ProviderID: ptr.To("kubemark://" + ns + "/worker-0"),
			ProviderSpec: machinev1beta1.ProviderSpec{
				Value: &runtime.RawExtension{Raw: []byte(`{"apiVersion":"example.io/v1","kind":"Spec","cpu":2}`)},
			},
			Taints: nil,
		},
	}
	if err := env.Client.Create(ctx, want); err != nil {
		t.Fatalf("creating Machine: %v", err)
	}
	phase := "Provisioning"
	want.Status.Phase = &phase
	if err := env.Client.Status().Update(ctx, want); err != nil {
		t.Fatalf("updating Machine status: %v", err)
	}

	got := &machinev1beta1.Machine{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
		t.Fatalf("getting Machine: %v", err)
	}
	if *got.Spec.ProviderID != *want.Spec.ProviderID {
		t.Errorf("providerID = %q, want %q", *got.Spec.ProviderID, *want.Spec.ProviderID)
	}
	if string(got.Spec.ProviderSpec.Value.Raw) != string(want.Spec.ProviderSpec.Value.Raw) {
		t.Errorf("providerSpec = %s, want %s (preserved unknown fields)", got.Spec.ProviderSpec.Value.Raw, want.Spec.ProviderSpec.Value.Raw)
	}
	if got.Labels["machine.openshift.io/cluster-api-cluster"] != "test" {
		t.Errorf("labels = %v", got.Labels)
	}
	if got.Status.Phase == nil || *got.Status.Phase != phase {
		t.Errorf("status.phase = %v, want %s", got.Status.Phase, phase)
	}
}

func TestMachineHealthCheckSchema(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := createNamespace(ctx, t)

	mhc := func(name string, maxUnhealthy intstr.IntOrString) *machinev1beta1.MachineHealthCheck {
		return &machinev1beta1.MachineHealthCheck{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: machinev1beta1.MachineHealthCheckSpec{
				Selector: metav1.LabelSelector{MatchLabels: map[string]string{"role": "worker"}},
				UnhealthyConditions: []machinev1beta1.UnhealthyCondition{
					{Type: "Ready", Status: "Unknown", Timeout: metav1.Duration{Duration: 5 * time.Minute}},
				},
				MaxUnhealthy: &maxUnhealthy,
			},
		}
	}

	for _, valid := range []intstr.IntOrString{intstr.FromString("40%"), intstr.FromInt32(3)} {
		if err := env.Client.Create(ctx, mhc("valid-"+strings.TrimSuffix(valid.String(), "%"), valid)); err != nil {
			t.Errorf("maxUnhealthy %q rejected: %v", valid.String(), err)
		}
	}

	err := env.Client.Create(ctx, mhc("invalid", intstr.FromString("abc")))
	if !apierrors.IsInvalid(err) {
		t.Fatalf("maxUnhealthy \"abc\": got error %v, want Invalid", err)
	}
	if !strings.Contains(err.Error(), "maxUnhealthy") {
		t.Errorf("error does not name the field: %v", err)
	}
}
