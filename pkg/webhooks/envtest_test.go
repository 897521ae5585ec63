package webhooks

import (
	"context"
	"crypto/tls"
	"slices"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/machine-api-operator/machine-api-operator/manifests"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/render"
	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
)

// renderedWebhookConfigurations returns the webhook configurations the
// operator renders for a kubemark cluster (Service clientConfig; envtest
// rewrites it to a URL on its local serving host with its own CA).
func renderedWebhookConfigurations(t *testing.T) ([]*admissionregistrationv1.MutatingWebhookConfiguration, []*admissionregistrationv1.ValidatingWebhookConfiguration) {
	t.Helper()
	objs, err := render.Render(config.Config{
		Namespace:                 config.DefaultNamespace,
		PlatformType:              configv1.ExternalPlatformType,
		ExternalPlatformName:      config.KubemarkPlatformName,
		Images:                    config.Images{MachineAPIOperator: "example.com/mao:test", ClusterAPIControllerKubemark: "example.com/mao:test"},
		ProviderImage:             "example.com/mao:test",
		MachineHealthCheckEnabled: true,
	})
	if err != nil {
		t.Fatalf("rendering: %v", err)
	}
	var mutating []*admissionregistrationv1.MutatingWebhookConfiguration
	var validating []*admissionregistrationv1.ValidatingWebhookConfiguration
	for _, o := range objs {
		switch w := o.(type) {
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			mutating = append(mutating, w)
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			validating = append(validating, w)
		}
	}
	if len(mutating) != 1 || len(validating) != 1 {
		t.Fatalf("rendered %d mutating and %d validating webhook configurations, want 1 each", len(mutating), len(validating))
	}
	// The paths the operator renders for machine.openshift.io are the ones
	// served here (other groups' webhooks are other binaries').
	paths := map[string]bool{}
	for _, w := range mutating[0].Webhooks {
		if forMachineAPI(w.Rules) {
			paths[*w.ClientConfig.Service.Path] = true
		}
	}
	for _, w := range validating[0].Webhooks {
		if forMachineAPI(w.Rules) {
			paths[*w.ClientConfig.Service.Path] = true
		}
	}
	for p := range Handlers(Options{}) {
		if !paths[p] {
			t.Errorf("the operator renders no webhook for %s (rendered: %v)", p, paths)
		}
	}
	if len(paths) != len(Handlers(Options{})) {
		t.Errorf("rendered paths %v, served %d", paths, len(Handlers(Options{})))
	}
	return mutating, validating
}

// apiServerOptions adjust startAPIServerWithWebhooks.
type apiServerOptions struct {
	// warnings receives the API server's warnings to the client (nil: logged).
	warnings rest.WarningHandler
	// crdPaths are more CRD files to install.
	crdPaths []string
	// reader is what the webhooks read the cluster through (nil: the
	// client, which reads the API server directly).
	reader func(t *testing.T, cfg *rest.Config, c client.Client) client.Reader
	// machineNamespace is Options.MachineNamespace.
	machineNamespace string
	// policies installs the operator's ValidatingAdmissionPolicies too.
	policies bool
	// noServer starts no webhook server: the webhooks are configured but unreachable.
	noServer bool
	// clientCA: the API server presents a certificate it signed to the webhooks,
	// and the webhook server serves only such clients (operand.VerifyingServer).
	clientCA *testClientCA
	// served, if set, gets the webhook server's address and serving CA once it is ready.
	served func(host string, port int, caPEM []byte)
}

// forMachineAPI is true when a webhook's rules are on machine.openshift.io.
func forMachineAPI(rules []admissionregistrationv1.RuleWithOperations) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, machinev1beta1.GroupName) {
			return true
		}
	}
	return false
}

