//go:build e2e

package e2e

import (
	"context"
	"fmt"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/types"
	"os"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/render"
)

// operandNamespace is where the operator runs its operands ($E2E_NAMESPACE
// overrides the default).
func operandNamespace() string {
	if ns := os.Getenv("E2E_NAMESPACE"); ns != "" {
		return ns
	}
	return config.DefaultNamespace
}

func clusterOperator(ctx context.Context) (*configv1.ClusterOperator, error) {
	co := &configv1.ClusterOperator{}
	return co, cluster.Get(ctx, client.ObjectKey{Name: config.ClusterOperatorName}, co)
}

func condition(co *configv1.ClusterOperator, t configv1.ClusterStatusConditionType) *configv1.ClusterOperatorStatusCondition {
	for i := range co.Status.Conditions {
		if co.Status.Conditions[i].Type == t {
			return &co.Status.Conditions[i]
		}
	}
	return nil
}

// TestClusterOperatorAvailable: the operator reports Available at the release
// version, not Progressing, not Degraded. $RELEASE_VERSION, when set, is the
// version expected.
func TestClusterOperatorAvailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	want := os.Getenv("RELEASE_VERSION")
	waitFor(ctx, t, "clusteroperator machine-api Available, not Progressing, not Degraded", func(ctx context.Context) (bool, error) {
		co, err := clusterOperator(ctx)
		if err != nil {
			return false, err
		}
		a, p, d := condition(co, configv1.OperatorAvailable), condition(co, configv1.OperatorProgressing), condition(co, configv1.OperatorDegraded)
		if a == nil || p == nil || d == nil {
			return false, nil
		}
		return a.Status == configv1.ConditionTrue && p.Status == configv1.ConditionFalse && d.Status == configv1.ConditionFalse, nil
	})
	co, err := clusterOperator(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(co.Status.Versions) == 0 {
		t.Fatalf("status.versions is empty")
	}
	if want != "" && (co.Status.Versions[0].Name != "operator" || co.Status.Versions[0].Version != want) {
		t.Fatalf("status.versions = %v, want operator %s", co.Status.Versions, want)
	}
	if u := condition(co, configv1.OperatorUpgradeable); u == nil || u.Status != configv1.ConditionTrue {
		t.Errorf("Upgradeable = %+v, want True", u)
	}
	if len(co.Status.RelatedObjects) == 0 {
		t.Errorf("relatedObjects is empty")
	}
}

// expectedConfig builds, from the cluster's own inputs, the config the
// operator should be running with.
func expectedConfig(ctx context.Context, t *testing.T) config.Config {
	t.Helper()
	in := config.Inputs{Namespace: operandNamespace(), ReleaseVersion: os.Getenv("RELEASE_VERSION")}
	cm := &corev1.ConfigMap{}
	if err := cluster.Get(ctx, client.ObjectKey{Namespace: operandNamespace(), Name: config.ImagesConfigMapName}, cm); err != nil {
		t.Fatalf("reading the images ConfigMap: %v", err)
	}
	in.Images, in.ImagesErr = config.ParseImages([]byte(cm.Data[config.ImagesConfigMapKey]))
	infra := &configv1.Infrastructure{}
	if err := cluster.Get(ctx, client.ObjectKey{Name: config.ClusterConfigName}, infra); err != nil {
		t.Fatalf("reading the Infrastructure: %v", err)
	}
	in.Infrastructure = infra
	fg := &configv1.FeatureGate{}
	if err := cluster.Get(ctx, client.ObjectKey{Name: config.ClusterConfigName}, fg); err == nil {
		in.FeatureGate = fg
	}
	cfg, err := config.Build(in)
	if err != nil {
		t.Fatalf("the cluster's inputs are invalid: %v", err)
	}
	return cfg
}

