package operator

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/machine-api-operator/machine-api-operator/manifests"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/status"
	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// bareCluster is an API server of its own for one test, with only the CRDs
// the test installs.
type bareCluster struct {
	cfg *rest.Config
	c   client.Client
}

// startBareCluster starts an API server without any CRD.
func startBareCluster(t *testing.T) *bareCluster {
	t.Helper()
	dir, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	s := scheme.New()
	e := &envtest.Environment{BinaryAssetsDirectory: dir, Scheme: s,
		ControlPlaneStartTimeout: 60 * time.Second, ControlPlaneStopTimeout: 30 * time.Second}
	cfg, err := e.Start()
	if err != nil {
		t.Fatalf("starting a bare API server: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stopping the bare API server: %v", err)
		}
	})
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return &bareCluster{cfg: cfg, c: c}
}

// installCRDs creates the CRDs as fieldManager would and waits until each
// is served.
func (b *bareCluster) installCRDs(t *testing.T, fieldManager string, crds ...*apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	ctx := context.Background()
	for _, crd := range crds {
		crd = crd.DeepCopy()
		crd.ResourceVersion = ""
		if err := b.c.Create(ctx, crd, client.FieldOwner(fieldManager)); err != nil {
			t.Fatalf("creating CRD %s: %v", crd.Name, err)
		}
	}
	for _, crd := range crds {
		poll.Eventually(t, 30*time.Second, "CRD "+crd.Name+" established", func(ctx context.Context) (bool, error) {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := b.c.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
				return false, err
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		// Established comes before discovery serves the kind: wait until the
		// client can map it, or a Create right after may find no match.
		gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
		poll.Eventually(t, 30*time.Second, "CRD "+crd.Name+" served", func(ctx context.Context) (bool, error) {
			_, err := b.c.RESTMapper().RESTMapping(gk, crd.Spec.Versions[0].Name)
			return err == nil, nil
		})
	}
}

func (b *bareCluster) namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "mao-"}}
	if err := b.c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// crd returns the live CRD name, nil if it does not exist.
func (b *bareCluster) crd(ctx context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	err := b.c.Get(ctx, client.ObjectKey{Name: name}, crd)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return crd, err
}

func crdSet(t *testing.T, set manifests.CRDSet) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crds, err := manifests.CRDs(set)
	if err != nil {
		t.Fatal(err)
	}
	return crds
}

