package render

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// find returns the rendered object of type T with the given name, or nil.
func find[T client.Object](objs []client.Object, name string) T {
	var zero T
	for _, o := range objs {
		if t, ok := o.(T); ok && o.GetName() == name {
			return t
		}
	}
	return zero
}

func operandDeployment(t *testing.T, objs []client.Object) *appsv1.Deployment {
	t.Helper()
	d := find[*appsv1.Deployment](objs, config.OperandDeploymentName)
	if d == nil {
		t.Fatalf("no Deployment %s rendered", config.OperandDeploymentName)
	}
	return d
}

func container(t *testing.T, d *appsv1.Deployment, name string) *corev1.Container {
	t.Helper()
	for i := range d.Spec.Template.Spec.Containers {
		if d.Spec.Template.Spec.Containers[i].Name == name {
			return &d.Spec.Template.Spec.Containers[i]
		}
	}
	return nil
}

func TestPlatforms(t *testing.T) {
	tests := []struct {
		platform           string
		providerImage      string
		terminationHandler bool
		maxConcurrent      bool
	}{
		{"aws", testImages.ClusterAPIControllerAWS, true, false},
		{"azure", testImages.ClusterAPIControllerAzure, true, true},
		{"gcp", testImages.ClusterAPIControllerGCP, true, true},
		{"openstack", testImages.ClusterAPIControllerOpenStack, false, false},
		{"baremetal", testImages.ClusterAPIControllerBareMetal, false, false},
		{"ibmcloud", testImages.ClusterAPIControllerIBMCloud, false, false},
		{"powervs", testImages.ClusterAPIControllerPowerVS, false, false},
		{"nutanix", testImages.ClusterAPIControllerNutanix, false, false},
		{"kubemark", testImages.ClusterAPIControllerKubemark, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.platform, func(t *testing.T) {
			_, objs := mustRender(t, inputs(tt.platform))
			d := operandDeployment(t, objs)
			mc := container(t, d, MachineContainer)
			if mc == nil {
				t.Fatalf("no %s container", MachineContainer)
			}
			if mc.Image != tt.providerImage {
				t.Errorf("%s image = %q, want %q", MachineContainer, mc.Image, tt.providerImage)
			}
			for _, name := range []string{MachineSetContainer, NodeLinkContainer, MachineHealthCheckContainer} {
				if c := container(t, d, name); c == nil || c.Image != testImages.MachineAPIOperator {
					t.Errorf("container %s missing or not running the machine-api-operator image", name)
				}
			}
			hasMax := slices.Contains(mc.Args, "--max-concurrent-reconciles=10")
			if hasMax != tt.maxConcurrent {
				t.Errorf("--max-concurrent-reconciles=10 present = %v, want %v (args %v)", hasMax, tt.maxConcurrent, mc.Args)
			}
			// This project's binaries get the client and workers the scale
			// benchmark sized; a platform's provider image only what
			// OpenShift renders for it.
			kubemark := tt.platform == "kubemark"
			for _, c := range d.Spec.Template.Spec.Containers {
				ours := c.Image == testImages.MachineAPIOperator || (kubemark && c.Name == MachineContainer)
				if got := slices.Contains(c.Args, "--kube-api-qps=200") && slices.Contains(c.Args, "--kube-api-burst=400"); got != ours {
					t.Errorf("container %s: sized client flags present = %v, want %v (args %v)", c.Name, got, ours, c.Args)
				}
				for _, a := range c.Args {
					if c.Name == MachineSetContainer || c.Name == MachineHealthCheckContainer {
						if strings.HasPrefix(a, "--max-concurrent-reconciles") {
							t.Errorf("container %s has %s", c.Name, a)
						}
					}
				}
			}
			if nl := container(t, d, NodeLinkContainer); !slices.Contains(nl.Args, "--max-concurrent-reconciles=50") {
				t.Errorf("nodelink args %v, want --max-concurrent-reconciles=50", nl.Args)
			}
			if kubemark && !slices.Contains(mc.Args, "--max-concurrent-reconciles=50") {
				t.Errorf("kubemark machine controller args %v, want --max-concurrent-reconciles=50", mc.Args)
			}

			ds := find[*appsv1.DaemonSet](objs, config.TerminationHandlerName)
			if got := ds != nil; got != tt.terminationHandler {
				t.Fatalf("termination handler DaemonSet rendered = %v, want %v", got, tt.terminationHandler)
			}
			if ds != nil {
				c := ds.Spec.Template.Spec.Containers[0]
				if c.Image != tt.providerImage {
					t.Errorf("termination handler image = %q, want %q", c.Image, tt.providerImage)
				}
				if ds.Spec.Template.Spec.ServiceAccountName != TerminationHandlerServiceAccountName {
					t.Errorf("termination handler runs as %q", ds.Spec.Template.Spec.ServiceAccountName)
				}
			}
		})
	}
}