// startAPIServerWithWebhooks starts kube-apiserver and etcd (envtest, from
// bin/) with the project's CRDs and the operator's webhook configurations,
// and the webhook server on envtest's local serving address (127.0.0.1).
func startAPIServerWithWebhooks(t *testing.T, opts apiServerOptions) client.Client {
	t.Helper()
	binDir, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, set := range []manifests.CRDSet{manifests.MachineCRDs, manifests.ConfigCRDs, manifests.MachineDeploymentCRDs} {
		c, err := manifests.CRDs(set)
		if err != nil {
			t.Fatal(err)
		}
		crds = append(crds, c...)
	}
	mutating, validating := renderedWebhookConfigurations(t)
	s := scheme.New()
	env := &envtest.Environment{
		BinaryAssetsDirectory: binDir,
		CRDs:                  crds,
		CRDInstallOptions:     envtest.CRDInstallOptions{Scheme: s, Paths: opts.crdPaths},
		ErrorIfCRDPathMissing: true,
		Scheme:                s,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			LocalServingHost:   loopback,
			MutatingWebhooks:   mutating,
			ValidatingWebhooks: validating,
		},
		ControlPlaneStartTimeout: 60 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	if opts.clientCA != nil {
		env.ControlPlane.GetAPIServer().Configure().Set("admission-control-config-file", opts.clientCA.admissionConfig(t))
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
	if !strings.Contains(cfg.Host, loopback) {
		t.Fatalf("API server at %s, want %s", cfg.Host, loopback)
	}
	clientCfg := rest.CopyConfig(cfg)
	if opts.warnings != nil {
		clientCfg.WarningHandler = opts.warnings
	}
	c, err := client.New(clientCfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	if opts.policies {
		for _, o := range render.AdmissionPolicies() {
			if err := c.Create(context.Background(), o); err != nil {
				t.Fatalf("installing %s %s: %v", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
			}
		}
	}
	if opts.noServer {
		return c
	}

	wo := env.WebhookInstallOptions
	if wo.LocalServingHost != loopback {
		t.Fatalf("webhooks served on %s, want %s", wo.LocalServingHost, loopback)
	}
	var tlsOpts []func(*tls.Config)
	if opts.clientCA != nil {
		tlsOpts = append(tlsOpts, operand.RequestClientCert)
	}
	srv := webhook.NewServer(webhook.Options{
		Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: wo.LocalServingCertDir,
		CertName: CertName, KeyName: KeyName, TLSOpts: tlsOpts,
	})
	if opts.clientCA != nil {
		srv = operand.VerifyingServer{Server: srv, CAs: operand.NewClientCAs(opts.clientCA.caFile)}
	}
	var reader client.Reader = c
	if opts.reader != nil {
		reader = opts.reader(t, cfg, c)
	}
	Register(srv, Options{Reader: reader, MachineNamespace: opts.machineNamespace})
	testenv.Run(t, srv)
	// failurePolicy is Ignore: wait until the server answers, or requests
	// would pass unchecked.
	ready := srv.StartedChecker()
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return ready(nil) == nil, nil
	}); err != nil {
		t.Fatalf("webhook server not ready: %v", err)
	}
	if opts.served != nil {
		opts.served(wo.LocalServingHost, wo.LocalServingPort, wo.LocalServingCAData)
	}
	return c
}

// wantRefused fails the test unless err is a refusal whose message has every want.
func wantRefused(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted, want refused with %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err.Error(), w)
		}
	}
}

// createKubemarkInfrastructure creates the cluster's Infrastructure: platform External with the
// kubemark platform name, highly available, named testInfraName.
func createKubemarkInfrastructure(t *testing.T, c client.Client) {
	t.Helper()
	ctx := context.Background()
	infra := infrastructure("", configv1.ExternalPlatformType, config.KubemarkPlatformName, "")
	if err := c.Create(ctx, infra); err != nil {
		t.Fatalf("creating the Infrastructure: %v", err)
	}
	infra.Status = configv1.InfrastructureStatus{
		InfrastructureName:     testInfraName,
		ControlPlaneTopology:   configv1.HighlyAvailableTopologyMode,
		InfrastructureTopology: configv1.HighlyAvailableTopologyMode,
		PlatformStatus:         &configv1.PlatformStatus{Type: configv1.ExternalPlatformType},
	}
	if err := c.Status().Update(ctx, infra); err != nil {
		t.Fatalf("setting the Infrastructure status: %v", err)
	}
}

