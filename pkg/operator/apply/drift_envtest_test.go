package apply_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/apply"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/apply/applytest"
)

// live reads the current state of objects(ns, suffix)[i].
func live(t *testing.T, ctx context.Context, ns, suffix string, i int) client.Object {
	t.Helper()
	o := objects(ns, suffix)[i]
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
		t.Fatal(err)
	}
	return o
}

// patchAs patches objects(ns, suffix)[i] as the field manager kubectl
// records for `kubectl patch`.
func patchAs(t *testing.T, ctx context.Context, manager string, ns, suffix string, i int, pt types.PatchType, patch string) {
	t.Helper()
	o := objects(ns, suffix)[i]
	if err := env.Client.Patch(ctx, o, client.RawPatch(pt, []byte(patch)), client.FieldOwner(manager)); err != nil {
		t.Fatalf("%s patch %s: %v", pt, patch, err)
	}
}

func containerNames(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func envNames(d *appsv1.Deployment) []string {
	var out []string
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		out = append(out, e.Name)
	}
	return out
}

// TestDriftReverted makes one foreign edit per case, as kubectl would, and
// expects one Apply to revert it with the given number of writes, and the
// next Apply (also by a restarted operator) to make none.
func TestDriftReverted(t *testing.T) {
	const smp, jsonPatch, merge = types.StrategicMergePatchType, types.JSONPatchType, types.MergePatchType
	want := func(ns, suffix string) []client.Object { return objects(ns, suffix) }
	dep := func(o client.Object) *appsv1.Deployment { return o.(*appsv1.Deployment) }
	podSpec := func(o client.Object) corev1.PodSpec { return dep(o).Spec.Template.Spec }

	tests := []struct {
		name string
		// edit changes the live objects the way another manager would.
		edit func(t *testing.T, ctx context.Context, ns, suffix string)
		// writes the revert takes: 1 for a forced apply or for the update
		// removing others' fields, 2 when both are needed.
		writes int
		// i is the object checked; reverted says what is still wrong with it.
		i        int
		reverted func(live client.Object, want client.Object) string
	}{
		{
			name: "container added (kubectl patch)",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-patch", ns, suffix, iDeployment, smp,
					`{"spec":{"template":{"spec":{"containers":[{"name":"evil","image":"evil:1"}]}}}}`)
			},
			writes: 1, i: iDeployment,
			reverted: func(l, w client.Object) string {
				if got := containerNames(podSpec(l).Containers); !slices.Equal(got, []string{"machineset-controller"}) {
					return fmt.Sprintf("containers %v", got)
				}
				return ""
			},
		},
		{
			name: "container added (kubectl edit)",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				d := dep(live(t, ctx, ns, suffix, iDeployment))
				d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "evil", Image: "evil:1"})
				if err := env.Client.Update(ctx, d, client.FieldOwner("kubectl-edit")); err != nil {
					t.Fatal(err)
				}
			},
			writes: 1, i: iDeployment,
			reverted: func(l, w client.Object) string {
				if got := containerNames(podSpec(l).Containers); !slices.Equal(got, []string{"machineset-controller"}) {
					return fmt.Sprintf("containers %v", got)
				}
				return ""
			},
		},
		{
			name: "container renamed",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-patch", ns, suffix, iDeployment, jsonPatch,
					`[{"op":"replace","path":"/spec/template/spec/containers/0/name","value":"evil"}]`)
			},
			// Removing the renamed container first would leave none: the
			// server rejects that update, so ours is applied first and the
			// renamed one removed after (3 write requests, 1 rejected).
			writes: 3, i: iDeployment,
			reverted: func(l, w client.Object) string {
				if got := containerNames(podSpec(l).Containers); !slices.Equal(got, []string{"machineset-controller"}) {
					return fmt.Sprintf("containers %v", got)
				}
				return ""
			},
		},
		{
			name: "container, argument, env var and a metadata label in one patch",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "e2e", ns, suffix, iDeployment, jsonPatch, `[
					{"op":"add","path":"/metadata/labels/e2e-kept","value":"yes"},
					{"op":"add","path":"/spec/template/spec/containers/-","value":{"name":"evil","image":"evil:1"}},
					{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--evil"},
					{"op":"add","path":"/spec/template/spec/containers/0/env/-","value":{"name":"EVIL","value":"1"}}]`)
			},
			// The added container and env var are removed first, then the
			// arguments (an atomic list another manager took over) applied.
			writes: 2, i: iDeployment,
			reverted: func(l, w client.Object) string {
				ps := podSpec(l)
				switch {
				case len(ps.Containers) != 1:
					return fmt.Sprintf("containers %v", containerNames(ps.Containers))
				case !slices.Equal(ps.Containers[0].Args, podSpec(w).Containers[0].Args):
					return fmt.Sprintf("args %v", ps.Containers[0].Args)
				case !slices.Equal(envNames(dep(l)), []string{"HTTP_PROXY", "POD_NAME"}):
					return fmt.Sprintf("env %v", envNames(dep(l)))
				case l.GetLabels()["e2e-kept"] != "yes":
					return "the label others added to the metadata was removed"
				}
				return ""
			},
		},
		{
			name: "init container added",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-patch", ns, suffix, iDeployment, smp,
					`{"spec":{"template":{"spec":{"initContainers":[{"name":"evil","image":"evil:1"}]}}}}`)
			},
			writes: 1, i: iDeployment,
			reverted: func(l, w client.Object) string {
				if n := len(podSpec(l).InitContainers); n != 0 {
					return fmt.Sprintf("%d init containers", n)
				}
				return ""
			},
		},
		{
			name: "argument appended",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-patch", ns, suffix, iDeployment, jsonPatch,
					`[{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--evil"}]`)
			},
			writes: 1, i: iDeployment,
			reverted: func(l, w client.Object) string {
				if got, want := podSpec(l).Containers[0].Args, podSpec(w).Containers[0].Args; !slices.Equal(got, want) {
					return fmt.Sprintf("args %v, want %v", got, want)
				}
				return ""
			},
		},
		{
			name: "command replaced",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-patch", ns, suffix, iDeployment, jsonPatch,
					`[{"op":"replace","path":"/spec/template/spec/containers/0/command","value":["/bin/sh","-c","evil"]}]`)
			},
			writes: 1, i: iDeployment,
			reverted: func(l, w client.Object) string {
				if got, want := podSpec(l).Containers[0].Command, podSpec(w).Containers[0].Command; !slices.Equal(got, want) {
					return fmt.Sprintf("command %v, want %v", got, want)
				}
				return ""
			},
		},
		{
			name: "env var added",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-patch", ns, suffix, iDeployment, smp,
					`{"spec":{"template":{"spec":{"containers":[{"name":"machineset-controller","env":[{"name":"EVIL","value":"1"}]}]}}}}`)
			},
			writes: 1, i: iDeployment,
			reverted: func(l, w client.Object) string {
				if got := envNames(dep(l)); !slices.Equal(got, []string{"HTTP_PROXY", "POD_NAME"}) {
					return fmt.Sprintf("env %v", got)
				}
				return ""
			},
		},
		{
			name: "env var added by a client-side apply",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-client-side-apply", ns, suffix, iDeployment, smp,
					`{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}},`+
						`"spec":{"template":{"spec":{"containers":[{"name":"machineset-controller","env":[{"name":"EVIL","value":"1"}]}]}}}}`)
			},
			writes: 1, i: iDeployment,
			reverted: func(l, w client.Object) string {
				if got := envNames(dep(l)); !slices.Equal(got, []string{"HTTP_PROXY", "POD_NAME"}) {
					return fmt.Sprintf("env %v", got)
				}
				if _, ok := l.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"]; !ok {
					return "the metadata annotation of the other manager was removed"
				}
				return ""
			},
		},
		{
			name: "env var duplicated with another value",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-patch", ns, suffix, iDeployment, jsonPatch,
					`[{"op":"add","path":"/spec/template/spec/containers/0/env/-","value":{"name":"HTTP_PROXY","value":"http://evil:3128"}}]`)
			},
			writes: 1, i: iDeployment,
			reverted: func(l, w client.Object) string {
				env := podSpec(l).Containers[0].Env
				if got := envNames(dep(l)); !slices.Equal(got, []string{"HTTP_PROXY", "POD_NAME"}) || env[0].Value != "http://proxy:3128" {
					return fmt.Sprintf("env %v", env)
				}
				return ""
			},
		},
		{
			name: "env var value changed",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-patch", ns, suffix, iDeployment, smp,
					`{"spec":{"template":{"spec":{"containers":[{"name":"machineset-controller","env":[{"name":"HTTP_PROXY","value":"http://evil:3128"}]}]}}}}`)
			},
			writes: 1, i: iDeployment,
			reverted: func(l, w client.Object) string {
				if got := podSpec(l).Containers[0].Env[0]; got.Name != "HTTP_PROXY" || got.Value != "http://proxy:3128" {
					return fmt.Sprintf("env %v", got)
				}
				return ""
			},
		},
		{
			name: "env var removed",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-patch", ns, suffix, iDeployment, jsonPatch,
					`[{"op":"remove","path":"/spec/template/spec/containers/0/env/0"}]`)
			},
			writes: 1, i: iDeployment,
			reverted: func(l, w client.Object) string {
				if got := envNames(dep(l)); !slices.Equal(got, []string{"HTTP_PROXY", "POD_NAME"}) {
					return fmt.Sprintf("env %v", got)
				}
				return ""
			},
		},
		{
			name: "volume and volume mount added",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-patch", ns, suffix, iDeployment, smp,
					`{"spec":{"template":{"spec":{"volumes":[{"name":"host","hostPath":{"path":"/"}}],`+
						`"containers":[{"name":"machineset-controller","volumeMounts":[{"name":"host","mountPath":"/host"}]}]}}}}`)
			},
			writes: 1, i: iDeployment,
			reverted: func(l, w client.Object) string {
				ps := podSpec(l)
				if len(ps.Volumes) != 2 || len(ps.Containers[0].VolumeMounts) != 1 {
					return fmt.Sprintf("volumes %v mounts %v", ps.Volumes, ps.Containers[0].VolumeMounts)
				}
				return ""
			},
		},
		{
			name: "toleration added",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-patch", ns, suffix, iDeployment, jsonPatch,
					`[{"op":"add","path":"/spec/template/spec/tolerations/-","value":{"operator":"Exists"}}]`)
			},
			writes: 1, i: iDeployment,
			reverted: func(l, w client.Object) string {
				if got, want := podSpec(l).Tolerations, podSpec(w).Tolerations; !equality.Semantic.DeepEqual(got, want) {
					return fmt.Sprintf("tolerations %v", got)
				}
				return ""
			},
		},
		{
			name: "container port added",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-patch", ns, suffix, iDeployment, smp,
					`{"spec":{"template":{"spec":{"containers":[{"name":"machineset-controller","ports":[{"containerPort":9999}]}]}}}}`)
			},
			writes: 1, i: iDeployment,
			reverted: func(l, w client.Object) string {
				if ports := podSpec(l).Containers[0].Ports; len(ports) != 1 || ports[0].ContainerPort != 8443 {
					return fmt.Sprintf("ports %v", ports)
				}
				return ""
			},
		},
		{
			name: "server default changed",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-patch", ns, suffix, iDeployment, smp,
					`{"spec":{"revisionHistoryLimit":1,"template":{"spec":{"containers":[{"name":"machineset-controller","imagePullPolicy":"Always"}]}}}}`)
			},
			writes: 1, i: iDeployment,
			reverted: func(l, w client.Object) string {
				d := dep(l)
				if p := d.Spec.Template.Spec.Containers[0].ImagePullPolicy; p != corev1.PullIfNotPresent {
					return fmt.Sprintf("imagePullPolicy %s", p)
				}
				if r := d.Spec.RevisionHistoryLimit; r == nil || *r != 10 {
					return fmt.Sprintf("revisionHistoryLimit %v", r)
				}
				return ""
			},
		},
		{
			name: "pod template annotation added (kubectl rollout restart)",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-rollout", ns, suffix, iDeployment, smp,
					`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"2026-01-01T00:00:00Z"}}}}}`)
			},
			writes: 1, i: iDeployment,
			reverted: func(l, w client.Object) string {
				if got, want := dep(l).Spec.Template.Annotations, dep(w).Spec.Template.Annotations; !equality.Semantic.DeepEqual(got, want) {
					return fmt.Sprintf("pod template annotations %v", got)
				}
				return ""
			},
		},
		{
			name: "replicas scaled",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-scale", ns, suffix, iDeployment, merge, `{"spec":{"replicas":3}}`)
			},
			writes: 1, i: iDeployment,
			reverted: func(l, w client.Object) string {
				if r := dep(l).Spec.Replicas; *r != 1 {
					return fmt.Sprintf("replicas %d", *r)
				}
				return ""
			},
		},
		{
			name: "own label changed",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-label", ns, suffix, iDeployment, merge, `{"metadata":{"labels":{"k8s-app":"evil"}}}`)
			},
			writes: 1, i: iDeployment,
			reverted: func(l, w client.Object) string {
				if v := l.GetLabels()["k8s-app"]; v != "controller" {
					return "label k8s-app=" + v
				}
				return ""
			},
		},
		{
			name: "RBAC rule added",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-patch", ns, suffix, iClusterRole, jsonPatch,
					`[{"op":"add","path":"/rules/-","value":{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}}]`)
			},
			writes: 1, i: iClusterRole,
			reverted: func(l, w client.Object) string {
				if got, want := l.(*rbacv1.ClusterRole).Rules, w.(*rbacv1.ClusterRole).Rules; !equality.Semantic.DeepEqual(got, want) {
					return fmt.Sprintf("rules %v", got)
				}
				return ""
			},
		},
		{
			name: "RBAC rule verbs widened",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-edit", ns, suffix, iClusterRole, jsonPatch,
					`[{"op":"add","path":"/rules/1/verbs/-","value":"delete"}]`)
			},
			writes: 1, i: iClusterRole,
			reverted: func(l, w client.Object) string {
				if got, want := l.(*rbacv1.ClusterRole).Rules, w.(*rbacv1.ClusterRole).Rules; !equality.Semantic.DeepEqual(got, want) {
					return fmt.Sprintf("rules %v", got)
				}
				return ""
			},
		},
		{
			name: "ClusterRoleBinding subject added",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-patch", ns, suffix, iClusterRoleBinding, jsonPatch,
					`[{"op":"add","path":"/subjects/-","value":{"kind":"ServiceAccount","namespace":"default","name":"default"}}]`)
			},
			writes: 1, i: iClusterRoleBinding,
			reverted: func(l, w client.Object) string {
				if got, want := l.(*rbacv1.ClusterRoleBinding).Subjects, w.(*rbacv1.ClusterRoleBinding).Subjects; !equality.Semantic.DeepEqual(got, want) {
					return fmt.Sprintf("subjects %v", got)
				}
				return ""
			},
		},
		{
			name: "webhook removed",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-patch", ns, suffix, iWebhooks, jsonPatch, `[{"op":"remove","path":"/webhooks/1"}]`)
			},
			writes: 1, i: iWebhooks,
			reverted: func(l, w client.Object) string {
				if n := len(l.(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks); n != 2 {
					return fmt.Sprintf("%d webhooks", n)
				}
				return ""
			},
		},
		{
			name: "webhook added",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-patch", ns, suffix, iWebhooks, jsonPatch,
					`[{"op":"add","path":"/webhooks/-","value":{"name":"evil.example.com","clientConfig":{"url":"https://evil.example.com"},`+
						`"rules":[{"operations":["*"],"apiGroups":["*"],"apiVersions":["*"],"resources":["*"]}],`+
						`"failurePolicy":"Ignore","sideEffects":"None","admissionReviewVersions":["v1"]}}]`)
			},
			writes: 1, i: iWebhooks,
			reverted: func(l, w client.Object) string {
				if n := len(l.(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks); n != 2 {
					return fmt.Sprintf("%d webhooks", n)
				}
				return ""
			},
		},
		{
			name: "Service port changed",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-patch", ns, suffix, iService, jsonPatch, `[{"op":"replace","path":"/spec/ports/0/port","value":4443}]`)
			},
			// The port is a key of the ports list: our port is gone (applied
			// back) and another one was added (removed).
			writes: 2, i: iService,
			reverted: func(l, w client.Object) string {
				ports := l.(*corev1.Service).Spec.Ports
				if len(ports) != 2 || !slices.ContainsFunc(ports, func(p corev1.ServicePort) bool { return p.Port == 443 }) {
					return fmt.Sprintf("ports %v", ports)
				}
				return ""
			},
		},
		{
			name: "Service targetPort changed",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-patch", ns, suffix, iService, jsonPatch, `[{"op":"replace","path":"/spec/ports/0/targetPort","value":9999}]`)
			},
			writes: 1, i: iService,
			reverted: func(l, w client.Object) string {
				if tp := l.(*corev1.Service).Spec.Ports[0].TargetPort; tp != intstr.FromString("webhook-server") {
					return fmt.Sprintf("targetPort %v", tp)
				}
				return ""
			},
		},
		{
			name: "Service port added",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-patch", ns, suffix, iService, jsonPatch, `[{"op":"add","path":"/spec/ports/-","value":{"name":"evil","port":9999}}]`)
			},
			writes: 1, i: iService,
			reverted: func(l, w client.Object) string {
				if ports := l.(*corev1.Service).Spec.Ports; len(ports) != 2 {
					return fmt.Sprintf("ports %v", ports)
				}
				return ""
			},
		},
		{
			name: "ConfigMap key added",
			edit: func(t *testing.T, ctx context.Context, ns, suffix string) {
				patchAs(t, ctx, "kubectl-patch", ns, suffix, iConfigMap, merge, `{"data":{"evil":"1"}}`)
			},
			writes: 1, i: iConfigMap,
			reverted: func(l, w client.Object) string {
				if got, want := l.(*corev1.ConfigMap).Data, w.(*corev1.ConfigMap).Data; !equality.Semantic.DeepEqual(got, want) {
					return fmt.Sprintf("data %v", got)
				}
				return ""
			},
		},
	}
	for n, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			ns := createNamespace(t, ctx, "drift")
			suffix := fmt.Sprintf("%s-%d", ns, n)
			cleanupClusterScoped(t, objects(ns, suffix))
			a, ct := countingApplier(t)
			mustApply(t, ctx, a, objects(ns, suffix))
			ct.Reset()

			tc.edit(t, ctx, ns, suffix)
			if msg := tc.reverted(live(t, ctx, ns, suffix, tc.i), want(ns, suffix)[tc.i]); msg == "" {
				t.Fatal("the edit changed nothing")
			}
			res := mustApply(t, ctx, a, objects(ns, suffix))
			if len(res.Applied) != 1 {
				t.Errorf("applied %v, want only the edited object", refs(res.Applied))
			}
			expectWrites(t, ct, tc.writes, "revert")
			if msg := tc.reverted(live(t, ctx, ns, suffix, tc.i), want(ns, suffix)[tc.i]); msg != "" {
				t.Errorf("not reverted: %s", msg)
			}
			mustApply(t, ctx, a, objects(ns, suffix))
			expectWrites(t, ct, 0, "after the revert")
			a2, ct2 := countingApplier(t)
			mustApply(t, ctx, a2, objects(ns, suffix))
			expectWrites(t, ct2, 0, "restart after the revert")
		})
	}
}

