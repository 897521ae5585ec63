package operator

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/render"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// TestVSphereFailureDomainPoliciesEnforced: the failure domain policies the operator renders
// on vSphere (VSphereMultiVCenterDay2), installed in a real API server, refuse an
// Infrastructure update removing a failure domain used by a Machine, a MachineSet scaled to
// zero or the ControlPlaneMachineSet, with OpenShift's messages, and allow removing an unused one.
// Breaks if: a policy reads the old object's failure domains, a MachineSet's own labels
// instead of its template's, or a message differs from OpenShift's.
func TestVSphereFailureDomainPoliciesEnforced(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	installCPMSCRD(t)

	policies := renderedVSpherePolicies(t, ns)
	for _, o := range policies {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("installing %s %s: %v", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
	}

	infra := &configv1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: config.ClusterConfigName}}
	infra.Spec.PlatformSpec = configv1.PlatformSpec{Type: configv1.VSpherePlatformType, VSphere: &configv1.VSpherePlatformSpec{
		FailureDomains: []configv1.VSpherePlatformFailureDomainSpec{
			failureDomain("fd-machine", "region-a", "zone-a"),
			failureDomain("fd-machineset", "region-b", "zone-b"),
			failureDomain("fd-cpms", "region-c", "zone-c"),
			failureDomain("fd-unused", "region-d", "zone-d"),
		},
	}}
	if err := env.Client.Create(ctx, infra); err != nil {
		t.Fatal(err)
	}
	infra.Status = configv1.InfrastructureStatus{
		InfrastructureName:     "test-cluster",
		ControlPlaneTopology:   configv1.HighlyAvailableTopologyMode,
		InfrastructureTopology: configv1.HighlyAvailableTopologyMode,
		PlatformStatus:         &configv1.PlatformStatus{Type: configv1.VSpherePlatformType},
	}
	if err := env.Client.Status().Update(ctx, infra); err != nil {
		t.Fatal(err)
	}

	fdLabels := func(region, zone string) map[string]string {
		return map[string]string{"machine.openshift.io/region": region, "machine.openshift.io/zone": zone}
	}
	machine := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "worker-a", Labels: fdLabels("region-a", "zone-a")}}
	// Only the template carries the labels: a set of zero replicas has no Machine.
	ms := &machinev1beta1.MachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "workers-b"}}
	ms.Spec.Replicas = ptr.To[int32](0)
	ms.Spec.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"set": "workers-b"}}
	ms.Spec.Template.Labels = map[string]string{"set": "workers-b", "machine.openshift.io/region": "region-b", "machine.openshift.io/zone": "zone-b"}
	// A Machine with one of the labels only is in no failure domain.
	partial := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "zone-only", Labels: map[string]string{"machine.openshift.io/zone": "zone-d"}}}
	for _, o := range []client.Object{machine, ms, partial, controlPlaneMachineSet(ns, "fd-cpms")} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}

	remove := func(name string, opts ...client.UpdateOption) error {
		cur := &configv1.Infrastructure{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(infra), cur); err != nil {
			return err
		}
		fds := cur.Spec.PlatformSpec.VSphere.FailureDomains[:0]
		for _, fd := range cur.Spec.PlatformSpec.VSphere.FailureDomains {
			if fd.Name != name {
				fds = append(fds, fd)
			}
		}
		cur.Spec.PlatformSpec.VSphere.FailureDomains = fds
		return env.Client.Update(ctx, cur, opts...)
	}
	// The API server loads new policies (and their param objects) asynchronously.
	poll.Eventually(t, 30*time.Second, "the policies to refuse removing a failure domain in use", func(context.Context) (bool, error) {
		return apierrors.IsInvalid(remove("fd-machine", client.DryRunAll)) &&
			apierrors.IsInvalid(remove("fd-machineset", client.DryRunAll)) &&
			apierrors.IsInvalid(remove("fd-cpms", client.DryRunAll)), nil
	})

	for _, tc := range []struct{ fd, message string }{
		{"fd-machine", "Infrastructure update would remove vSphere failure domain (region=region-a, zone=zone-a) that is still in use by Machine 'worker-a'"},
		{"fd-machineset", "Infrastructure update would remove vSphere failure domain (region=region-b, zone=zone-b) that is still in use by MachineSet 'workers-b'"},
		{"fd-cpms", "Infrastructure update would remove vSphere failure domain(s) still referenced by ControlPlaneMachineSet 'cluster': [fd-cpms]"},
	} {
		err := remove(tc.fd)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.message) {
			t.Errorf("removing %s: got %v, want Invalid with %q", tc.fd, err, tc.message)
		}
	}
	if err := remove("fd-unused"); err != nil {
		t.Errorf("removing the unused failure domain: %v", err)
	}

	// Off vSphere (the match condition) the policies do not apply.
	cur := &configv1.Infrastructure{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(infra), cur); err != nil {
		t.Fatal(err)
	}
	cur.Status.PlatformStatus = &configv1.PlatformStatus{Type: configv1.NonePlatformType}
	if err := env.Client.Status().Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if err := remove("fd-machine", client.DryRunAll); err != nil {
		t.Errorf("removing a failure domain in use with platform status None: %v", err)
	}
}

