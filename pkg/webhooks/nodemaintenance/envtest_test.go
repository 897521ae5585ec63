package nodemaintenance

import (
	"context"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/machine-api-operator/machine-api-operator/manifests"
	nmv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand/crdwait/crdwaittest"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/render"
	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// renderedWebhook returns the operator's machine-api validating
// configuration for a kubemark cluster, with only the NodeMaintenance
// webhook, after checking that it points at the path served here.
func renderedWebhook(t *testing.T) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	objs, err := render.Render(config.Config{
		Namespace: config.DefaultNamespace, PlatformType: configv1.ExternalPlatformType, ExternalPlatformName: config.KubemarkPlatformName,
		Images:        config.Images{MachineAPIOperator: "example.com/mao:test", ClusterAPIControllerKubemark: "example.com/mao:test"},
		ProviderImage: "example.com/mao:test", MachineHealthCheckEnabled: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		vwc, ok := o.(*admissionregistrationv1.ValidatingWebhookConfiguration)
		if !ok || vwc.Name != config.WebhookConfigurationName {
			continue
		}
		for _, w := range vwc.Webhooks {
			if w.Name != WebhookName {
				continue
			}
			if w.ClientConfig.Service == nil || w.ClientConfig.Service.Path == nil || *w.ClientConfig.Service.Path != Path {
				t.Fatalf("rendered clientConfig %+v, want path %s", w.ClientConfig, Path)
			}
			out := vwc.DeepCopy()
			out.Webhooks = []admissionregistrationv1.ValidatingWebhook{w}
			return out
		}
	}
	t.Fatalf("the operator renders no %s webhook", WebhookName)
	return nil
}

// startWithWebhook starts an API server with the NodeMaintenance CRD and the
// rendered webhook configuration, and a manager serving the webhook as
// machineset-controller does (SetupWithManager).
func startWithWebhook(t *testing.T) (*envtest.Environment, client.Client) {
	t.Helper()
	binDir, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	s := scheme.New()
	env := &envtest.Environment{
		BinaryAssetsDirectory: binDir,
		CRDs:                  crdwaittest.CRDs(t, manifests.NodeMaintenanceCRDs),
		CRDInstallOptions:     envtest.CRDInstallOptions{Scheme: s},
		Scheme:                s,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			LocalServingHost:   "127.0.0.1",
			ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{renderedWebhook(t)},
		},
		ControlPlaneStartTimeout: 60 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest from %s: %v", binDir, err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})
	wo := env.WebhookInstallOptions
	mgr, err := manager.New(cfg, manager.Options{
		Scheme: s, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: wo.LocalServingCertDir}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	testenv.Run(t, mgr)
	// failurePolicy is Ignore: until the server answers, requests pass.
	started := mgr.GetWebhookServer().StartedChecker()
	poll.Eventually(t, 30*time.Second, "the webhook server serves", poll.Check(func() error { return started(nil) }))
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return env, c
}

// TestWebhookThroughAPIServer: the API server calls the rendered webhook,
// which refuses with medik8s's messages; the etcd quorum rule applies once
// the cluster is OpenShift (ClusterVersion served), without a restart.
func TestWebhookThroughAPIServer(t *testing.T) {
	env, c := startWithWebhook(t)
	ctx := context.Background()
	create := func(name, nodeName string) error {
		return c.Create(ctx, &nmv1beta1.NodeMaintenance{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: nmv1beta1.NodeMaintenanceSpec{NodeName: nodeName}})
	}
	refused := func(t *testing.T, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want refused with %q", err, want)
		}
	}
	byWebhook := `admission webhook "vnodemaintenance.kb.io" denied the request: `
	newNode := func(t *testing.T, name string, labels map[string]string) {
		t.Helper()
		if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("missing node", func(t *testing.T) {
		refused(t, create("for-missing", "missing"), byWebhook+"invalid nodeName, no node with name missing found")
	})
	t.Run("second NodeMaintenance for a node", func(t *testing.T) {
		newNode(t, "w1", nil)
		if err := create("w1-first", "w1"); err != nil {
			t.Fatalf("first NodeMaintenance of w1 refused: %v", err)
		}
		refused(t, create("w1-second", "w1"), byWebhook+"invalid nodeName, a NodeMaintenance for node w1 already exists")
	})
	t.Run("changed nodeName", func(t *testing.T) {
		nm := &nmv1beta1.NodeMaintenance{}
		if err := c.Get(ctx, client.ObjectKey{Name: "w1-first"}, nm); err != nil {
			t.Fatal(err)
		}
		nm.Spec.NodeName = "w2"
		// The CRD's CEL rule refuses it before the webhook, with medik8s's message.
		refused(t, c.Update(ctx, nm), "updating spec.NodeName isn't allowed")
	})
	t.Run("control plane off OpenShift: no quorum check", func(t *testing.T) {
		newNode(t, "cp1", map[string]string{"node-role.kubernetes.io/control-plane": ""})
		if err := create("cp1", "cp1"); err != nil {
			t.Errorf("refused: %v", err)
		}
	})
	t.Run("control plane on OpenShift: etcd quorum guard", func(t *testing.T) {
		if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{CRDs: crdwaittest.CRDs(t, manifests.ConfigCRDs)}); err != nil {
			t.Fatal(err)
		}
		newNode(t, "cp2", map[string]string{"node-role.kubernetes.io/master": ""})
		quorum := "can not put master/control-plane node into maintenance at this moment, disrupting node cp2 will violate etcd quorum"
		// No PodDisruptionBudget in openshift-etcd: cannot tell, refused.
		poll.Eventually(t, 30*time.Second, "refused for etcd quorum once ClusterVersion is served", poll.Check(func() error {
			err := create("cp2", "cp2")
			if err == nil || !strings.Contains(err.Error(), byWebhook+quorum) {
				_ = c.Delete(ctx, &nmv1beta1.NodeMaintenance{ObjectMeta: metav1.ObjectMeta{Name: "cp2"}})
				return err
			}
			return nil
		}))
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "openshift-etcd"}}); err != nil {
			t.Fatal(err)
		}
		pdb := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-etcd", Name: "etcd-guard-pdb"},
			Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(2)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guard"}}},
		}
		if err := c.Create(ctx, pdb); err != nil {
			t.Fatal(err)
		}
		guard := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-etcd", Name: "guard-cp2", Labels: map[string]string{"app": "guard"}},
			Spec:       corev1.PodSpec{NodeName: "cp2", Containers: []corev1.Container{{Name: "guard", Image: "example.com/guard"}}},
		}
		if err := c.Create(ctx, guard); err != nil {
			t.Fatal(err)
		}
		guard.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if err := c.Status().Update(ctx, guard); err != nil {
			t.Fatal(err)
		}
		// The PDB allows no disruption and cp2's guard pod is Ready.
		refused(t, create("cp2", "cp2"), byWebhook+quorum)

		// Without a Ready condition the guard pod is not ready (medik8s): cp2 counts as disrupted already.
		// Breaks if: a guard pod without a Ready condition counts as Ready.
		guard.Status.Conditions = nil
		if err := c.Status().Update(ctx, guard); err != nil {
			t.Fatal(err)
		}
		if err := create("cp2", "cp2"); err != nil {
			t.Errorf("refused although cp2's guard pod has no Ready condition: %v", err)
		}
		if err := c.Delete(ctx, &nmv1beta1.NodeMaintenance{ObjectMeta: metav1.ObjectMeta{Name: "cp2"}}); err != nil {
			t.Fatal(err)
		}
		poll.Eventually(t, 30*time.Second, "NodeMaintenance cp2 gone", func(ctx context.Context) (bool, error) {
			err := c.Get(ctx, client.ObjectKey{Name: "cp2"}, &nmv1beta1.NodeMaintenance{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})

		pdb.Status.DisruptionsAllowed = 1
		if err := c.Status().Update(ctx, pdb); err != nil {
			t.Fatal(err)
		}
		if err := create("cp2", "cp2"); err != nil {
			t.Errorf("refused although the PDB allows a disruption: %v", err)
		}
	})
}
