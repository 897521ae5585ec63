package install_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	imagev1 "github.com/openshift/api/image/v1"
	securityv1 "github.com/openshift/api/security/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/machine-api-operator/machine-api-operator/pkg/install"
	"github.com/machine-api-operator/machine-api-operator/pkg/names"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/status"
	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
)

const (
	namespace        = config.DefaultNamespace
	operatorName     = "machine-api-operator"
	versionSentinel  = "0.0.1-snapshot"
	prefix           = "0000_30_machine-api-operator_"
	monitoringPrefix = "0000_90_machine-api-operator_"
	capabilityAnno   = "capability.openshift.io/name"
	selfManagedAnno  = "include.release.openshift.io/self-managed-high-availability"
	singleNodeAnno   = "include.release.openshift.io/single-node-developer"
	hostedExcludeAnn = "exclude.release.openshift.io/internal-openshift-hosted"
	createOnlyAnno   = "release.openshift.io/create-only"
	featureSetAnno   = "release.openshift.io/feature-set"
)

// featureSets are the CRD variants openshift/api generates for the Machine
// and MachineSet CRDs; the payload ships every one.
var featureSets = []string{"Default", "CustomNoUpgrade", "DevPreviewNoUpgrade", "OKD", "TechPreviewNoUpgrade"}

// expectedFiles are exactly the files of install/ (other code refers to these
// names), in apply order.
func expectedFiles() []string {
	files := []string{prefix + "00_credentials-request.yaml", prefix + "00_namespace.yaml", prefix + "01_images.configmap.yaml",
		prefix + "01_trusted-ca.configmap.yaml"}
	for _, fs := range featureSets {
		files = append(files, prefix+"02_machine."+fs+".crd.yaml")
	}
	for _, fs := range featureSets {
		files = append(files, prefix+"03_machineset."+fs+".crd.yaml")
	}
	files = append(files,
		prefix+"07_machinehealthcheck.crd.yaml",
		prefix+"09_controllers-rbac.yaml",
		prefix+"09_lease-rbac.yaml",
		prefix+"09_operand-rbac.yaml",
		prefix+"09_rbac.yaml",
		prefix+"09_security-context-constraint.yaml",
		prefix+"09_serviceaccount.yaml",
		prefix+"10_service.yaml",
		prefix+"11_deployment.yaml",
		prefix+"12_clusteroperator.yaml",
		prefix+"13_machinehealthcheck.yaml",
		// Run level 90, after cluster monitoring: monitoring and network policies.
		monitoringPrefix+"01_prometheus-rbac.yaml",
		monitoringPrefix+"02_servicemonitors.yaml",
		monitoringPrefix+"03_prometheusrule.yaml",
		monitoringPrefix+"04_networkpolicies.yaml",
	)
	sort.Strings(files)
	return files
}

func payloadDir(t testing.TB) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "install")
}

func loadPayload(t testing.TB) []install.Manifest {
	t.Helper()
	ms, err := install.Load(payloadDir(t))
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// testScheme decodes every kind of the payload, including image-references.
func testScheme() *runtime.Scheme {
	s := scheme.New()
	if err := imagev1.Install(s); err != nil {
		panic(err)
	}
	if err := securityv1.Install(s); err != nil {
		panic(err)
	}
	return s
}

// foreignNamespaces are created by other OpenShift components; the payload
// ships objects into them but not the namespaces themselves.
var foreignNamespaces = map[string]bool{
	credentialsRequestNamespace: true,
	"openshift-config":          true,
	"openshift-config-managed":  true,
}

// openShiftOnlyKinds have their CRDs installed by other OpenShift
// components (the cloud credential operator, the config operator).
var openShiftOnlyKinds = map[string]bool{
	"cloudcredential.openshift.io/CredentialsRequest":  true,
	"security.openshift.io/SecurityContextConstraints": true,
}

func openShiftOnlyKind(m install.Manifest) bool {
	gvk := m.Object.GroupVersionKind()
	return openShiftOnlyKinds[gvk.Group+"/"+gvk.Kind]
}

// decodeStrict converts a manifest to its typed object, failing on unknown or
// duplicate fields (a misspelt field would otherwise be dropped silently).
// The Prometheus operator's kinds (ServiceMonitor, PrometheusRule) have no Go
// types here: they are checked against the subset of their API the payload
// uses (see monitoring_test.go), and decodeStrict returns nil for them.
func decodeStrict(t testing.TB, m install.Manifest) runtime.Object {
	t.Helper()
	data, err := json.Marshal(m.Object.Object)
	if err != nil {
		t.Fatalf("%s: %v", m, err)
	}
	if m.Object.GroupVersionKind().Group == monitoringGroup {
		decodeMonitoringStrict(t, m.String(), m.Object.GetKind(), data)
		return nil
	}
	if m.Object.GroupVersionKind().Group == credentialsRequestGroup {
		decodeCredentialsRequestStrict(t, m.String(), data)
		return nil
	}
	obj, _, err := serializer.NewCodecFactory(testScheme(), serializer.EnableStrict).UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		t.Fatalf("%s: strict decoding: %v", m, err)
	}
	return obj
}

