package install_test

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/names"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
)

// guardMessage is what the install's guard policy answers a token Secret.
const guardMessage = "may not write Secrets of type kubernetes.io/service-account-token"

// impersonating returns a client acting as user in groups.
func impersonating(t *testing.T, cfg *rest.Config, user string, groups []string) client.Client {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// refusedEventually creates obj until the API server refuses it with a
// message containing want (a policy takes effect a moment after it is
// created); an object created meanwhile is deleted again.
func refusedEventually(ctx context.Context, t *testing.T, as, admin client.Client, obj client.Object, want string) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		o := obj.DeepCopyObject().(client.Object)
		last = as.Create(ctx, o)
		if last == nil {
			return false, admin.Delete(ctx, o)
		}
		return strings.Contains(last.Error(), want), nil
	})
	if err != nil {
		t.Errorf("creating %T %s: err = %v, want a refusal saying %q", obj, obj.GetName(), last, want)
	}
}

// tokenSecret asks the token controller for a token of the operator's
// ServiceAccount: who could create it would act as the operator.
func tokenSecret(name string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
			Annotations: map[string]string{corev1.ServiceAccountNameKey: operatorName}},
		Type: corev1.SecretTypeServiceAccountToken,
	}
}

// checkNoTokenRoute: the operand's rights (Secret writes, which provider
// images need, and Lease creates) give no way to the operator's identity or
// its Lease; the operator cannot mint tokens either.
// Breaks if: the guard policy of 09_controllers-rbac.yaml is left out, or
// its match condition names another user.
func checkNoTokenRoute(ctx context.Context, t *testing.T, admin client.Client, cfg *rest.Config) {
	asOperand := impersonating(t, cfg, operandUser, operandGroups)
	asOperator := impersonating(t, cfg, operatorUser, operatorGroups)

	refusedEventually(ctx, t, asOperand, admin, tokenSecret("operator-token"), guardMessage)
	refusedEventually(ctx, t, asOperator, admin, tokenSecret(config.WebhookCertSecretName), guardMessage)
	// The policy is not a blanket refusal: a provider's own Secret is fine.
	own := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "provider-state"}, StringData: map[string]string{"k": "v"}}
	if err := asOperand.Create(ctx, own); err != nil {
		t.Errorf("the operand cannot create an Opaque Secret: %v", err)
	}

	lease := func(name string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("provider"), LeaseDurationSeconds: ptr.To[int32](31536000)}}
	}
	// Taken before the operator starts, with a year's duration, the
	// operator's Lease would keep it from ever leading.
	refusedEventually(ctx, t, asOperand, admin, lease(config.OperatorLeaseName), "may create only its own leader-election Leases")
	for _, name := range []string{names.MachineSetLeaseName, "cluster-api-provider-aws-leader"} {
		l := lease(name)
		if err := asOperand.Create(ctx, l); err != nil {
			t.Errorf("the operand cannot create its Lease %s: %v", name, err)
			continue
		}
		l.Spec.HolderIdentity = ptr.To("renewed")
		if err := asOperand.Update(ctx, l); err != nil {
			t.Errorf("the operand cannot renew its Lease %s: %v", name, err)
		}
		if err := admin.Delete(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	// The operator's Lease, once it exists, is out of the operand's reach.
	held := lease(config.OperatorLeaseName)
	if err := admin.Create(ctx, held); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Delete(ctx, held) }()
	held.Spec.HolderIdentity = ptr.To("provider")
	if err := asOperand.Update(ctx, held); !apierrors.IsForbidden(err) {
		t.Errorf("the operand updating the operator's Lease: err = %v, want Forbidden", err)
	}
	images := &corev1.ConfigMap{}
	if err := asOperand.Get(ctx, client.ObjectKey{Namespace: namespace, Name: config.ImagesConfigMapName}, images); err != nil {
		t.Fatalf("the operand cannot read the images ConfigMap: %v", err)
	}
	images.Data[config.ImagesConfigMapKey] = `{"machineAPIOperator": "attacker.example/mao"}`
	if err := asOperand.Update(ctx, images); !apierrors.IsForbidden(err) {
		t.Errorf("the operand updating the images ConfigMap: err = %v, want Forbidden", err)
	}
}