// TestNoOpRendersOnlyCRDs: platform None (NoOp) renders the API and nothing
// that would act on Machines.
func TestNoOpRendersOnlyCRDs(t *testing.T) {
	for _, platform := range []string{"none"} {
		t.Run(platform, func(t *testing.T) {
			cfg, objs := mustRender(t, inputs(platform))
			if cfg.RendersOperand() {
				t.Fatalf("platform %s should render no operand", platform)
			}
			var names []string
			for _, o := range objs {
				if _, ok := o.(*apiextensionsv1.CustomResourceDefinition); !ok {
					t.Errorf("rendered %s", describe(o))
				}
				names = append(names, o.GetName())
			}
			want := []string{"machinehealthchecks.machine.openshift.io", "machines.machine.openshift.io", "machinesets.machine.openshift.io", "nodemaintenances.nodemaintenance.medik8s.io", "machinedeployments.machine.openshift.io"}
			if !slices.Equal(names, want) {
				t.Errorf("rendered %v, want %v", names, want)
			}
		})
	}
}

func TestApplyOrder(t *testing.T) {
	rank := map[string]int{
		"CustomResourceDefinition": 0, "Service": 3, "Deployment": 4, "DaemonSet": 5, "ValidatingWebhookConfiguration": 6, "MutatingWebhookConfiguration": 6,
		"ValidatingAdmissionPolicy": 7, "ValidatingAdmissionPolicyBinding": 8,
	}
	for _, tc := range renderCases() {
		_, objs := mustRender(t, tc.in)
		last := 0
		for _, o := range objs {
			r, ok := rank[kindOf(o)]
			if !ok {
				t.Fatalf("%s: unexpected kind %s", tc.name, kindOf(o))
			}
			if r < last {
				t.Errorf("%s: %s is out of apply order", tc.name, describe(o))
			}
			last = r
		}
	}
}

func TestMachineHealthCheckDisabled(t *testing.T) {
	cfg, objs := mustRender(t, renderCaseNamed(t, "mhc-disabled"))
	if cfg.MachineHealthCheckEnabled {
		t.Fatal("the feature gate should disable the MachineHealthCheck controller")
	}
	if c := container(t, operandDeployment(t, objs), MachineHealthCheckContainer); c != nil {
		t.Errorf("container %s rendered although disabled", MachineHealthCheckContainer)
	}
}

func renderCaseNamed(t *testing.T, name string) config.Inputs {
	t.Helper()
	for _, tc := range renderCases() {
		if tc.name == name {
			return tc.in
		}
	}
	t.Fatalf("no render case %q", name)
	return config.Inputs{}
}

// TestInvariants checks what must hold for every case.
func TestInvariants(t *testing.T) {
	for _, tc := range renderCases() {
		t.Run(tc.name, func(t *testing.T) {
			cfg, objs := mustRender(t, tc.in)
			for _, o := range objs {
				if o.GetObjectKind().GroupVersionKind().Kind == "" || o.GetObjectKind().GroupVersionKind().Version == "" {
					t.Errorf("%s has no apiVersion/kind", describe(o))
				}
				if o.GetLabels()[config.ManagedByLabel] != config.ManagedByValue {
					t.Errorf("%s lacks label %s=%s", describe(o), config.ManagedByLabel, config.ManagedByValue)
				}
				if o.GetLabels()[PartOfLabel] != PartOfValue {
					t.Errorf("%s lacks label %s=%s", describe(o), PartOfLabel, PartOfValue)
				}
				if o.GetResourceVersion() != "" || len(o.GetManagedFields()) > 0 || !o.GetCreationTimestamp().Time.IsZero() || o.GetUID() != "" {
					t.Errorf("%s sets server-owned metadata", describe(o))
				}
				switch o.(type) {
				case *corev1.Service, *appsv1.Deployment, *appsv1.DaemonSet:
					if o.GetNamespace() != cfg.Namespace {
						t.Errorf("%s is not in namespace %s", describe(o), cfg.Namespace)
					}
				default:
					if o.GetNamespace() != "" {
						t.Errorf("cluster-scoped %s has namespace %q", describe(o), o.GetNamespace())
					}
				}
			}
			if !cfg.RendersOperand() {
				return
			}
			for _, o := range objs {
				switch o.(type) {
				case *corev1.ServiceAccount, *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding, *rbacv1.Role, *rbacv1.RoleBinding:
					// install/ ships them: the operator holds no RBAC write.
					t.Errorf("%s rendered: identities and RBAC ship in install/", describe(o))
				}
			}
			checkDeployment(t, cfg, operandDeployment(t, objs))
			if ds := find[*appsv1.DaemonSet](objs, config.TerminationHandlerName); ds != nil {
				checkTerminationHandler(t, cfg, ds)
			}
		})
	}
}