// find returns the only manifest of kind/name.
func find(t testing.TB, ms []install.Manifest, kind, name string) install.Manifest {
	t.Helper()
	var found []install.Manifest
	for _, m := range ms {
		if m.Object.GetKind() == kind && m.Object.GetName() == name {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want exactly one %s %s in the payload, found %d", kind, name, len(found))
	}
	return found[0]
}

func typed[T runtime.Object](t testing.TB, ms []install.Manifest, kind, name string) T {
	t.Helper()
	obj := decodeStrict(t, find(t, ms, kind, name))
	out, ok := obj.(T)
	if !ok {
		t.Fatalf("%s %s decoded as %T", kind, name, obj)
	}
	return out
}

func TestEveryManifestParses(t *testing.T) {
	ms := loadPayload(t)
	if len(ms) == 0 {
		t.Fatal("install/ has no manifests")
	}
	files := map[string]bool{}
	for _, m := range ms {
		files[m.File] = true
		// Parse requires apiVersion, kind and metadata.name; strict decoding
		// into the Go type catches misspelt fields.
		decodeStrict(t, m)
	}
	for _, f := range expectedFiles() {
		if !files[f] {
			t.Errorf("%s has no object", f)
		}
	}

	t.Run("documents without apiVersion, kind or name are rejected", func(t *testing.T) {
		for _, doc := range []string{
			"kind: ConfigMap\nmetadata:\n  name: x\n",
			"apiVersion: v1\nmetadata:\n  name: x\n",
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n---\napiVersion: v1\nkind: Secret\n",
		} {
			if _, err := install.Parse("bad.yaml", []byte(doc)); err == nil {
				t.Errorf("Parse accepted %q", doc)
			}
		}
		ms, err := install.Parse("ok.yaml", []byte("# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n"))
		if err != nil || len(ms) != 2 || ms[1].Object.GetName() != "b" || ms[1].Index != 1 {
			t.Errorf("Parse of two documents and empty ones = %v, %v", ms, err)
		}
	})
}

func TestFileNames(t *testing.T) {
	entries, err := os.ReadDir(payloadDir(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	want := append(expectedFiles(), install.ImageReferencesFile, "README.md")
	sort.Strings(want)
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Errorf("install/ holds\n  %s\nwant exactly\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	pattern := regexp.MustCompile(`^0000_(30|90)_machine-api-operator_[0-9]{2}_[a-z0-9]+([.-][A-Za-z0-9]+)*\.yaml$`)
	for _, name := range got {
		if name == install.ImageReferencesFile || name == "README.md" {
			continue
		}
		if !pattern.MatchString(name) {
			t.Errorf("%s does not follow 0000_{30,90}_machine-api-operator_NN_<name>.yaml", name)
		}
	}
}

// TestApplyOrder checks that applying the documents in file order, as the
// cluster version operator does, never needs an object that comes later:
// the Namespace before everything in it, a CRD before objects of its kind,
// a role before the bindings to it, and a workload after its ServiceAccount,
// the ConfigMaps it mounts and the RBAC of its ServiceAccount (so the
// operator starts with its permissions). Bindings may come before the
// ServiceAccount they name: a subject need not exist.
func TestApplyOrder(t *testing.T) {
	ms := loadPayload(t)
	key := func(kind, ns, name string) string { return kind + "/" + ns + "/" + name }
	pos := map[string]int{}
	crdPos := map[string]int{} // group/kind -> first CRD
	for i, m := range ms {
		k := key(m.Object.GetKind(), m.Object.GetNamespace(), m.Object.GetName())
		if _, dup := pos[k]; !dup {
			pos[k] = i
		}
		if m.Object.GetKind() == "CustomResourceDefinition" {
			crd := decodeStrict(t, m).(*apiextensionsv1.CustomResourceDefinition)
			gk := crd.Spec.Group + "/" + crd.Spec.Names.Kind
			if _, dup := crdPos[gk]; !dup {
				crdPos[gk] = i
			}
		}
	}
	before := func(i int, what, k string) {
		t.Helper()
		p, ok := pos[k]
		switch {
		case !ok:
			t.Errorf("%s needs %s, which the payload does not ship", ms[i], what)
		case p >= i:
			t.Errorf("%s needs %s, which comes later (%s)", ms[i], what, ms[p])
		}
	}
	for i, m := range ms {
		obj := m.Object
		if ns := obj.GetNamespace(); ns != "" && !foreignNamespaces[ns] {
			before(i, "its Namespace", key("Namespace", "", ns))
		}
		gv := strings.Split(obj.GetAPIVersion(), "/")
		if p, ok := crdPos[gv[0]+"/"+obj.GetKind()]; ok && p >= i {
			t.Errorf("%s comes before the CRD of its kind", m)
		}
		switch obj.GetKind() {
		case "ClusterRoleBinding":
			b := decodeStrict(t, m).(*rbacv1.ClusterRoleBinding)
			before(i, "its ClusterRole", key("ClusterRole", "", b.RoleRef.Name))
		case "RoleBinding":
			b := decodeStrict(t, m).(*rbacv1.RoleBinding)
			if b.RoleRef.Kind == "Role" {
				before(i, "its Role", key("Role", b.Namespace, b.RoleRef.Name))
			} else {
				before(i, "its ClusterRole", key("ClusterRole", "", b.RoleRef.Name))
			}
		case "Deployment":
			d := decodeStrict(t, m).(*appsv1.Deployment)
			sa := d.Spec.Template.Spec.ServiceAccountName
			before(i, "its ServiceAccount", key("ServiceAccount", d.Namespace, sa))
			for _, v := range d.Spec.Template.Spec.Volumes {
				if v.ConfigMap != nil {
					before(i, "the ConfigMap it mounts", key("ConfigMap", d.Namespace, v.ConfigMap.Name))
				}
			}
			bindings := 0
			for _, b := range ms[:i] {
				if k := b.Object.GetKind(); k == "RoleBinding" || k == "ClusterRoleBinding" {
					subjects, _ := b.Object.Object["subjects"].([]interface{})
					for _, s := range subjects {
						s, _ := s.(map[string]interface{})
						if s["kind"] == "ServiceAccount" && s["name"] == sa && s["namespace"] == d.Namespace {
							bindings++
						}
					}
				}
			}
			if bindings != 2 {
				t.Errorf("%s: want the ClusterRoleBinding and RoleBinding of ServiceAccount %s before it, found %d bindings", m, sa, bindings)
			}
		case "ClusterOperator":
			before(i, "the operator Deployment (the cluster version operator waits on the ClusterOperator)", key("Deployment", namespace, operatorName))
		}
	}
}

func TestReleaseAnnotations(t *testing.T) {
	for _, m := range loadPayload(t) {
		a := m.Object.GetAnnotations()
		kind := m.Object.GetKind()
		if a[selfManagedAnno] != "true" {
			t.Errorf("%s: want %s: \"true\"", m, selfManagedAnno)
		}
		// create-only: the cluster version operator must not overwrite
		// the bundle the network operator injects; nothing else.
		trustedCA := kind == "ConfigMap" && m.Object.GetName() == names.TrustedCAConfigMapName
		if _, ok := a[createOnlyAnno]; ok != trustedCA {
			t.Errorf("%s: %s present = %v; only the trusted CA ConfigMap is created once and never overwritten", m, createOnlyAnno, ok)
		}
		switch {
		case kind == "Namespace":
			if _, ok := a[capabilityAnno]; ok {
				t.Errorf("%s: the Namespace carries no capability annotation", m)
			}
		case kind == "CredentialsRequest":
			// Only with the cloud credential operator.
			if a[capabilityAnno] != "MachineAPI+CloudCredential" {
				t.Errorf("%s: want %s: MachineAPI+CloudCredential", m, capabilityAnno)
			}
		case a[capabilityAnno] != "MachineAPI":
			t.Errorf("%s: want %s: MachineAPI", m, capabilityAnno)
		}
		if kind == "CustomResourceDefinition" {
			// Verbatim openshift/api copies; the variant is in the file name.
			fs := a[featureSetAnno]
			if strings.Contains(m.File, "_02_machine.") || strings.Contains(m.File, "_03_machineset.") {
				if !strings.HasSuffix(m.File, "."+fs+".crd.yaml") {
					t.Errorf("%s: feature set annotation %q does not match the file name", m, fs)
				}
			}
			continue
		}
		// As on OpenShift, credentials, the termination handler's SCC and
		// MachineHealthCheck are not in the single-node profile (a single
		// node has no spot workers to replace).
		switch kind {
		case "CredentialsRequest", "SecurityContextConstraints", "MachineHealthCheck":
			if _, ok := a[singleNodeAnno]; ok {
				t.Errorf("%s: not in the %s profile on OpenShift", m, singleNodeAnno)
			}
		default:
			if a[singleNodeAnno] != "true" {
				t.Errorf("%s: want %s: \"true\"", m, singleNodeAnno)
			}
		}
		if kind != "Namespace" && kind != "ConfigMap" && a[hostedExcludeAnn] != "true" {
			t.Errorf("%s: want %s: \"true\"", m, hostedExcludeAnn)
		}
	}
	ns := typed[*corev1.Namespace](t, loadPayload(t), "Namespace", namespace)
	for k, v := range map[string]string{
		"pod-security.kubernetes.io/enforce": "privileged",
		"pod-security.kubernetes.io/audit":   "privileged",
		"pod-security.kubernetes.io/warn":    "privileged",
		"openshift.io/cluster-monitoring":    "true",
		"openshift.io/run-level":             "",
	} {
		if got, ok := ns.Labels[k]; !ok || got != v {
			t.Errorf("Namespace label %s = %q, want %q", k, got, v)
		}
	}
	for k, v := range map[string]string{"openshift.io/node-selector": "", "workload.openshift.io/allowed": "management"} {
		if got, ok := ns.Annotations[k]; !ok || got != v {
			t.Errorf("Namespace annotation %s = %q, want %q", k, got, v)
		}
	}
}

// payloadImages returns images.json of the images ConfigMap as a map and as
// config.Images.
func payloadImages(t testing.TB, ms []install.Manifest) (map[string]string, config.Images) {
	t.Helper()
	cm := typed[*corev1.ConfigMap](t, ms, "ConfigMap", config.ImagesConfigMapName)
	if cm.Namespace != namespace {
		t.Fatalf("images ConfigMap is in namespace %q", cm.Namespace)
	}
	data, ok := cm.Data[config.ImagesConfigMapKey]
	if !ok {
		t.Fatalf("images ConfigMap has no key %s", config.ImagesConfigMapKey)
	}
	raw := map[string]string{}
	if err := json.Unmarshal([]byte(data), &raw); err != nil {
		t.Fatalf("images.json: %v", err)
	}
	images, err := config.ParseImages([]byte(data))
	if err != nil {
		t.Fatalf("config.ParseImages: %v", err)
	}
	return raw, images
}

func imageReferences(t testing.TB) *imagev1.ImageStream {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(payloadDir(t), install.ImageReferencesFile))
	if err != nil {
		t.Fatal(err)
	}
	var is imagev1.ImageStream
	if err := yaml.UnmarshalStrict(data, &is); err != nil {
		t.Fatalf("image-references: %v", err)
	}
	if is.Kind != "ImageStream" || is.APIVersion != "image.openshift.io/v1" {
		t.Fatalf("image-references is %s %s, want image.openshift.io/v1 ImageStream", is.APIVersion, is.Kind)
	}
	return &is
}

func TestImages(t *testing.T) {
	ms := loadPayload(t)
	raw, images := payloadImages(t, ms)

	// Every key of config.Images is present, and nothing else.
	var keys []string
	rt := reflect.TypeOf(config.Images{})
	for i := 0; i < rt.NumField(); i++ {
		keys = append(keys, strings.Split(rt.Field(i).Tag.Get("json"), ",")[0])
	}
	sort.Strings(keys)
	got := slices.Sorted(func(yield func(string) bool) {
		for k := range raw {
			if !yield(k) {
				return
			}
		}
	})
	if !slices.Equal(got, keys) {
		t.Errorf("images.json keys\n  %v\nwant the keys of config.Images\n  %v", got, keys)
	}
	// ParseImages decodes every key into its field.
	decoded := map[string]string{}
	b, _ := json.Marshal(images)
	_ = json.Unmarshal(b, &decoded)
	if !reflect.DeepEqual(decoded, raw) {
		t.Errorf("config.ParseImages(images.json) = %v, want %v", decoded, raw)
	}
	for k, v := range raw {
		if !regexp.MustCompile(`^quay\.io/openshift/origin-[a-z0-9-]+:v4\.0$`).MatchString(v) {
			t.Errorf("images.json %s = %q, want a quay.io/openshift/origin-<name>:v4.0 pull spec", k, v)
		}
	}
	if images.ClusterAPIControllerKubemark != images.MachineAPIOperator {
		t.Errorf("clusterAPIControllerKubemark = %q, want the machine-api-operator image %q (it ships the kubemark provider)",
			images.ClusterAPIControllerKubemark, images.MachineAPIOperator)
	}

	// image-references: every pull spec once, every tag used, tags named
	// after the image as upstream does.
	is := imageReferences(t)
	refs := map[string]string{}
	for _, tag := range is.Spec.Tags {
		if tag.From == nil || tag.From.Kind != "DockerImage" {
			t.Errorf("image-references tag %s: want from.kind DockerImage", tag.Name)
			continue
		}
		if prev, dup := refs[tag.From.Name]; dup {
			t.Errorf("image-references: %s is listed by tags %s and %s", tag.From.Name, prev, tag.Name)
		}
		refs[tag.From.Name] = tag.Name
		if want := "quay.io/openshift/origin-" + tag.Name + ":v4.0"; tag.From.Name != want {
			t.Errorf("image-references tag %s points at %s, want %s", tag.Name, tag.From.Name, want)
		}
	}
	used := map[string]bool{}
	for k, v := range raw {
		used[v] = true
		if _, ok := refs[v]; !ok {
			t.Errorf("images.json %s = %s is not a from.name in image-references: release tooling would not substitute it", k, v)
		}
	}
	d := typed[*appsv1.Deployment](t, ms, "Deployment", operatorName)
	for _, c := range d.Spec.Template.Spec.Containers {
		used[c.Image] = true
		if _, ok := refs[c.Image]; !ok {
			t.Errorf("Deployment container %s image %s is not in image-references", c.Name, c.Image)
		}
	}
	for spec, tag := range refs {
		if !used[spec] {
			t.Errorf("image-references tag %s (%s) is used by no manifest", tag, spec)
		}
	}
}

func TestOperatorDeployment(t *testing.T) {
	ms := loadPayload(t)
	_, images := payloadImages(t, ms)
	d := typed[*appsv1.Deployment](t, ms, "Deployment", operatorName)
	spec := d.Spec.Template.Spec
	labels := map[string]string{"k8s-app": operatorName}

	check := func(what string, got, want interface{}) {
		t.Helper()
		if !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", what, got, want)
		}
	}
	check("namespace", d.Namespace, namespace)
	check("replicas", d.Spec.Replicas, ptr.To[int32](1))
	check("labels", d.Labels, labels)
	check("selector", d.Spec.Selector.MatchLabels, labels)
	check("pod labels", d.Spec.Template.Labels, labels)
	check("serviceAccountName", spec.ServiceAccountName, operatorName)
	// OpenShift's scheduling; the root kustomization removes both
	// (TestKustomizations).
	check("nodeSelector", spec.NodeSelector, map[string]string{"node-role.kubernetes.io/master": ""})
	check("priorityClassName", spec.PriorityClassName, "system-node-critical")
	check("pod securityContext", spec.SecurityContext, &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	})
	check("tolerations", spec.Tolerations, []corev1.Toleration{
		{Key: "node-role.kubernetes.io/master", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](120)},
		{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](120)},
	})
	check("volumes", spec.Volumes, []corev1.Volume{{Name: "images", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: config.ImagesConfigMapName}},
	}}, {Name: "machine-api-operator-tls", VolumeSource: corev1.VolumeSource{
		// service-ca's metrics serving certificate on OpenShift; optional,
		// as no one issues it elsewhere (the operator then serves a
		// self-signed certificate).
		Secret: &corev1.SecretVolumeSource{SecretName: "machine-api-operator-tls", Optional: ptr.To(true)},
	}}})
	if len(spec.Containers) != 1 || len(spec.InitContainers) != 0 {
		t.Fatalf("want one container, got %d (+%d init)", len(spec.Containers), len(spec.InitContainers))
	}
	c := spec.Containers[0]
	check("container name", c.Name, operatorName)
	check("image", c.Image, images.MachineAPIOperator)
	check("command", c.Command, []string{"/machine-api-operator"})
	check("args", c.Args, []string{"start", "--images-json=/etc/machine-api-operator-config/images/" + config.ImagesConfigMapKey,
		"--metrics-cert-dir=/etc/tls/private", "--v=2"})
	fieldRef := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
	}
	check("env", c.Env, []corev1.EnvVar{
		{Name: "RELEASE_VERSION", Value: versionSentinel},
		{Name: "COMPONENT_NAMESPACE", ValueFrom: fieldRef("metadata.namespace")},
		{Name: "POD_NAME", ValueFrom: fieldRef("metadata.name")},
		{Name: "POD_UID", ValueFrom: fieldRef("metadata.uid")}, // with POD_NAME, the leader-election identity
	})
	// The start command's defaults: --metrics-bind-address=:8443 (HTTPS,
	// the port https of OpenShift's operator), --health-probe-bind-address=:9445.
	check("ports", c.Ports, []corev1.ContainerPort{
		{Name: "https", ContainerPort: 8443, Protocol: corev1.ProtocolTCP},
		{Name: "healthz", ContainerPort: 9445, Protocol: corev1.ProtocolTCP},
	})
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("healthz")}}}
	}
	check("livenessProbe", c.LivenessProbe, probe("/healthz"))
	check("readinessProbe", c.ReadinessProbe, probe("/readyz"))
	check("resources", c.Resources, corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("50Mi"),
	}})
	check("container securityContext", c.SecurityContext, &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	})
	check("volumeMounts", c.VolumeMounts, []corev1.VolumeMount{
		{Name: "images", MountPath: "/etc/machine-api-operator-config/images", ReadOnly: true},
		{Name: "machine-api-operator-tls", MountPath: "/etc/tls/private", ReadOnly: true},
	})

	svc := typed[*corev1.Service](t, ms, "Service", operatorName)
	check("Service selector", svc.Spec.Selector, labels)
	check("Service ports", svc.Spec.Ports, []corev1.ServicePort{{Name: "https", Port: 8443, TargetPort: intstr.FromString("https"), Protocol: corev1.ProtocolTCP}})
	check("Service serving certificate", svc.Annotations["service.beta.openshift.io/serving-cert-secret-name"], "machine-api-operator-tls")

	sa := typed[*corev1.ServiceAccount](t, ms, "ServiceAccount", operatorName)
	check("ServiceAccount namespace", sa.Namespace, namespace)
}