// TestOthersMayAdd: what other components legitimately add is kept without
// a write: labels and annotations on the objects' metadata, a CA bundle a
// CA injector puts into a webhook, pull secrets added to a ServiceAccount,
// and status.
func TestOthersMayAdd(t *testing.T) {
	ctx := testContext(t)
	ns := createNamespace(t, ctx, "others")
	cleanupClusterScoped(t, objects(ns, ns))
	a, ct := countingApplier(t)
	mustApply(t, ctx, a, objects(ns, ns))

	meta := `{"metadata":{"labels":{"team":"infra"},"annotations":{"note":"by hand"}}}`
	for _, i := range []int{iDeployment, iConfigMap, iClusterRole, iWebhooks, iService, iClusterRoleBinding, iServiceAccount} {
		patchAs(t, ctx, "kubectl-label", ns, ns, i, types.MergePatchType, meta)
	}
	patchAs(t, ctx, "service-ca", ns, ns, iWebhooks, types.JSONPatchType,
		`[{"op":"add","path":"/webhooks/0/clientConfig/caBundle","value":"Y2EK"}]`)
	patchAs(t, ctx, "openshift-controller-manager", ns, ns, iServiceAccount, types.MergePatchType,
		`{"imagePullSecrets":[{"name":"machine-api-controllers-dockercfg-x"}]}`)
	d := live(t, ctx, ns, ns, iDeployment).(*appsv1.Deployment)
	d.Status.ObservedGeneration = d.Generation
	d.Status.Replicas = 1
	if err := env.Client.Status().Update(ctx, d, client.FieldOwner("kube-controller-manager")); err != nil {
		t.Fatal(err)
	}

	ct.Reset()
	res := mustApply(t, ctx, a, objects(ns, ns))
	if len(res.Applied) != 0 {
		t.Errorf("applied %v", refs(res.Applied))
	}
	expectWrites(t, ct, 0, "others' additions")
	for i := range nObjects {
		l := live(t, ctx, ns, ns, i)
		if l.GetLabels()["team"] != "infra" || l.GetAnnotations()["note"] != "by hand" {
			t.Errorf("%T %s: others' metadata lost: %v %v", l, l.GetName(), l.GetLabels(), l.GetAnnotations())
		}
	}
	if wh := live(t, ctx, ns, ns, iWebhooks).(*admissionregistrationv1.ValidatingWebhookConfiguration); string(wh.Webhooks[0].ClientConfig.CABundle) != "ca\n" {
		t.Errorf("injected caBundle lost: %q", wh.Webhooks[0].ClientConfig.CABundle)
	}
	if sa := live(t, ctx, ns, ns, iServiceAccount).(*corev1.ServiceAccount); len(sa.ImagePullSecrets) != 1 {
		t.Errorf("imagePullSecrets lost: %v", sa.ImagePullSecrets)
	}

	// A real drift next to them is reverted without touching them.
	patchAs(t, ctx, "kubectl-patch", ns, ns, iDeployment, types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"evil","image":"evil:1"}]}}}}`)
	mustApply(t, ctx, a, objects(ns, ns))
	expectWrites(t, ct, 1, "revert next to others' metadata")
	d = live(t, ctx, ns, ns, iDeployment).(*appsv1.Deployment)
	if len(d.Spec.Template.Spec.Containers) != 1 || d.Labels["team"] != "infra" || d.Annotations["note"] != "by hand" || d.Status.Replicas != 1 {
		t.Errorf("after the revert: containers %v labels %v annotations %v status %+v",
			containerNames(d.Spec.Template.Spec.Containers), d.Labels, d.Annotations, d.Status)
	}
	mustApply(t, ctx, a, objects(ns, ns))
	expectWrites(t, ct, 0, "after the revert")
}

// TestServerDefaultsCauseNoWrites: the API server fills in defaults in every
// applied object; they are not the operator's fields, not another
// manager's either, and cause no write. Neither does another manager that
// sends a default value unchanged.
func TestServerDefaultsCauseNoWrites(t *testing.T) {
	ctx := testContext(t)
	ns := createNamespace(t, ctx, "defaults")
	cleanupClusterScoped(t, objects(ns, ns))
	a, ct := countingApplier(t)
	mustApply(t, ctx, a, objects(ns, ns))

	d := live(t, ctx, ns, ns, iDeployment).(*appsv1.Deployment)
	c := d.Spec.Template.Spec.Containers[0]
	svc := live(t, ctx, ns, ns, iService).(*corev1.Service)
	wh := live(t, ctx, ns, ns, iWebhooks).(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks[0]
	for what, ok := range map[string]bool{
		"terminationMessagePath":        c.TerminationMessagePath != "",
		"imagePullPolicy":               c.ImagePullPolicy != "",
		"container port protocol":       c.Ports[0].Protocol == corev1.ProtocolTCP,
		"probe timeoutSeconds":          c.ReadinessProbe.TimeoutSeconds != 0,
		"emptyDir volume":               d.Spec.Template.Spec.Volumes[1].EmptyDir != nil,
		"revisionHistoryLimit":          d.Spec.RevisionHistoryLimit != nil,
		"progressDeadlineSeconds":       d.Spec.ProgressDeadlineSeconds != nil,
		"strategy.rollingUpdate":        d.Spec.Strategy.RollingUpdate != nil,
		"dnsPolicy":                     d.Spec.Template.Spec.DNSPolicy != "",
		"clusterIP":                     svc.Spec.ClusterIP != "",
		"sessionAffinity":               svc.Spec.SessionAffinity != "",
		"service port protocol":         svc.Spec.Ports[1].Protocol == corev1.ProtocolTCP,
		"service targetPort":            svc.Spec.Ports[1].TargetPort == intstr.FromInt32(8441),
		"webhook timeoutSeconds":        wh.TimeoutSeconds != nil,
		"webhook matchPolicy":           wh.MatchPolicy != nil,
		"webhook namespaceSelector":     wh.NamespaceSelector != nil,
		"webhook objectSelector":        wh.ObjectSelector != nil,
		"webhook clientConfig port":     wh.ClientConfig.Service.Port != nil,
		"webhook rule scope":            wh.Rules[0].Scope != nil,
		"service internalTrafficPolicy": svc.Spec.InternalTrafficPolicy != nil,
	} {
		if !ok {
			t.Errorf("the server did not default %s", what)
		}
	}

	ct.Reset()
	for range 2 {
		mustApply(t, ctx, a, objects(ns, ns))
	}
	expectWrites(t, ct, 0, "server defaults")

	// Another manager sends defaults with their default values (as a
	// client-side apply of a full manifest does): nothing changes, so the
	// server records no ownership, and nothing is written.
	patchAs(t, ctx, "kubectl-client-side-apply", ns, ns, iDeployment, types.StrategicMergePatchType,
		`{"spec":{"revisionHistoryLimit":10,"template":{"spec":{"dnsPolicy":"ClusterFirst","containers":[{"name":"machineset-controller","imagePullPolicy":"IfNotPresent","terminationMessagePath":"/dev/termination-log"}]}}}}`)
	patchAs(t, ctx, "kubectl-client-side-apply", ns, ns, iService, types.MergePatchType, `{"spec":{"sessionAffinity":"None"}}`)
	ct.Reset()
	mustApply(t, ctx, a, objects(ns, ns))
	expectWrites(t, ct, 0, "defaults sent again by another manager")
}

// TestAdoptsObjectsCreatedByOthers: an object created with a plain create by
// another manager (an older operator, kubectl create) has every server
// default owned by that manager, and fields the operator does not render.
// The first Apply takes over our fields and removes the rest, the defaults
// come back owned by nobody, and the object is stable afterwards.
func TestAdoptsObjectsCreatedByOthers(t *testing.T) {
	ctx := testContext(t)
	ns := createNamespace(t, ctx, "adopt")
	cleanupClusterScoped(t, objects(ns, ns))
	old := objects(ns, ns)
	d := old[iDeployment].(*appsv1.Deployment)
	d.Spec.Template.Spec.Containers[0].Env = append(d.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "OLD", Value: "1"})
	for _, o := range old {
		if err := env.Client.Create(ctx, o, client.FieldOwner("machine-api-operator-old")); err != nil {
			t.Fatal(err)
		}
	}

	a, ct := countingApplier(t)
	res := mustApply(t, ctx, a, objects(ns, ns))
	if len(res.Created) != 0 {
		t.Errorf("created %v", refs(res.Created))
	}
	t.Logf("adoption: %d writes (%v)", ct.Writes(), ct.WriteRequests())
	ct.Reset()
	mustApply(t, ctx, a, objects(ns, ns))
	expectWrites(t, ct, 0, "after adoption")

	d = live(t, ctx, ns, ns, iDeployment).(*appsv1.Deployment)
	if got := envNames(d); !slices.Equal(got, []string{"HTTP_PROXY", "POD_NAME"}) {
		t.Errorf("env %v", got)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.TerminationMessagePath == "" || c.ImagePullPolicy == "" || d.Spec.RevisionHistoryLimit == nil {
		t.Errorf("defaults lost: %+v", c)
	}
	// The old manager keeps the fields it shares with us (same values) and
	// loses the others: the defaults and the env var we do not render.
	for _, e := range d.ManagedFields {
		if e.Manager != "machine-api-operator-old" || e.FieldsV1 == nil {
			continue
		}
		for _, f := range []string{`"f:terminationMessagePath"`, `"f:revisionHistoryLimit"`, `{"name":"OLD"}`} {
			if raw := e.FieldsV1.GetRawBytes(); bytes.Contains(raw, []byte(f)) || bytes.Contains(raw, []byte(strings.ReplaceAll(f, `"`, `\"`))) {
				t.Errorf("the old manager still owns %s: %s", f, raw)
			}
		}
	}
}