// TestOperandMatchesPlatform: the operand Deployment and DaemonSet are the
// ones the platform calls for.
func TestOperandMatchesPlatform(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := expectedConfig(ctx, t)
	d := &appsv1.Deployment{}
	err := cluster.Get(ctx, client.ObjectKey{Namespace: cfg.Namespace, Name: config.OperandDeploymentName}, d)
	if cfg.NoOp {
		if !apierrors.IsNotFound(err) {
			t.Fatalf("NoOp platform %s, but the operand Deployment exists (err %v)", cfg.PlatformType, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("getting the operand Deployment: %v", err)
	}
	images := map[string]string{}
	for _, c := range d.Spec.Template.Spec.Containers {
		images[c.Name] = c.Image
	}
	if images[render.MachineContainer] != cfg.ProviderImage {
		t.Errorf("machine-controller image %q, want %q for platform %s", images[render.MachineContainer], cfg.ProviderImage, cfg.PlatformType)
	}
	for _, name := range []string{render.MachineSetContainer, render.NodeLinkContainer} {
		if images[name] != cfg.Images.MachineAPIOperator {
			t.Errorf("%s image %q, want %q", name, images[name], cfg.Images.MachineAPIOperator)
		}
	}
	if _, ok := images[render.MachineHealthCheckContainer]; ok != cfg.MachineHealthCheckEnabled {
		t.Errorf("MHC container present=%v, want %v", ok, cfg.MachineHealthCheckEnabled)
	}
	ds := &appsv1.DaemonSet{}
	err = cluster.Get(ctx, client.ObjectKey{Namespace: cfg.Namespace, Name: config.TerminationHandlerName}, ds)
	if wantDS := cfg.TerminationHandlerImage != ""; wantDS != (err == nil) {
		t.Errorf("termination handler present=%v (err %v), want %v on %s", err == nil, err, wantDS, cfg.PlatformType)
	}
}

// TestOperandDriftReverted edits and deletes operand objects and expects the
// operator to put them back.
func TestOperandDriftReverted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := expectedConfig(ctx, t)
	if cfg.NoOp {
		t.Skipf("platform %s is NoOp: no operand to edit", cfg.PlatformType)
	}
	key := client.ObjectKey{Namespace: cfg.Namespace, Name: config.OperandDeploymentName}
	d := &appsv1.Deployment{}
	if err := cluster.Get(ctx, key, d); err != nil {
		t.Fatal(err)
	}
	for i := range d.Spec.Template.Spec.Containers {
		if d.Spec.Template.Spec.Containers[i].Name == render.MachineContainer {
			d.Spec.Template.Spec.Containers[i].Image = "example.invalid/e2e-tampered:1"
		}
	}
	if err := cluster.Update(ctx, d, client.FieldOwner("e2e")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitFor(ctx, t, "edited image reverted", func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, key, d); err != nil {
			return false, err
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name == render.MachineContainer {
				return c.Image == cfg.ProviderImage, nil
			}
		}
		return false, nil
	})
	t.Logf("edit reverted in %s", time.Since(start).Round(time.Millisecond))

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: cfg.Namespace, Name: config.WebhookServiceName}}
	if err := cluster.Get(ctx, client.ObjectKeyFromObject(svc), svc); err != nil {
		t.Fatal(err)
	}
	uid := svc.UID
	if err := cluster.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	waitFor(ctx, t, "deleted webhook Service recreated", func(ctx context.Context) (bool, error) {
		err := cluster.Get(ctx, client.ObjectKeyFromObject(svc), svc)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && svc.UID != uid, err
	})
	t.Logf("deleted Service recreated in %s", time.Since(start).Round(time.Millisecond))

	// Afterwards the operator settles back to Available and not Progressing.
	waitFor(ctx, t, "clusteroperator settles", func(ctx context.Context) (bool, error) {
		co, err := clusterOperator(ctx)
		if err != nil {
			return false, err
		}
		a, p := condition(co, configv1.OperatorAvailable), condition(co, configv1.OperatorProgressing)
		return a != nil && p != nil && a.Status == configv1.ConditionTrue && p.Status == configv1.ConditionFalse &&
			!strings.Contains(a.Message, "NoOp"), nil
	})
}

// TestOperandAdditionsReverted: additions others make to what the operator
// renders are reverted too, not only changed values: a container, an arg and
// an env var added to the operand's pod template, and a rule granting
// everything added to the operand's ClusterRole. Labels others add to the
// Deployment's metadata are kept.
func TestOperandAdditionsReverted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := expectedConfig(ctx, t)
	if cfg.NoOp {
		t.Skipf("platform %s is NoOp: no operand to edit", cfg.PlatformType)
	}
	key := client.ObjectKey{Namespace: cfg.Namespace, Name: config.OperandDeploymentName}
	d := &appsv1.Deployment{}
	if err := cluster.Get(ctx, key, d); err != nil {
		t.Fatal(err)
	}
	machine := -1
	for i, c := range d.Spec.Template.Spec.Containers {
		if c.Name == render.MachineContainer {
			machine = i
		}
	}
	if machine < 0 {
		t.Fatalf("no container %s in %s", render.MachineContainer, key)
	}
	containers := len(d.Spec.Template.Spec.Containers)
	args := len(d.Spec.Template.Spec.Containers[machine].Args)
	patch := fmt.Sprintf(`[
		{"op":"add","path":"/metadata/labels/e2e-kept","value":"yes"},
		{"op":"add","path":"/spec/template/spec/containers/-","value":{"name":"evil","image":"example.invalid/evil:1"}},
		{"op":"add","path":"/spec/template/spec/containers/%[1]d/args/-","value":"--evil"},
		{"op":"add","path":"/spec/template/spec/containers/%[1]d/env/-","value":{"name":"EVIL","value":"1"}}]`, machine)
	if err := cluster.Patch(ctx, d, client.RawPatch(types.JSONPatchType, []byte(patch)), client.FieldOwner("e2e")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitFor(ctx, t, "added container, arg and env var removed", func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, key, d); err != nil {
			return false, err
		}
		spec := d.Spec.Template.Spec
		if len(spec.Containers) != containers || len(spec.Containers[machine].Args) != args {
			return false, nil
		}
		for _, e := range spec.Containers[machine].Env {
			if e.Name == "EVIL" {
				return false, nil
			}
		}
		return true, nil
	})
	t.Logf("additions to the Deployment reverted in %s", time.Since(start).Round(time.Millisecond))
	if d.Labels["e2e-kept"] != "yes" {
		t.Errorf("the label others added to the Deployment's metadata was removed: %v", d.Labels)
	}

	role := &rbacv1.ClusterRole{}
	roleKey := client.ObjectKey{Name: render.ControllersServiceAccountName} // the ClusterRole is named after the ServiceAccount
	if err := cluster.Get(ctx, roleKey, role); err != nil {
		t.Fatal(err)
	}
	rules := len(role.Rules)
	escalation := `[{"op":"add","path":"/rules/-","value":{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}}]`
	if err := cluster.Patch(ctx, role, client.RawPatch(types.JSONPatchType, []byte(escalation)), client.FieldOwner("e2e")); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	waitFor(ctx, t, "the rule granting everything removed from clusterrole "+roleKey.Name, func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, roleKey, role); err != nil {
			return false, err
		}
		for _, r := range role.Rules {
			if len(r.Verbs) == 1 && r.Verbs[0] == "*" && len(r.Resources) == 1 && r.Resources[0] == "*" {
				return false, nil
			}
		}
		return len(role.Rules) == rules, nil
	})
	t.Logf("added ClusterRole rule reverted in %s", time.Since(start).Round(time.Millisecond))
}
