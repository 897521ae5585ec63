package apply_test

import (
	"context"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/apply"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/apply/applytest"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func createNamespace(t *testing.T, ctx context.Context, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// countingApplier returns an Applier whose client (used for reads and writes)
// counts its requests, like a freshly started operator would have.
func countingApplier(t *testing.T) (*apply.Applier, *applytest.CountingTransport) {
	t.Helper()
	ct := applytest.NewCountingTransport()
	c, err := client.New(ct.Install(env.Config), client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return apply.New(apply.Options{Client: c, Reader: c, Owner: testOwner}), ct
}

// testOwner is the installation the test appliers stand for.
const testOwner = "test-installation"

// objects are realistic operand objects; the server fills in defaults for
// most of their fields. They are built fresh for every call.
func objects(ns, suffix string) []client.Object {
	labels := map[string]string{"k8s-app": "controller"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "machine-api-controllers", Namespace: ns, Labels: maps.Clone(labels)},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(labels)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      maps.Clone(labels),
					Annotations: map[string]string{"target.workload.openshift.io/management": `{"effect": "PreferredDuringScheduling"}`},
				},
				Spec: corev1.PodSpec{
					ServiceAccountName: "machine-api-controllers",
					PriorityClassName:  "system-node-critical",
					NodeSelector:       map[string]string{"node-role.kubernetes.io/master": ""},
					Tolerations: []corev1.Toleration{
						{Key: "node-role.kubernetes.io/master", Effect: corev1.TaintEffectNoSchedule},
						{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](120)},
					},
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
					Containers: []corev1.Container{{
						Name:    "machineset-controller",
						Image:   "quay.io/openshift/machine-api-operator:v1",
						Command: []string{"/machineset-controller"},
						Args:    []string{"--logtostderr=true", "--v=3", "--namespace=" + ns},
						Env: []corev1.EnvVar{
							{Name: "HTTP_PROXY", Value: "http://proxy:3128"},
							{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
						},
						Ports: []corev1.ContainerPort{{Name: "webhook-server", ContainerPort: 8443}},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse("10m"),
							corev1.ResourceMemory: resource.MustParse("20Mi"),
						}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
							Path: "/readyz", Port: intstr.FromString("healthz"),
						}}},
						VolumeMounts: []corev1.VolumeMount{{Name: "cert", MountPath: "/etc/machine-api-operator/tls", ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{
						{Name: "cert", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
							SecretName: "machine-api-operator-webhook-cert", DefaultMode: ptr.To[int32](420),
						}}},
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "machine-api-operator-images", Namespace: ns},
		Data:       map[string]string{"images.json": `{"machineAPIOperator": "quay.io/openshift/machine-api-operator:v1"}`, "empty": ""},
	}
	cr := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "machine-api-controllers-" + suffix},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"machine.openshift.io"}, Resources: []string{"machines", "machinesets"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "machine-api-" + suffix},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "validation.machineset.machine.openshift.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service: &admissionregistrationv1.ServiceReference{
					Namespace: ns, Name: config.WebhookServiceName, Path: ptr.To("/validate-machine-openshift-io-v1beta1-machineset"),
				},
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{"machine.openshift.io"}, APIVersions: []string{"v1beta1"}, Resources: []string{"machinesets"},
				},
			}},
			// Ignore: nothing serves this webhook in the test.
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}, {
			Name: "validation.machine.machine.openshift.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service: &admissionregistrationv1.ServiceReference{
					Namespace: ns, Name: config.WebhookServiceName, Path: ptr.To("/validate-machine-openshift-io-v1beta1-machine"),
				},
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{"machine.openshift.io"}, APIVersions: []string{"v1beta1"}, Resources: []string{"machines"},
				},
			}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "machine-api-controllers-" + suffix},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "machine-api-controllers"}},
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "machine-api-controllers", Namespace: ns}}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: config.WebhookServiceName, Namespace: ns,
			Annotations: map[string]string{"service.beta.openshift.io/serving-cert-secret-name": config.WebhookCertSecretName},
		},
		Spec: corev1.ServiceSpec{
			Selector: maps.Clone(labels),
			Ports: []corev1.ServicePort{
				{Name: "https", Port: 443, TargetPort: intstr.FromString("webhook-server")},
				{Name: "metrics", Port: 8441}, // targetPort defaulted by the server
			},
		},
	}
	return []client.Object{dep, cm, cr, vwc, svc, crb, sa}
}

// Indexes of the objects returned by objects.
const (
	iDeployment = iota
	iConfigMap
	iClusterRole
	iWebhooks
	iService
	iClusterRoleBinding
	iServiceAccount
	nObjects
)

func refs(rs []apply.ObjectRef) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.String())
	}
	sort.Strings(out)
	return out
}