// staleReader returns a fixed old copy of one object, as a lagging cache
// would.
type staleReader struct {
	client.Reader
	stale client.Object
}

func (r staleReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if key == client.ObjectKeyFromObject(r.stale) {
		if d, ok := obj.(*appsv1.Deployment); ok {
			r.stale.(*appsv1.Deployment).DeepCopyInto(d)
			return nil
		}
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

// TestRemovalRetriesOnConflict: removing others' fields is an update guarded
// by the resourceVersion read. When the reader lags behind (or a controller
// wrote status meanwhile), the update conflicts; Apply reads the object again
// and retries, without failing.
func TestRemovalRetriesOnConflict(t *testing.T) {
	ctx := testContext(t)
	ns := createNamespace(t, ctx, "race")
	cleanupClusterScoped(t, objects(ns, ns))
	a, act := countingApplier(t)
	mustApply(t, ctx, a, objects(ns, ns))
	patchAs(t, ctx, "kubectl-patch", ns, ns, iDeployment, types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"machineset-controller","env":[{"name":"EVIL","value":"1"}]}]}}}}`)
	stale := live(t, ctx, ns, ns, iDeployment)
	patchAs(t, ctx, "kubectl-label", ns, ns, iDeployment, types.MergePatchType, `{"metadata":{"labels":{"team":"infra"}}}`)

	ct := applytest.NewCountingTransport()
	c, err := client.New(ct.Install(env.Config), client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	lagging := apply.New(apply.Options{Client: c, Reader: staleReader{Reader: c, stale: stale}, Owner: testOwner})
	res, err := lagging.Apply(ctx, objects(ns, ns))
	if err != nil {
		t.Fatalf("a conflict is not an error: %v", err)
	}
	if len(res.Applied) != 1 {
		t.Errorf("applied %v", refs(res.Applied))
	}
	// One update conflicted, one succeeded.
	expectWrites(t, ct, 2, "revert from a stale read")
	d := live(t, ctx, ns, ns, iDeployment).(*appsv1.Deployment)
	if got := envNames(d); !slices.Equal(got, []string{"HTTP_PROXY", "POD_NAME"}) || d.Labels["team"] != "infra" {
		t.Errorf("env %v labels %v", got, d.Labels)
	}
	act.Reset()
	mustApply(t, ctx, a, objects(ns, ns))
	expectWrites(t, act, 0, "after the revert")
}

// TestCustomResourceDefinitions: CRDs are typed with the apiextensions
// schema. One created by someone else (as testenv or an installer does) is
// adopted and then stable; a foreign addition to it is reverted.
func TestCustomResourceDefinitions(t *testing.T) {
	ctx := testContext(t)
	ns := createNamespace(t, ctx, "crd")
	group := ns + ".example.com"
	old := crd(group)
	if err := env.Client.Create(ctx, old, client.FieldOwner("installer")); err != nil {
		t.Fatal(err)
	}
	cleanupClusterScoped(t, []client.Object{crd(group)})
	// The API server's naming controller writes the CRD's status after each
	// change, which races with our removal update (a conflict is left to the
	// next sync, which the status event brings in the operator). Let it
	// settle first, to count the writes exactly.
	settled := func(shortNames ...string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			o := crd(group)
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
				t.Fatal(err)
			}
			if slices.Equal(o.Status.AcceptedNames.ShortNames, shortNames) && slices.ContainsFunc(o.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
				return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
			}) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("CRD status did not settle: %+v", o.Status)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	settled()

	a, ct := countingApplier(t)
	mustApply(t, ctx, a, []client.Object{crd(group)})
	t.Logf("adoption: %v", ct.WriteRequests())
	ct.Reset()
	mustApply(t, ctx, a, []client.Object{crd(group)})
	expectWrites(t, ct, 0, "after adoption")

	o := crd(group)
	if err := env.Client.Patch(ctx, o, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"names":{"shortNames":["evil"]}}}`)), client.FieldOwner("kubectl-patch")); err != nil {
		t.Fatal(err)
	}
	settled("evil")
	mustApply(t, ctx, a, []client.Object{crd(group)})
	expectWrites(t, ct, 1, "shortNames added")
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
		t.Fatal(err)
	}
	if len(o.Spec.Names.ShortNames) != 0 {
		t.Errorf("shortNames not reverted: %v", o.Spec.Names.ShortNames)
	}
	mustApply(t, ctx, a, []client.Object{crd(group)})
	expectWrites(t, ct, 0, "after the revert")
}