// checkOperatorCannotEscalate: with the operator's token one cannot write
// RBAC, bind a role, touch a CRD or webhook configuration it does not own,
// or read Secrets it did not issue.
// Breaks if: the operator's ClusterRole gets back an unnamed CRD, webhook or
// RBAC write, or its Role an unnamed Secret read.
func checkOperatorCannotEscalate(ctx context.Context, t *testing.T, admin, asOperator client.Client) {
	forbidden := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: err = %v, want Forbidden", what, err)
		}
	}
	forbidden("creating a ClusterRole", asOperator.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "machine-api-controllers-extra"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}},
	}))
	operandRole := &rbacv1.ClusterRole{}
	forbidden("reading the operand's ClusterRole", asOperator.Get(ctx, client.ObjectKey{Name: operandRoleName}, operandRole))
	forbidden("patching the operand's ClusterRole", asOperator.Patch(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: operandRoleName}},
		client.RawPatch("application/merge-patch+json", []byte(`{"rules":[{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}]}`))))
	forbidden("binding cluster-admin", asOperator.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "operator-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: operatorName, Namespace: namespace}},
	}))
	forbidden("binding the operand's Role to the operator", asOperator.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "operator-operand"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: operandRoleName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: operatorName, Namespace: namespace}},
	}))

	// A CRD the operator does not own (its conversion webhook would route
	// any client's requests): readable, not writable.
	foreign := &apiextensionsv1.CustomResourceDefinition{}
	if err := asOperator.Get(ctx, client.ObjectKey{Name: "clusteroperators.config.openshift.io"}, foreign); err != nil {
		t.Fatalf("reading a foreign CRD: %v", err)
	}
	foreign.Annotations = map[string]string{"taken": "over"}
	forbidden("updating a foreign CRD", asOperator.Update(ctx, foreign))
	forbidden("deleting the machines CRD", asOperator.Delete(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "machines.machine.openshift.io"}}))

	other := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "another-component"}}
	if err := admin.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Delete(ctx, other) }()
	forbidden("deleting another component's webhook configuration", asOperator.Delete(ctx, other))
	forbidden("creating a webhook configuration of another name", asOperator.Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "machine-api-2"}}))

	forbidden("listing the namespace's Secrets", asOperator.List(ctx, &corev1.SecretList{}, client.InNamespace(namespace)))
	forbidden("reading cloud credentials", asOperator.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "vsphere-cloud-credentials"}, &corev1.Secret{}))
	forbidden("creating a ServiceAccount", asOperator.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "operator-2"}}))
}

// canIChecks are the `kubectl auth can-i` questions of issue 31, as each
// ServiceAccount: what could make it cluster-admin or stop the operator.
func canIChecks(t *testing.T, cfg *rest.Config) {
	operandLease := "leases/" + names.MachineSetLeaseName
	for _, q := range []struct {
		as   string
		args []string
		want string
	}{
		{operatorUser, []string{"escalate", "clusterroles/" + operandRoleName}, "no"},
		{operatorUser, []string{"bind", "clusterroles/" + operandRoleName}, "no"},
		{operatorUser, []string{"bind", "roles/" + operandRoleName, "-n", namespace}, "no"},
		{operatorUser, []string{"create", "clusterrolebindings"}, "no"},
		{operatorUser, []string{"update", "customresourcedefinitions/clusteroperators.config.openshift.io"}, "no"},
		{operatorUser, []string{"patch", "customresourcedefinitions/machines.machine.openshift.io"}, "yes"},
		{operatorUser, []string{"delete", "validatingwebhookconfigurations/another-component"}, "no"},
		{operatorUser, []string{"delete", "validatingwebhookconfigurations/" + config.WebhookConfigurationName}, "yes"},
		{operatorUser, []string{"list", "secrets", "-n", namespace}, "no"},
		{operatorUser, []string{"update", operandLease, "-n", namespace}, "no"},
		{operatorUser, []string{"update", "leases/" + config.OperatorLeaseName, "-n", namespace}, "yes"},
		{operandUser, []string{"escalate", "clusterroles/" + operandRoleName}, "no"},
		{operandUser, []string{"bind", "clusterroles/" + operandRoleName}, "no"},
		{operandUser, []string{"create", "clusterrolebindings"}, "no"},
		{operandUser, []string{"update", "customresourcedefinitions/clusteroperators.config.openshift.io"}, "no"},
		{operandUser, []string{"delete", "validatingwebhookconfigurations/another-component"}, "no"},
		{operandUser, []string{"update", "leases/" + config.OperatorLeaseName, "-n", namespace}, "no"},
		{operandUser, []string{"update", "configmaps/" + config.ImagesConfigMapName, "-n", namespace}, "no"},
		{operandUser, []string{"update", operandLease, "-n", namespace}, "yes"},
	} {
		if got := kubectlCanI(t, cfg, q.as, q.args...); got != q.want {
			t.Errorf("kubectl auth can-i --as=%s %s = %q, want %q", q.as, strings.Join(q.args, " "), got, q.want)
		}
	}
}