func checkDeployment(t *testing.T, cfg config.Config, d *appsv1.Deployment) {
	t.Helper()
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != ControllersServiceAccountName {
		t.Errorf("Deployment runs as %q", pod.ServiceAccountName)
	}
	if psc := pod.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context is not restricted: %+v", psc)
	}
	// OpenShift: control-plane nodes, system-node-critical, management
	// workload partition; vanilla Kubernetes: none of them.
	if want := map[bool]string{true: "system-node-critical"}[cfg.OnOpenShift()]; pod.PriorityClassName != want {
		t.Errorf("priorityClassName %q, want %q", pod.PriorityClassName, want)
	}
	if _, ok := pod.NodeSelector["node-role.kubernetes.io/master"]; ok != cfg.OnOpenShift() || len(pod.NodeSelector) > 1 {
		t.Errorf("nodeSelector %v on OpenShift=%v", pod.NodeSelector, cfg.OnOpenShift())
	}
	if _, ok := d.Spec.Template.Annotations["target.workload.openshift.io/management"]; ok != cfg.OnOpenShift() {
		t.Errorf("workload partitioning annotation present %v on OpenShift=%v", ok, cfg.OnOpenShift())
	}
	proxy := proxyEnv(cfg)
	for _, c := range pod.Containers {
		sc := c.SecurityContext
		// This project's images run with a read-only root filesystem;
		// images of others (providers, kube-rbac-proxy) are not built for
		// one.
		ours := c.Image == cfg.Images.MachineAPIOperator || (c.Name == MachineContainer && providerIsOurs(cfg))
		if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			(ours && (sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem)) ||
			sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 ||
			sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault ||
			sc.Privileged != nil {
			t.Errorf("container %s security context is not restricted: %+v", c.Name, sc)
		}
		if c.Name == ProviderMetricsProxyContainer {
			continue // a sidecar, not a controller
		}
		for _, want := range []string{"--logtostderr=true", "--v=3", "--leader-elect=true", "--leader-elect-lease-duration=120s", "--namespace=" + cfg.Namespace} {
			if !slices.Contains(c.Args, want) {
				t.Errorf("container %s lacks arg %s", c.Name, want)
			}
		}
		for _, e := range proxy {
			if !slices.Contains(c.Env, e) {
				t.Errorf("container %s lacks env %s=%s", c.Name, e.Name, e.Value)
			}
		}
		if c.ReadinessProbe == nil || c.LivenessProbe == nil {
			t.Errorf("container %s lacks probes", c.Name)
		}
		if c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
			t.Errorf("container %s terminationMessagePolicy = %q", c.Name, c.TerminationMessagePolicy)
		}
	}
	// Containers share the pod's network namespace: no port twice.
	seen := map[int32]string{}
	for _, c := range pod.Containers {
		for _, p := range c.Ports {
			if other, ok := seen[p.ContainerPort]; ok {
				t.Errorf("port %d used by %s and %s", p.ContainerPort, other, c.Name)
			}
			seen[p.ContainerPort] = c.Name
		}
	}
}

func checkTerminationHandler(t *testing.T, cfg config.Config, ds *appsv1.DaemonSet) {
	t.Helper()
	c := ds.Spec.Template.Spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || sc.Privileged != nil {
		t.Errorf("termination handler security context: %+v", sc)
	}
	if !slices.Contains(c.Args, "--namespace="+cfg.Namespace) {
		t.Errorf("termination handler args %v lack --namespace=%s", c.Args, cfg.Namespace)
	}
	for _, e := range proxyEnv(cfg) {
		if !slices.Contains(c.Env, e) {
			t.Errorf("termination handler lacks env %s", e.Name)
		}
	}
}