func mustApply(t *testing.T, ctx context.Context, a *apply.Applier, objs []client.Object) apply.Result {
	t.Helper()
	res, err := a.Apply(ctx, objs)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return res
}

// expectWrites checks that ct counted exactly n writes and resets it.
func expectWrites(t *testing.T, ct *applytest.CountingTransport, n int, what string) {
	t.Helper()
	t.Logf("%s: %d writes, %d reads (%s)", what, ct.Writes(), ct.Reads(), ct)
	if got := ct.Writes(); got != n {
		t.Errorf("%s: %d write requests, want %d: %v", what, got, n, ct.WriteRequests())
	}
	ct.Reset()
}

func cleanupClusterScoped(t *testing.T, objs []client.Object) {
	t.Cleanup(func() {
		for _, o := range objs {
			if o.GetNamespace() == "" {
				_ = env.Client.Delete(context.Background(), o)
			}
		}
	})
}

func TestApplyLifecycle(t *testing.T) {
	ctx := testContext(t)
	ns := createNamespace(t, ctx, "apply")
	a, ct := countingApplier(t)
	cleanupClusterScoped(t, objects(ns, ns))

	// Create.
	objs := objects(ns, ns)
	inputs := make([]client.Object, len(objs))
	for i, o := range objs {
		inputs[i] = o.DeepCopyObject().(client.Object)
	}
	res := mustApply(t, ctx, a, objs)
	if len(res.Applied) != nObjects || len(res.Created) != nObjects || len(res.Unchanged) != 0 {
		t.Fatalf("first apply: %+v", res)
	}
	for i := range objs {
		if !equality.Semantic.DeepEqual(objs[i], inputs[i]) {
			t.Errorf("Apply modified its input %d", i)
		}
	}
	expectWrites(t, ct, nObjects, "create")
	for _, o := range objects(ns, ns) {
		live := o.DeepCopyObject().(client.Object)
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(o), live); err != nil {
			t.Fatalf("%T %s not created: %v", o, o.GetName(), err)
		}
		if live.GetLabels()[config.ManagedByLabel] != config.ManagedByValue {
			t.Errorf("%T %s lacks the ownership label: %v", o, o.GetName(), live.GetLabels())
		}
		if !slices.ContainsFunc(live.GetManagedFields(), func(e metav1.ManagedFieldsEntry) bool {
			return e.Manager == config.FieldManager && e.Operation == metav1.ManagedFieldsOperationApply
		}) {
			t.Errorf("%T %s: no apply entry of field manager %s", o, o.GetName(), config.FieldManager)
		}
	}

	// Steady state: zero writes.
	res = mustApply(t, ctx, a, objects(ns, ns))
	if len(res.Unchanged) != nObjects || len(res.Applied) != 0 {
		t.Errorf("second apply: %+v", res)
	}
	expectWrites(t, ct, 0, "steady state")

	// A restart: a new Applier and client, same objects: zero writes.
	a2, ct2 := countingApplier(t)
	res = mustApply(t, ctx, a2, objects(ns, ns))
	if len(res.Unchanged) != nObjects {
		t.Errorf("apply after restart: %+v", res)
	}
	expectWrites(t, ct2, 0, "restart")

	// Drift: another manager changes a field we own; Apply reverts it.
	dep := &appsv1.Deployment{}
	depKey := client.ObjectKey{Namespace: ns, Name: "machine-api-controllers"}
	if err := env.Client.Get(ctx, depKey, dep); err != nil {
		t.Fatal(err)
	}
	dep.Spec.Template.Spec.Containers[0].Image = "evil:latest"
	if err := env.Client.Update(ctx, dep, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	ct.Reset()
	res = mustApply(t, ctx, a, objects(ns, ns))
	if got := refs(res.Applied); len(got) != 1 || !strings.HasPrefix(got[0], "Deployment.apps/") {
		t.Errorf("drift apply: applied %v", got)
	}
	expectWrites(t, ct, 1, "image drift")
	if err := env.Client.Get(ctx, depKey, dep); err != nil {
		t.Fatal(err)
	}
	if img := dep.Spec.Template.Spec.Containers[0].Image; img != "quay.io/openshift/machine-api-operator:v1" {
		t.Errorf("image not reverted: %s", img)
	}
	mustApply(t, ctx, a, objects(ns, ns))
	expectWrites(t, ct, 0, "after image drift")

	// Drift in a cluster-scoped object: a webhook's failure policy.
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "machine-api-" + ns}, vwc); err != nil {
		t.Fatal(err)
	}
	vwc.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Fail)
	if err := env.Client.Update(ctx, vwc, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	mustApply(t, ctx, a, objects(ns, ns))
	expectWrites(t, ct, 1, "webhook drift")
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "machine-api-" + ns}, vwc); err != nil {
		t.Fatal(err)
	}
	if *vwc.Webhooks[0].FailurePolicy != admissionregistrationv1.Ignore {
		t.Errorf("failurePolicy not reverted: %s", *vwc.Webhooks[0].FailurePolicy)
	}

	// Deletion: Apply recreates.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "machine-api-operator-images", Namespace: ns}}
	if err := env.Client.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	res = mustApply(t, ctx, a, objects(ns, ns))
	if got := refs(res.Created); len(got) != 1 || !strings.HasPrefix(got[0], "ConfigMap/") {
		t.Errorf("recreate: created %v", got)
	}
	expectWrites(t, ct, 1, "configmap deleted")
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		t.Errorf("configmap not recreated: %v", err)
	}

	// Other managers add labels and annotations to the objects' metadata:
	// kept, no fight, zero writes.
	if err := env.Client.Get(ctx, depKey, dep); err != nil {
		t.Fatal(err)
	}
	dep.Labels["team"] = "infra"
	if err := env.Client.Update(ctx, dep, client.FieldOwner("someone-else")); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: config.WebhookServiceName}, svc); err != nil {
		t.Fatal(err)
	}
	svc.Annotations["note"] = "added by hand"
	if err := env.Client.Update(ctx, svc, client.FieldOwner("someone-else")); err != nil {
		t.Fatal(err)
	}
	ct.Reset()
	res = mustApply(t, ctx, a, objects(ns, ns))
	if len(res.Applied) != 0 {
		t.Errorf("foreign metadata caused applies: %v", refs(res.Applied))
	}
	expectWrites(t, ct, 0, "foreign metadata")
	if err := env.Client.Get(ctx, depKey, dep); err != nil {
		t.Fatal(err)
	}
	if dep.Labels["team"] != "infra" {
		t.Errorf("foreign label lost: %v", dep.Labels)
	}

	// The desired object stops setting a field (a proxy removed, a label
	// dropped): applied once, and server-side apply removes the field.
	changed := objects(ns, ns)
	d := changed[0].(*appsv1.Deployment)
	d.Spec.Template.Spec.Containers[0].Env = d.Spec.Template.Spec.Containers[0].Env[1:]
	delete(d.Labels, "k8s-app")
	res = mustApply(t, ctx, a, changed)
	if len(res.Applied) != 1 {
		t.Errorf("removal: applied %v", refs(res.Applied))
	}
	expectWrites(t, ct, 1, "field removed from desired")
	if err := env.Client.Get(ctx, depKey, dep); err != nil {
		t.Fatal(err)
	}
	env0 := dep.Spec.Template.Spec.Containers[0].Env
	if slices.ContainsFunc(env0, func(e corev1.EnvVar) bool { return e.Name == "HTTP_PROXY" }) {
		t.Errorf("HTTP_PROXY not removed: %v", env0)
	}
	if _, ok := dep.Labels["k8s-app"]; ok {
		t.Errorf("label not removed: %v", dep.Labels)
	}
	if dep.Labels["team"] != "infra" {
		t.Errorf("foreign label lost: %v", dep.Labels)
	}
	mustApply(t, ctx, a, changed)
	expectWrites(t, ct, 0, "after field removal")
}