func TestWebhooksThroughAPIServer(t *testing.T) {
	const ns = "webhooks-test"
	c := startAPIServerWithWebhooks(t, apiServerOptions{machineNamespace: ns})
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	createKubemarkInfrastructure(t, c)

	inNS := func(o client.Object) client.Object { o.SetNamespace(ns); return o }
	expectRefused := wantRefused
	allDefaults := `{"apiVersion":"` + kubemarkAPIVersion + `","kind":"` + kubemarkKind + `","cpu":"2","memory":"4Gi","pods":"110"}`

	t.Run("invalid kubemark Machine is refused", func(t *testing.T) {
		err := c.Create(ctx, inNS(machine("bad-cpu", value(kubemarkSpec(`"cpu":"-1","memory":"0"`)))))
		expectRefused(t, err, `admission webhook "validation.machine.machine.openshift.io" denied the request`,
			`spec.providerSpec.value.cpu: Invalid value: "-1": must be positive`,
			`spec.providerSpec.value.memory: Invalid value: "0": must be positive`)
	})

	t.Run("Machine is stored defaulted", func(t *testing.T) {
		m := inNS(machine("defaulted", value(`{}`))).(*machinev1beta1.Machine)
		if err := c.Create(ctx, m); err != nil {
			t.Fatal(err)
		}
		got := &machinev1beta1.Machine{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(m), got); err != nil {
			t.Fatal(err)
		}
		if got.Labels[ClusterIDLabel] != testInfraName {
			t.Errorf("labels = %v, want %s=%s", got.Labels, ClusterIDLabel, testInfraName)
		}
		jsonEqual(t, got.Spec.ProviderSpec.Value.Raw, allDefaults)
		if !slices.Equal(got.Finalizers, []string{machinev1beta1.MachineFinalizer}) {
			t.Errorf("finalizers = %q, want the machine controller's", got.Finalizers)
		}
	})

	t.Run("another provider's Machine gets no finalizer", func(t *testing.T) {
		m := inNS(machine("aws", value(`{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig"}`))).(*machinev1beta1.Machine)
		if err := c.Create(ctx, m); err != nil {
			t.Fatal(err)
		}
		if len(m.Finalizers) > 0 {
			t.Errorf("finalizers = %q, want none", m.Finalizers)
		}
	})

	t.Run("an existing cluster label is kept", func(t *testing.T) {
		m := inNS(machine("own-label", value(validKubemark), func(m *machinev1beta1.Machine) {
			m.Labels = map[string]string{ClusterIDLabel: "mine"}
		})).(*machinev1beta1.Machine)
		if err := c.Create(ctx, m); err != nil {
			t.Fatal(err)
		}
		if m.Labels[ClusterIDLabel] != "mine" {
			t.Errorf("labels = %v, want the cluster label kept", m.Labels)
		}
	})

	t.Run("providerID change is refused", func(t *testing.T) {
		m := inNS(machine("with-id", value(validKubemark), func(m *machinev1beta1.Machine) {
			m.Spec.ProviderID = new("kubemark://with-id")
		})).(*machinev1beta1.Machine)
		if err := c.Create(ctx, m); err != nil {
			t.Fatal(err)
		}
		m.Spec.ProviderID = new("kubemark://other")
		expectRefused(t, c.Update(ctx, m), `spec.providerID: Forbidden: is immutable once set`)
	})

	t.Run("duplicate hook names are refused", func(t *testing.T) {
		// The CRD schema (listType map keyed by name) already refuses this
		// before validating admission; either way the field is named.
		err := c.Create(ctx, inNS(machine("dup-hooks", value(validKubemark), func(m *machinev1beta1.Machine) {
			m.Spec.LifecycleHooks.PreDrain = hooks("a", "a")
		})))
		expectRefused(t, err, "spec.lifecycleHooks.preDrain[1]", "Duplicate value")
	})

	t.Run("a deleting Machine's finalizer can be removed", func(t *testing.T) {
		m := inNS(machine("finalized", value(validKubemark), func(m *machinev1beta1.Machine) {
			m.Finalizers = []string{"example.com/hold"}
		})).(*machinev1beta1.Machine)
		if err := c.Create(ctx, m); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, m); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
			t.Fatal(err)
		}
		m.Finalizers = nil
		if err := c.Update(ctx, m); err != nil {
			t.Fatalf("removing the finalizer: %v", err)
		}
	})

	sel := map[string]string{"machine.openshift.io/cluster-api-machineset": "workers"}

	t.Run("MachineSet with a selector not matching the template is refused", func(t *testing.T) {
		err := c.Create(ctx, inNS(machineSet("mismatch", sel, map[string]string{"machine.openshift.io/cluster-api-machineset": "other"}, value(validKubemark))))
		expectRefused(t, err, `admission webhook "validation.machineset.machine.openshift.io" denied the request`,
			// The mutating webhook has added the cluster label by then.
			`spec.template.metadata.labels: Invalid value: "machine.openshift.io/cluster-api-cluster=`+testInfraName+`,machine.openshift.io/cluster-api-machineset=other": does not match spec.selector "machine.openshift.io/cluster-api-machineset=workers"`)
	})

	t.Run("invalid MachineSet template is refused", func(t *testing.T) {
		err := c.Create(ctx, inNS(machineSet("bad-template", sel, sel, value(kubemarkSpec(`"memory":"0"`)))))
		expectRefused(t, err, `spec.template.spec.providerSpec.value.memory: Invalid value: "0": must be positive`)
	})

	t.Run("MachineSet template is stored defaulted and its selector is immutable", func(t *testing.T) {
		ms := inNS(machineSet("workers", sel, sel, value(`{"cpu":"4"}`))).(*machinev1beta1.MachineSet)
		if err := c.Create(ctx, ms); err != nil {
			t.Fatal(err)
		}
		got := &machinev1beta1.MachineSet{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ms), got); err != nil {
			t.Fatal(err)
		}
		jsonEqual(t, got.Spec.Template.Spec.ProviderSpec.Value.Raw,
			`{"apiVersion":"`+kubemarkAPIVersion+`","kind":"`+kubemarkKind+`","cpu":"4","memory":"4Gi","pods":"110"}`)
		if got.Spec.Template.Labels[ClusterIDLabel] != testInfraName || got.Labels[ClusterIDLabel] != testInfraName {
			t.Errorf("labels = %v, template labels = %v, want the cluster label on both", got.Labels, got.Spec.Template.Labels)
		}

		got.Spec.Replicas = new(int32(2))
		if err := c.Update(ctx, got); err != nil {
			t.Fatalf("scaling: %v", err)
		}
		got.Spec.Selector.MatchLabels = map[string]string{ClusterIDLabel: testInfraName}
		expectRefused(t, c.Update(ctx, got), `admission webhook "validation.machineset.machine.openshift.io" denied the request`,
			`spec.selector: Invalid value: "machine.openshift.io/cluster-api-cluster=`+testInfraName+`": field is immutable`)
	})

	t.Run("requests were counted", func(t *testing.T) {
		if v := counterValue(t, DenialsTotal.WithLabelValues(WebhookValidateMachineSet)); v < 3 {
			t.Errorf("MachineSet denials = %v, want at least 3", v)
		}
		if v := counterValue(t, RequestsTotal.WithLabelValues(WebhookMutateMachine, "CREATE", ResultPatched)); v < 1 {
			t.Errorf("patched Machine creates = %v, want at least 1", v)
		}
	})
}
