//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

// platformRow is what the operator deploys on a platform (DESIGN.md §2),
// written out here rather than derived from the operator's own code.
type platformRow struct {
	// providerImageKey is the images.json key of the machine-controller
	// image; empty when nothing is deployed.
	providerImageKey string
	// terminationHandler: the termination-handler DaemonSet runs, with the
	// provider image (platforms with spot or preemptible instances).
	terminationHandler bool
}

// platformTable is keyed by status.platformStatus.type, or by
// "External/<platformName>". A platform that is not here (None, another
// External platform, an unknown one) deploys nothing.
var platformTable = map[string]platformRow{
	"AWS":               {providerImageKey: "clusterAPIControllerAWS", terminationHandler: true},
	"Azure":             {providerImageKey: "clusterAPIControllerAzure", terminationHandler: true},
	"GCP":               {providerImageKey: "clusterAPIControllerGCP", terminationHandler: true},
	"OpenStack":         {providerImageKey: "clusterAPIControllerOpenStack"},
	"BareMetal":         {providerImageKey: "clusterAPIControllerBareMetal"},
	"IBMCloud":          {providerImageKey: "clusterAPIControllerIBMCloud"},
	"PowerVS":           {providerImageKey: "clusterAPIControllerPowerVS"},
	"Nutanix":           {providerImageKey: "clusterAPIControllerNutanix"},
	"External/kubemark": {providerImageKey: "clusterAPIControllerKubemark"},
	// VSphere: this project's vSphere provider, from the key OpenShift's
	// payload points at the operator's own image.
	"VSphere": {providerImageKey: "clusterAPIControllerVSphere"},
	"None":    {},
}

// expected is what the operator must be running on the cluster under test.
type expected struct {
	namespace string
	platform  string // a platformTable key
	deployed  bool
	// Images from images.json.
	providerImage, operatorImage, terminationHandlerImage string
	machineHealthCheck                                    bool
}

// expectedOperand reads the cluster's inputs (Infrastructure, images.json,
// FeatureGate) and looks the platform up in platformTable.
func expectedOperand(ctx context.Context, t *testing.T) expected {
	t.Helper()
	e := expected{namespace: operandNamespace()}
	infra := &configv1.Infrastructure{}
	if err := cluster.Get(ctx, client.ObjectKey{Name: config.ClusterConfigName}, infra); err != nil {
		t.Fatalf("reading the Infrastructure: %v", err)
	}
	if infra.Status.PlatformStatus == nil {
		t.Fatalf("the Infrastructure has no status.platformStatus")
	}
	e.platform = string(infra.Status.PlatformStatus.Type)
	if ext := infra.Spec.PlatformSpec.External; e.platform == "External" && ext != nil {
		e.platform += "/" + ext.PlatformName
	}
	cm := &corev1.ConfigMap{}
	if err := cluster.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: config.ImagesConfigMapName}, cm); err != nil {
		t.Fatalf("reading the images ConfigMap: %v", err)
	}
	images := map[string]string{}
	if err := json.Unmarshal([]byte(cm.Data[config.ImagesConfigMapKey]), &images); err != nil {
		t.Fatalf("images.json: %v", err)
	}
	e.operatorImage = images["machineAPIOperator"]
	row := platformTable[e.platform]
	if row.providerImageKey != "" {
		e.deployed = true
		e.providerImage = images[row.providerImageKey]
		if row.terminationHandler {
			e.terminationHandlerImage = e.providerImage
		}
	}
	e.machineHealthCheck = true
	fg := &configv1.FeatureGate{}
	if err := cluster.Get(ctx, client.ObjectKey{Name: config.ClusterConfigName}, fg); err == nil {
		e.machineHealthCheck = !featureGateEnabled(fg, "MachineAPIOperatorDisableMachineHealthCheckController")
	}
	return e
}