func TestApplyContinuesPastFailures(t *testing.T) {
	ctx := testContext(t)
	ns := createNamespace(t, ctx, "apply-fail")
	a, ct := countingApplier(t)
	bad := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "does-not-exist"}}
	good := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "good", Namespace: ns}, Data: map[string]string{"a": "b"}}
	res, err := a.Apply(ctx, []client.Object{bad, good})
	if err == nil || !strings.Contains(err.Error(), "ConfigMap/does-not-exist/bad") {
		t.Errorf("error = %v", err)
	}
	if len(res.Failed) != 1 || len(res.Created) != 1 || res.Created[0].Name != "good" {
		t.Errorf("result = %+v", res)
	}
	t.Logf("with a failure: %s", ct)
}

func crd(group string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true)},
					},
				}},
			}},
		},
	}
}

func TestPrune(t *testing.T) {
	ctx := testContext(t)
	ns := createNamespace(t, ctx, "prune")
	other := createNamespace(t, ctx, "prune-other")
	a, ct := countingApplier(t)

	cm := func(ns, name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"k": name}}
	}
	cr := func(name string) *rbacv1.ClusterRole {
		return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}},
		}}
	}
	group := ns + ".example.com"
	applied := []client.Object{
		cm(ns, "keep"), cm(ns, "obsolete-1"), cm(ns, "obsolete-2"), cm(other, "other-namespace"),
		cr(ns + "-keep"), cr(ns + "-obsolete"),
		crd(group),
	}
	cleanupClusterScoped(t, applied)
	res := mustApply(t, ctx, a, applied)
	if len(res.Created) != len(applied) {
		t.Fatalf("apply: %+v", res)
	}
	// The CRD is applied like everything else: a second apply is free.
	mustApply(t, ctx, a, applied)
	expectWrites(t, ct, len(applied), "apply for prune")

	unlabelled := []client.Object{cm(ns, "unlabelled"), cr(ns + "-unlabelled")}
	cleanupClusterScoped(t, unlabelled)
	for _, o := range unlabelled {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// Labelled, but by someone else.
	foreign := cm(ns, "foreign")
	foreign.Labels = map[string]string{config.ManagedByLabel: "helm"}
	if err := env.Client.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	// Applied by the operator of another installation (namespace).
	otherInstall := []client.Object{cm(ns, "other-installation"), cr(ns + "-other-installation")}
	cleanupClusterScoped(t, otherInstall)
	mustApply(t, ctx, apply.New(apply.Options{Client: env.Client, Owner: "other-installation"}), otherInstall)

	kinds := []schema.GroupVersionKind{
		corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		rbacv1.SchemeGroupVersion.WithKind("ClusterRole"),
		apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"),
		corev1.SchemeGroupVersion.WithKind("Namespace"),
		{Group: "not-installed.example.com", Version: "v1", Kind: "Gadget"},
	}
	keep := []client.Object{cm(ns, "keep"), cr(ns + "-keep")}
	ct.Reset()
	deleted, err := a.Prune(ctx, kinds, ns, keep)
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	want := []string{
		"ClusterRole.rbac.authorization.k8s.io/" + ns + "-obsolete",
		"ConfigMap/" + ns + "/obsolete-1",
		"ConfigMap/" + ns + "/obsolete-2",
	}
	if got := refs(deleted); !slices.Equal(got, want) {
		t.Errorf("deleted %v, want %v", got, want)
	}
	expectWrites(t, ct, 3, "prune")

	gone := []client.Object{cm(ns, "obsolete-1"), cm(ns, "obsolete-2"), cr(ns + "-obsolete")}
	for _, o := range gone {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
			t.Errorf("%s still exists (err %v)", o.GetName(), err)
		}
	}
	kept := []client.Object{cm(ns, "keep"), cr(ns + "-keep"), cm(other, "other-namespace"), crd(group), foreign.DeepCopy()}
	kept = append(kept, unlabelled...)
	kept = append(kept, otherInstall...)
	for _, o := range kept {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Errorf("%T %s was deleted: %v", o, o.GetName(), err)
		} else if o.GetDeletionTimestamp() != nil {
			t.Errorf("%T %s is being deleted", o, o.GetName())
		}
	}

	// Nothing left to prune: zero writes.
	deleted, err = a.Prune(ctx, kinds, ns, keep)
	if err != nil || len(deleted) != 0 {
		t.Errorf("second prune: deleted %v, err %v", refs(deleted), err)
	}
	expectWrites(t, ct, 0, "second prune")

	// Keeping nothing still never deletes the CRD or namespaces.
	deleted, err = a.Prune(ctx, kinds[2:4], "", nil)
	if err != nil || len(deleted) != 0 {
		t.Errorf("prune of protected kinds: deleted %v, err %v", refs(deleted), err)
	}
	expectWrites(t, ct, 0, "prune of protected kinds")
}