// renderedVSpherePolicies are the admission policies and bindings of the operator's render
// on vSphere with VSphereMultiVCenterDay2, the operand in namespace ns.
func renderedVSpherePolicies(t *testing.T, ns string) []client.Object {
	t.Helper()
	cfg, err := config.Build(config.Inputs{
		Namespace: ns,
		Images:    config.Images{MachineAPIOperator: "mao:test", ClusterAPIControllerVSphere: "mao:test"},
		Infrastructure: &configv1.Infrastructure{
			ObjectMeta: metav1.ObjectMeta{Name: config.ClusterConfigName},
			Spec:       configv1.InfrastructureSpec{PlatformSpec: configv1.PlatformSpec{Type: configv1.VSpherePlatformType}},
			Status:     configv1.InfrastructureStatus{PlatformStatus: &configv1.PlatformStatus{Type: configv1.VSpherePlatformType}},
		},
		FeatureGate: &configv1.FeatureGate{
			ObjectMeta: metav1.ObjectMeta{Name: config.ClusterConfigName},
			Status: configv1.FeatureGateStatus{FeatureGates: []configv1.FeatureGateDetails{{
				Enabled: []configv1.FeatureGateAttributes{{Name: render.FeatureGateVSphereMultiVCenterDay2}},
			}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := render.Render(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out []client.Object
	for _, o := range objs {
		switch o.(type) {
		case *admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
			if strings.HasPrefix(o.GetName(), "vsphere-") {
				out = append(out, o)
			}
		}
	}
	if len(out) != 2*len(render.VSphereFailureDomainPolicyNames) {
		t.Fatalf("rendered %d vSphere policies and bindings, want %d", len(out), 2*len(render.VSphereFailureDomainPolicyNames))
	}
	return out
}

func failureDomain(name, region, zone string) configv1.VSpherePlatformFailureDomainSpec {
	return configv1.VSpherePlatformFailureDomainSpec{
		Name: name, Region: region, Zone: zone, Server: "vcenter.example.com",
		Topology: configv1.VSpherePlatformTopology{
			Datacenter:     "dc",
			ComputeCluster: "/dc/host/cluster",
			Datastore:      "/dc/datastore/ds",
			Networks:       []string{"VM Network"},
		},
	}
}

// controlPlaneMachineSet is a vSphere ControlPlaneMachineSet "cluster" naming failureDomains.
func controlPlaneMachineSet(ns string, failureDomains ...string) *unstructured.Unstructured {
	var fds []any
	for _, name := range failureDomains {
		fds = append(fds, map[string]any{"name": name})
	}
	labels := map[string]any{
		"machine.openshift.io/cluster-api-cluster":      "test-cluster",
		"machine.openshift.io/cluster-api-machine-role": "master",
		"machine.openshift.io/cluster-api-machine-type": "master",
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "machine.openshift.io/v1",
		"kind":       "ControlPlaneMachineSet",
		"metadata":   map[string]any{"namespace": ns, "name": "cluster"},
		"spec": map[string]any{
			"replicas": int64(3),
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"machineType": "machines_v1beta1_machine_openshift_io",
				"machines_v1beta1_machine_openshift_io": map[string]any{
					"failureDomains": map[string]any{"platform": "VSphere", "vsphere": fds},
					"metadata":       map[string]any{"labels": labels},
					"spec":           map[string]any{"providerSpec": map[string]any{}},
				},
			},
		},
	}}
	return u
}

// installCPMSCRD installs openshift/api's ControlPlaneMachineSet CRD, read from the module
// cache at the pinned version (OpenShift's control-plane machine set operator serves it).
func installCPMSCRD(t *testing.T) {
	t.Helper()
	dir, err := testenv.ModuleDir("github.com/openshift/api")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir,
		"machine/v1/zz_generated.crd-manifests/0000_10_control-plane-machine-set_01_controlplanemachinesets-Default.crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(context.Background(), crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := deleteCRD(context.Background(), env.Client, crd.Name); err != nil {
			t.Error(err)
		}
	})
	poll.Eventually(t, 30*time.Second, "the ControlPlaneMachineSet CRD to be established", func(ctx context.Context) (bool, error) {
		cur := &apiextensionsv1.CustomResourceDefinition{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: crd.Name}, cur); err != nil {
			return false, err
		}
		for _, c := range cur.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}