// featureGateEnabled reports whether any status entry or the
// CustomNoUpgrade spec of fg enables gate.
func featureGateEnabled(fg *configv1.FeatureGate, gate configv1.FeatureGateName) bool {
	for _, d := range fg.Status.FeatureGates {
		for _, a := range d.Enabled {
			if a.Name == gate {
				return true
			}
		}
	}
	if c := fg.Spec.CustomNoUpgrade; c != nil {
		return slices.Contains(c.Enabled, gate)
	}
	return false
}

// TestOperandMatchesPlatform: the operand Deployment and DaemonSet are the
// ones the platform calls for, per platformTable.
func TestOperandMatchesPlatform(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	want := expectedOperand(ctx, t)
	d := &appsv1.Deployment{}
	err := cluster.Get(ctx, client.ObjectKey{Namespace: want.namespace, Name: config.OperandDeploymentName}, d)
	if !want.deployed {
		if !apierrors.IsNotFound(err) {
			t.Fatalf("platform %s deploys nothing, but the operand Deployment exists (err %v)", want.platform, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("getting the operand Deployment: %v", err)
	}
	if want.providerImage == "" || want.operatorImage == "" {
		t.Fatalf("images.json lacks the provider image of %s or machineAPIOperator", want.platform)
	}
	images := map[string]string{}
	for _, c := range d.Spec.Template.Spec.Containers {
		images[c.Name] = c.Image
	}
	if images[render.MachineContainer] != want.providerImage {
		t.Errorf("machine-controller image %q, want %q for platform %s", images[render.MachineContainer], want.providerImage, want.platform)
	}
	for _, name := range []string{render.MachineSetContainer, render.NodeLinkContainer} {
		if images[name] != want.operatorImage {
			t.Errorf("%s image %q, want %q", name, images[name], want.operatorImage)
		}
	}
	if _, ok := images[render.MachineHealthCheckContainer]; ok != want.machineHealthCheck {
		t.Errorf("MHC container present=%v, want %v", ok, want.machineHealthCheck)
	}
	ds := &appsv1.DaemonSet{}
	err = cluster.Get(ctx, client.ObjectKey{Namespace: want.namespace, Name: config.TerminationHandlerName}, ds)
	switch {
	case want.terminationHandlerImage == "" && !apierrors.IsNotFound(err):
		t.Errorf("termination handler DaemonSet on %s (err %v), want none", want.platform, err)
	case want.terminationHandlerImage != "" && err != nil:
		t.Errorf("termination handler DaemonSet on %s: %v", want.platform, err)
	case want.terminationHandlerImage != "":
		for _, c := range ds.Spec.Template.Spec.Containers {
			if c.Image != want.terminationHandlerImage {
				t.Errorf("termination handler container %s image %q, want %q", c.Name, c.Image, want.terminationHandlerImage)
			}
		}
	}
}

// operandToEdit returns what the cluster's operand should be and its Deployment (and its key),
// skipping the test on a platform that deploys none.
func operandToEdit(ctx context.Context, t *testing.T) (expected, client.ObjectKey, *appsv1.Deployment) {
	t.Helper()
	want := expectedOperand(ctx, t)
	if !want.deployed {
		t.Skipf("platform %s deploys nothing: no operand to edit", want.platform)
	}
	key := client.ObjectKey{Namespace: want.namespace, Name: config.OperandDeploymentName}
	d := &appsv1.Deployment{}
	if err := cluster.Get(ctx, key, d); err != nil {
		t.Fatal(err)
	}
	return want, key, d
}

// TestOperandDriftReverted edits and deletes operand objects and expects the
// operator to put them back.
func TestOperandDriftReverted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	want, key, d := operandToEdit(ctx, t)
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
				return c.Image == want.providerImage, nil
			}
		}
		return false, nil
	})
	t.Logf("edit reverted in %s", time.Since(start).Round(time.Millisecond))

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: want.namespace, Name: config.WebhookServiceName}}
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
	_, key, d := operandToEdit(ctx, t)
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

	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	vwcKey := client.ObjectKey{Name: config.WebhookConfigurationName}
	if err := cluster.Get(ctx, vwcKey, vwc); err != nil {
		t.Fatal(err)
	}
	rules := len(vwc.Webhooks[0].Rules)
	widened := `[{"op":"add","path":"/webhooks/0/rules/-","value":{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"]}}]`
	if err := cluster.Patch(ctx, vwc, client.RawPatch(types.JSONPatchType, []byte(widened)), client.FieldOwner("e2e")); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	waitFor(ctx, t, "the rule added to validatingwebhookconfiguration "+vwcKey.Name+" removed", func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, vwcKey, vwc); err != nil {
			return false, err
		}
		return len(vwc.Webhooks[0].Rules) == rules, nil
	})
	t.Logf("added webhook rule reverted in %s", time.Since(start).Round(time.Millisecond))
}