// TestSteadyStateWithCacheSendsNoRequests uses a cache-backed reader, as the
// operator does: once the cache has caught up, Apply sends no request at all.
func TestSteadyStateWithCacheSendsNoRequests(t *testing.T) {
	ctx := testContext(t)
	ns := createNamespace(t, ctx, "apply-cache")
	ct := applytest.NewCountingTransport()
	cfg := ct.Install(env.Config)
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	informers, err := cache.New(cfg, cache.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	cacheCtx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go func() {
		if err := informers.Start(cacheCtx); err != nil {
			t.Errorf("cache: %v", err)
		}
	}()
	if !informers.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	a := apply.New(apply.Options{Client: c, Reader: informers, Owner: testOwner})
	cleanupClusterScoped(t, objects(ns, ns))

	mustApply(t, ctx, a, objects(ns, ns))
	// Right after a write the cache may lag: at most a few extra (no-op)
	// applies until it has the new objects.
	deadline := time.Now().Add(30 * time.Second)
	for {
		res := mustApply(t, ctx, a, objects(ns, ns))
		if len(res.Applied) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never reached a steady state: still applying %v", refs(res.Applied))
		}
		time.Sleep(50 * time.Millisecond)
	}
	ct.Reset()
	for range 3 {
		res := mustApply(t, ctx, a, objects(ns, ns))
		if len(res.Unchanged) != nObjects {
			t.Errorf("steady state: %+v", res)
		}
	}
	t.Logf("steady state with a cache, 3 applies: %d requests (%s)", ct.Total(), ct)
	if ct.Total() != 0 {
		t.Errorf("steady state with a cache sent requests: %v", ct.Snapshot())
	}
}