// crdNamed picks the CRD name out of crds.
func crdNamed(t *testing.T, crds []*apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	for _, c := range crds {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no CRD %s", name)
	return nil
}

// managers are the field managers of crd's spec and metadata (the API
// server writes its status).
func managers(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, e := range crd.ManagedFields {
		if e.Subresource == "" {
			out = append(out, e.Manager)
		}
	}
	return out
}

// TestStartsOnBareAPIServer: the operator started alone on an API server
// without a single CRD does not exit: it installs the CRDs it renders, logs
// that it cannot report (no clusteroperators CRD), reports the missing
// Infrastructure CRD once the ClusterOperator CRD exists, and becomes
// Available once the rest of the vanilla kustomization's CRDs and a kubemark
// Infrastructure exist, without a restart.
func TestStartsOnBareAPIServer(t *testing.T) {
	b := startBareCluster(t)
	ns := b.namespace(t)
	startOperator(t, writeImages(t, testImages), harnessOptions{ns: ns, restConfig: b.cfg})

	// Its own CRDs: the Machine API and NodeMaintenance, applied by it.
	for _, name := range []string{"machines.machine.openshift.io", "machinesets.machine.openshift.io",
		"machinehealthchecks.machine.openshift.io", config.NodeMaintenanceCRDName} {
		poll.Eventually(t, 60*time.Second, "CRD "+name+" applied by the operator", func(ctx context.Context) (bool, error) {
			crd, err := b.crd(ctx, name)
			if err != nil || crd == nil {
				return false, err
			}
			return slices.Contains(managers(crd), config.FieldManager), nil
		})
	}

	// The ClusterOperator CRD comes first: the operator reports there that
	// the Infrastructure CRD is missing.
	configCRDs := crdSet(t, manifests.ConfigCRDs)
	b.installCRDs(t, "kubectl", crdNamed(t, configCRDs, "clusteroperators.config.openshift.io"))
	waitConditionIn(t, b.c, configv1.OperatorDegraded, configv1.ConditionTrue, config.ReasonInfrastructureNotFound,
		"infrastructures.config.openshift.io CRD is not installed")

	// The rest of what the kustomization installs, and the platform.
	var rest []*apiextensionsv1.CustomResourceDefinition
	for _, crd := range configCRDs {
		if crd.Name != "clusteroperators.config.openshift.io" {
			rest = append(rest, crd)
		}
	}
	b.installCRDs(t, "kubectl", rest...)
	setInfrastructureIn(t, b.c, configv1.ExternalPlatformType, config.KubemarkPlatformName)
	waitDeploymentIn(t, b.c, ns)
	setDeploymentAvailableIn(t, b.c, ns, true)
	waitConditionIn(t, b.c, configv1.OperatorAvailable, configv1.ConditionTrue, status.ReasonAsExpected, "")
	waitConditionIn(t, b.c, configv1.OperatorDegraded, configv1.ConditionFalse, status.ReasonAsExpected, "")
}

// serviceCACRD is a minimal operator.openshift.io/v1 ServiceCA CRD: its
// presence is how the operator knows service-ca runs.
func serviceCACRD() *apiextensionsv1.CustomResourceDefinition {
	return anyFieldCRD("operator.openshift.io", "servicecas", "serviceca", "ServiceCA")
}

// cvoManager is the field manager of the cluster version operator's writes.
const cvoManager = "cluster-version-operator"

// TestOpenShiftDetectionFollowsTheCluster: on a cluster that looks like a
// fresh OpenShift install (ClusterVersion "version", config CRDs, no
// Machine API CRDs yet, no service-ca), the operator never applies the
// Machine API CRDs: it reports them missing, picks them up when the cluster
// version operator installs them, and switches to service-ca's certificates
// when service-ca appears, all without a restart.
func TestOpenShiftDetectionFollowsTheCluster(t *testing.T) {
	ctx := context.Background()
	b := startBareCluster(t)
	b.installCRDs(t, cvoManager, crdSet(t, manifests.ConfigCRDs)...)
	cv := &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: config.ClusterVersionName},
		Spec: configv1.ClusterVersionSpec{ClusterID: "5a7d3d5e-6f0b-4d4a-9c55-1c7a8a9e0b11"}}
	if err := b.c.Create(ctx, cv); err != nil {
		t.Fatal(err)
	}
	setInfrastructureIn(t, b.c, configv1.ExternalPlatformType, config.KubemarkPlatformName)
	ns := b.namespace(t)
	startOperator(t, writeImages(t, testImages), harnessOptions{ns: ns, restConfig: b.cfg, degradedAfter: time.Second})

	// No service-ca yet: the operator issues the webhook certificates.
	waitDeploymentIn(t, b.c, ns)
	poll.Eventually(t, 30*time.Second, "webhooks carry the operator's CA bundle", func(ctx context.Context) (bool, error) {
		return webhookCABundleSet(ctx, b.c)
	})
	// The Machine API CRDs are the cluster version operator's: reported
	// missing, never applied.
	waitConditionIn(t, b.c, configv1.OperatorDegraded, configv1.ConditionTrue, ReasonMissingCRDs, "machines.machine.openshift.io")
	if crd, err := b.crd(ctx, "machines.machine.openshift.io"); err != nil || crd != nil {
		t.Fatalf("the operator installed the Machine CRD on OpenShift (err %v)", err)
	}

	// The cluster version operator installs them: picked up, MachineSets
	// included (the install gate reads them from the cache).
	b.installCRDs(t, cvoManager, crdSet(t, manifests.MachineCRDs)...)
	sel := map[string]string{"machine.openshift.io/cluster-api-machineset": "worker"}
	ms := &machinev1beta1.MachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "worker"}}
	ms.Spec.Replicas = ptr.To(int32(2))
	ms.Spec.Selector.MatchLabels = sel
	ms.Spec.Template.Labels = sel
	if err := b.c.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	// Degraded for the operand (not yet available) instead of the CRDs:
	// the operator has seen them served and started their watches.
	waitConditionIn(t, b.c, configv1.OperatorDegraded, configv1.ConditionTrue, status.ReasonOperandUnavailable, "")
	setDeploymentAvailableIn(t, b.c, ns, true)
	waitConditionIn(t, b.c, configv1.OperatorAvailable, configv1.ConditionFalse, status.ReasonInitializing, `MachineSet "worker"`)
	waitConditionIn(t, b.c, configv1.OperatorDegraded, configv1.ConditionFalse, status.ReasonAsExpected, "")

	// service-ca arrives: the operator hands the certificates over.
	b.installCRDs(t, "cluster-version-operator", serviceCACRD())
	poll.Eventually(t, 30*time.Second, "webhook configuration handed to service-ca", func(ctx context.Context) (bool, error) {
		set, err := webhookCABundleSet(ctx, b.c)
		if err != nil || set {
			return false, err
		}
		svc := &corev1.Service{}
		if err := b.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: config.WebhookServiceName}, svc); err != nil {
			return false, err
		}
		if svc.Annotations["service.beta.openshift.io/serving-cert-secret-name"] != config.WebhookCertSecretName {
			return false, fmt.Errorf("service %s has no serving-cert annotation yet", svc.Name)
		}
		// Its own Secrets are gone, so service-ca can create them.
		secret := &corev1.Secret{}
		err = b.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: config.WebhookCertSecretName}, secret)
		if !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("secret %s still exists (err %v)", config.WebhookCertSecretName, err)
		}
		return true, nil
	})

	// The Machine API CRDs stayed the cluster version operator's alone.
	for _, name := range []string{"machines.machine.openshift.io", "machinesets.machine.openshift.io", "machinehealthchecks.machine.openshift.io"} {
		crd, err := b.crd(ctx, name)
		if err != nil || crd == nil {
			t.Fatalf("CRD %s: %v", name, err)
		}
		if got := managers(crd); !slices.Equal(got, []string{cvoManager}) {
			t.Errorf("CRD %s field managers %v, want only %s", name, got, cvoManager)
		}
	}
}

// webhookCABundleSet tells whether the validating webhook configuration
// exists with a caBundle in every webhook.
func webhookCABundleSet(ctx context.Context, c client.Client) (bool, error) {
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: config.WebhookConfigurationName}, vwc); err != nil {
		return false, err
	}
	for _, w := range vwc.Webhooks {
		if len(w.ClientConfig.CABundle) == 0 {
			return false, nil
		}
	}
	return len(vwc.Webhooks) > 0, nil
}