func TestClusterOperator(t *testing.T) {
	ms := loadPayload(t)
	co := typed[*configv1.ClusterOperator](t, ms, "ClusterOperator", config.ClusterOperatorName)
	if want := []configv1.OperandVersion{{Name: "operator", Version: versionSentinel}}; !equality.Semantic.DeepEqual(co.Status.Versions, want) {
		t.Errorf("status.versions = %v, want %v", co.Status.Versions, want)
	}
	if want := status.RelatedObjects(namespace); !equality.Semantic.DeepEqual(co.Status.RelatedObjects, want) {
		t.Errorf("status.relatedObjects =\n  %v\nwant what the operator reports (status.RelatedObjects)\n  %v", co.Status.RelatedObjects, want)
	}
	if len(co.Status.Conditions) != 0 {
		t.Errorf("the manifest must not set conditions; the operator reports them")
	}
	// The version the cluster version operator waits for is the one the
	// operator reports, which it takes from RELEASE_VERSION.
	d := typed[*appsv1.Deployment](t, ms, "Deployment", operatorName)
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "RELEASE_VERSION" && e.Value != co.Status.Versions[0].Version {
			t.Errorf("RELEASE_VERSION %q differs from the ClusterOperator version %q", e.Value, co.Status.Versions[0].Version)
		}
	}
}