func TestProxyEnv(t *testing.T) {
	_, objs := mustRender(t, renderCaseNamed(t, "proxy"))
	for _, c := range operandDeployment(t, objs).Spec.Template.Spec.Containers {
		if c.Name == ProviderMetricsProxyContainer {
			continue // talks to localhost only
		}
		var names []string
		for _, e := range c.Env {
			if strings.HasSuffix(e.Name, "_PROXY") {
				names = append(names, e.Name)
			}
		}
		if !slices.Equal(names, []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"}) {
			t.Errorf("container %s proxy env = %v", c.Name, names)
		}
	}
	// Without proxy: no proxy variables at all (not empty ones).
	_, objs = mustRender(t, inputs("aws"))
	for _, c := range operandDeployment(t, objs).Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if strings.HasSuffix(e.Name, "_PROXY") {
				t.Errorf("container %s has %s without a proxy", c.Name, e.Name)
			}
		}
	}
}

func TestWebhookTLS(t *testing.T) {
	tests := []struct {
		name      string
		serviceCA bool
		caBundle  string
	}{
		{"aws", false, ""},
		{"service-ca", true, ""},
		{"self-signed", false, testCABundle},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, objs := mustRender(t, renderCaseNamed(t, tt.name))
			vwc := find[*admissionregistrationv1.ValidatingWebhookConfiguration](objs, config.WebhookConfigurationName)
			mwc := find[*admissionregistrationv1.MutatingWebhookConfiguration](objs, config.WebhookConfigurationName)
			if vwc == nil || mwc == nil {
				t.Fatal("webhook configurations not rendered")
			}
			var bundles [][]byte
			for _, w := range vwc.Webhooks {
				bundles = append(bundles, w.ClientConfig.CABundle)
			}
			for _, w := range mwc.Webhooks {
				bundles = append(bundles, w.ClientConfig.CABundle)
			}
			for _, b := range bundles {
				if string(b) != tt.caBundle {
					t.Errorf("caBundle = %q, want %q", b, tt.caBundle)
				}
			}
			for _, o := range []client.Object{vwc, mwc} {
				_, has := o.GetAnnotations()[injectCABundleAnnotation]
				if has != tt.serviceCA {
					t.Errorf("%s has %s = %v, want %v", describe(o), injectCABundleAnnotation, has, tt.serviceCA)
				}
			}
			for svc, secret := range map[string]string{
				config.WebhookServiceName:        config.WebhookCertSecretName,
				config.MachineWebhookServiceName: config.MachineWebhookCertSecretName,
			} {
				s := find[*corev1.Service](objs, svc)
				if s == nil {
					t.Fatalf("Service %s not rendered", svc)
				}
				got, has := s.Annotations[servingCertAnnotation]
				if has != tt.serviceCA || (has && got != secret) {
					t.Errorf("Service %s annotations = %v", svc, s.Annotations)
				}
			}
		})
	}
}

// TestCustomNamespace: nothing is hard-coded to openshift-machine-api.
func TestCustomNamespace(t *testing.T) {
	in := inputs("aws")
	in.Namespace = "custom-ns"
	cfg, objs := mustRender(t, in)
	vwc := find[*admissionregistrationv1.ValidatingWebhookConfiguration](objs, config.WebhookConfigurationName)
	mwc := find[*admissionregistrationv1.MutatingWebhookConfiguration](objs, config.WebhookConfigurationName)
	var refs []*admissionregistrationv1.ServiceReference
	for _, w := range vwc.Webhooks {
		refs = append(refs, w.ClientConfig.Service)
	}
	for _, w := range mwc.Webhooks {
		refs = append(refs, w.ClientConfig.Service)
	}
	// Machine, MachineSet and MachineDeployment, validating and mutating,
	// and NodeMaintenance.
	if len(refs) != 7 {
		t.Fatalf("%d webhooks rendered, want 7", len(refs))
	}
	for _, ref := range refs {
		if ref == nil || ref.Namespace != "custom-ns" || ref.Name != config.WebhookServiceName || ref.Port == nil || *ref.Port != 443 {
			t.Errorf("webhook service = %+v, want custom-ns/%s:443", ref, config.WebhookServiceName)
		}
	}
	for _, o := range objs {
		data, err := ToYAML(o)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte(config.DefaultNamespace)) {
			t.Errorf("%s mentions %s in namespace %s", describe(o), config.DefaultNamespace, cfg.Namespace)
		}
	}
}