// TestLeastPrivilege asks the cluster's authorizer (what `kubectl auth can-i
// --as=system:serviceaccount:<ns>:<sa>` asks) whether the operator's and the
// operand's ServiceAccounts could make themselves cluster-admin or stop the
// operator: the operand's RBAC ships in the install, so neither holds RBAC
// write, escalate or bind (docs/openshift.md#rbac).
func TestLeastPrivilege(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := expectedOperand(ctx, t).namespace
	operator := "system:serviceaccount:" + ns + ":machine-api-operator"
	operand := "system:serviceaccount:" + ns + ":" + render.ControllersServiceAccountName
	type q struct {
		user                                   string
		verb, group, resource, namespace, name string
		want                                   bool
	}
	const rbac, crds, hooks = "rbac.authorization.k8s.io", "apiextensions.k8s.io", "admissionregistration.k8s.io"
	for _, c := range []q{
		{operator, "escalate", rbac, "clusterroles", "", render.ControllersServiceAccountName, false},
		{operator, "bind", rbac, "clusterroles", "", "cluster-admin", false},
		{operator, "create", rbac, "clusterrolebindings", "", "", false},
		{operator, "update", crds, "customresourcedefinitions", "", "clusteroperators.config.openshift.io", false},
		{operator, "patch", crds, "customresourcedefinitions", "", "machines.machine.openshift.io", true},
		{operator, "delete", hooks, "validatingwebhookconfigurations", "", "another-component", false},
		{operator, "list", "", "secrets", ns, "", false},
		{operator, "get", "", "secrets", ns, config.WebhookCertSecretName, true},
		{operator, "update", "coordination.k8s.io", "leases", ns, "cluster-api-provider-machineset-leader", false},
		{operand, "escalate", rbac, "clusterroles", "", render.ControllersServiceAccountName, false},
		{operand, "bind", rbac, "clusterroles", "", "cluster-admin", false},
		{operand, "create", rbac, "clusterrolebindings", "", "", false},
		{operand, "update", crds, "customresourcedefinitions", "", "clusteroperators.config.openshift.io", false},
		{operand, "delete", hooks, "validatingwebhookconfigurations", "", "another-component", false},
		{operand, "update", "coordination.k8s.io", "leases", ns, "machine-api-operator", false},
		{operand, "update", "", "configmaps", ns, "machine-api-operator-images", false},
		{operand, "update", "coordination.k8s.io", "leases", ns, "cluster-api-provider-machineset-leader", true},
	} {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: c.user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: c.verb, Group: c.group, Resource: c.resource, Namespace: c.namespace, Name: c.name},
		}}
		if err := cluster.Create(ctx, review); err != nil {
			t.Fatal(err)
		}
		if review.Status.Allowed != c.want {
			t.Errorf("can %s %s %s.%s %s/%s: %v, want %v", c.user, c.verb, c.resource, c.group, c.namespace, c.name, review.Status.Allowed, c.want)
		}
	}
}