// TestNoEmptyValues: rendered objects (except the CRDs, taken verbatim) hold
// no empty map, empty slice or null: the API server would drop or rewrite
// them and the drift check would see a difference forever.
func TestNoEmptyValues(t *testing.T) {
	for _, tc := range renderCases() {
		_, objs := mustRender(t, tc.in)
		for _, o := range objs {
			if _, ok := o.(*apiextensionsv1.CustomResourceDefinition); ok {
				continue
			}
			u, err := ToUnstructured(o)
			if err != nil {
				t.Fatal(err)
			}
			for _, path := range emptyValues(u.Object, "") {
				// An empty paramRef selector selects every param object; the server keeps it.
				if path == ".spec.paramRef.selector" {
					continue
				}
				t.Errorf("%s: %s has an empty value", describe(o), path)
			}
			for _, field := range []string{"status", "creationTimestamp", "resourceVersion", "managedFields"} {
				if _, ok := u.Object[field]; ok {
					t.Errorf("%s has %s", describe(o), field)
				}
				if _, ok := u.Object["metadata"].(map[string]any)[field]; ok {
					t.Errorf("%s has metadata.%s", describe(o), field)
				}
			}
		}
	}
}

func emptyValues(v any, path string) []string {
	var out []string
	switch v := v.(type) {
	case nil:
		out = append(out, path)
	case map[string]any:
		if len(v) == 0 {
			out = append(out, path)
		}
		for k, e := range v {
			out = append(out, emptyValues(e, path+"."+k)...)
		}
	case []any:
		if len(v) == 0 {
			out = append(out, path)
		}
		for i, e := range v {
			out = append(out, emptyValues(e, fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return out
}

func TestDeterministicAndIndependent(t *testing.T) {
	in := renderCaseNamed(t, "proxy")
	_, first := mustRender(t, in)
	var before [][]byte
	for _, o := range first {
		data, err := ToYAML(o)
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, data)
	}
	// Mutating the result of one call must not leak into the next.
	for _, o := range first {
		o.GetLabels()["mutated"] = "true"
	}
	d := operandDeployment(t, first)
	d.Spec.Selector.MatchLabels["mutated"] = "true"
	d.Spec.Template.Labels["mutated"] = "true"
	find[*admissionregistrationv1.ValidatingWebhookConfiguration](first, config.WebhookConfigurationName).Webhooks[0].Rules[0].Operations[0] = "DELETE"

	_, second := mustRender(t, in)
	if len(second) != len(before) {
		t.Fatalf("second render has %d objects, first %d", len(second), len(before))
	}
	for i, o := range second {
		data, err := ToYAML(o)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, before[i]) {
			t.Errorf("%s differs between two renders:\n%s", describe(o), lineDiff(string(before[i]), string(data)))
		}
	}
}

func TestFileName(t *testing.T) {
	_, objs := mustRender(t, inputs("aws"))
	names := map[string]bool{}
	for i, o := range objs {
		n := FileName(i, o)
		if names[n] {
			t.Errorf("duplicate file name %s", n)
		}
		names[n] = true
	}
	d := operandDeployment(t, objs)
	if got, want := FileName(3, d), "03_deployment_openshift-machine-api_machine-api-controllers.yaml"; got != want {
		t.Errorf("FileName = %q, want %q", got, want)
	}
	vwc := find[*admissionregistrationv1.ValidatingWebhookConfiguration](objs, config.WebhookConfigurationName)
	if got, want := FileName(12, vwc), "12_validatingwebhookconfiguration_machine-api.yaml"; got != want {
		t.Errorf("FileName = %q, want %q", got, want)
	}
	// Without TypeMeta the Go type name is used.
	if got, want := FileName(0, &corev1.ConfigMap{}), "00_configmap_.yaml"; got != want {
		t.Errorf("FileName = %q, want %q", got, want)
	}
}

func TestRenderRejectsIncompleteConfig(t *testing.T) {
	if _, err := Render(config.Config{}); err == nil {
		t.Error("Render accepted a config without namespace")
	}
	if _, err := Render(config.Config{Namespace: "ns"}); err == nil {
		t.Error("Render accepted a non-NoOp config without images")
	}
}

// TestMetal3RemediationWebhooks: on BareMetal (only), the metal3 remediation
// webhooks are rendered as OpenShift renders them, pointing at the Service
// in front of the provider's machine-webhook port (8440).
func TestMetal3RemediationWebhooks(t *testing.T) {
	for _, name := range []string{"aws", "kubemark", "baremetal", "openshift-baremetal"} {
		t.Run(name, func(t *testing.T) {
			cfg, objs := mustRender(t, renderCaseNamed(t, name))
			vwc := find[*admissionregistrationv1.ValidatingWebhookConfiguration](objs, config.Metal3RemediationWebhookConfigurationName)
			mwc := find[*admissionregistrationv1.MutatingWebhookConfiguration](objs, config.Metal3RemediationWebhookConfigurationName)
			if cfg.PlatformType != configv1.BareMetalPlatformType {
				if vwc != nil || mwc != nil {
					t.Fatalf("metal3 remediation webhooks rendered on %s", cfg.PlatformType)
				}
				return
			}
			if vwc == nil || mwc == nil {
				t.Fatal("metal3 remediation webhook configurations not rendered on BareMetal")
			}
			type hook struct{ path, resource string }
			want := map[string]hook{
				"validation.metal3remediation.k8s.io":         {path: "/validate-infrastructure-cluster-x-k8s-io-v1beta1-metal3remediation", resource: "metal3remediations"},
				"validation.metal3remediationtemplate.k8s.io": {path: "/validate-infrastructure-cluster-x-k8s-io-v1beta1-metal3remediationtemplate", resource: "metal3remediationtemplates"},
				"default.metal3remediation.k8s.io":            {path: "/mutate-infrastructure-cluster-x-k8s-io-v1beta1-metal3remediation", resource: "metal3remediations"},
				"default.metal3remediationtemplate.k8s.io":    {path: "/mutate-infrastructure-cluster-x-k8s-io-v1beta1-metal3remediationtemplate", resource: "metal3remediationtemplates"},
			}
			check := func(name string, cc admissionregistrationv1.WebhookClientConfig, rules []admissionregistrationv1.RuleWithOperations, fp *admissionregistrationv1.FailurePolicyType) {
				w, ok := want[name]
				if !ok {
					t.Errorf("unexpected webhook %s", name)
					return
				}
				delete(want, name)
				if s := cc.Service; s == nil || s.Name != config.MachineWebhookServiceName || s.Namespace != cfg.Namespace || s.Path == nil || *s.Path != w.path || s.Port == nil || *s.Port != 443 {
					t.Errorf("%s: clientConfig %+v, want Service %s/%s:443%s", name, cc.Service, cfg.Namespace, config.MachineWebhookServiceName, w.path)
				}
				if len(rules) != 1 || !slices.Equal(rules[0].APIGroups, []string{"infrastructure.cluster.x-k8s.io"}) ||
					!slices.Equal(rules[0].APIVersions, []string{"v1beta1"}) || !slices.Equal(rules[0].Resources, []string{w.resource}) ||
					!slices.Equal(rules[0].Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}) {
					t.Errorf("%s: rules %+v", name, rules)
				}
				if fp == nil || *fp != admissionregistrationv1.Ignore {
					t.Errorf("%s: failurePolicy %v, want Ignore", name, fp)
				}
			}
			for _, w := range vwc.Webhooks {
				check(w.Name, w.ClientConfig, w.Rules, w.FailurePolicy)
			}
			for _, w := range mwc.Webhooks {
				check(w.Name, w.ClientConfig, w.Rules, w.FailurePolicy)
			}
			if len(want) > 0 {
				t.Errorf("webhooks not rendered: %v", want)
			}
			for _, o := range []client.Object{vwc, mwc} {
				if _, has := o.GetAnnotations()[injectCABundleAnnotation]; has != cfg.Webhook.ServiceCA {
					t.Errorf("%s: inject-cabundle annotation %v, want %v", describe(o), has, cfg.Webhook.ServiceCA)
				}
			}
			// The Service reaches the provider container's webhook port.
			svc := find[*corev1.Service](objs, config.MachineWebhookServiceName)
			if svc == nil || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 {
				t.Fatalf("Service %s: %+v", config.MachineWebhookServiceName, svc)
			}
			target := svc.Spec.Ports[0].TargetPort.String()
			found := false
			for _, c := range operandDeployment(t, objs).Spec.Template.Spec.Containers {
				for _, p := range c.Ports {
					if p.Name == target && p.ContainerPort == 8440 && c.Name == "machine-controller" {
						found = true
					}
				}
			}
			if !found {
				t.Errorf("no machine-controller container port %q = 8440 behind Service %s", target, config.MachineWebhookServiceName)
			}
		})
	}
}
