package install_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/install"
	"github.com/machine-api-operator/machine-api-operator/pkg/leaderelection"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/apply"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/render"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/status"
	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// The operator's identity: its ServiceAccount and the groups the API server
// adds to every service account token.
var (
	operatorUser   = "system:serviceaccount:" + namespace + ":" + operatorName
	operatorGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
)

// applyLikeCVO applies the manifests in order the way the cluster version
// operator does: create each object or update the existing one, and write a
// manifest's status (the ClusterOperator's) through the status subresource.
// Of the feature-set variants of a CRD (same name) only Default is applied.
// The ServiceMonitors and the PrometheusRule are left out: their CRDs come
// with the Prometheus operator (cluster monitoring on OpenShift), which the
// test API server does not have; monitoring_test.go checks them. So are the
// CredentialsRequests and the SecurityContextConstraints, whose CRDs come
// with other OpenShift operators (openshift_test.go checks them).
func applyLikeCVO(ctx context.Context, t *testing.T, c client.Client, ms []install.Manifest) {
	t.Helper()
	for _, m := range ms {
		if fs := m.Object.GetAnnotations()[featureSetAnno]; fs != "" && fs != "Default" {
			continue
		}
		if m.Object.GroupVersionKind().Group == monitoringGroup || openShiftOnlyKind(m) {
			continue
		}
		obj := m.Object.DeepCopy()
		st, hasStatus := obj.Object["status"]
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(obj.GroupVersionKind())
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), live)
		switch {
		case apierrors.IsNotFound(err):
			if err := c.Create(ctx, obj); err != nil {
				t.Fatalf("creating %s: %v", m, err)
			}
		case err != nil:
			t.Fatalf("reading %s: %v", m, err)
		default:
			obj.SetResourceVersion(live.GetResourceVersion())
			if err := c.Update(ctx, obj); err != nil {
				t.Fatalf("updating %s: %v", m, err)
			}
		}
		if hasStatus {
			obj.Object["status"] = st
			if err := c.Status().Update(ctx, obj); err != nil {
				t.Fatalf("updating the status of %s: %v", m, err)
			}
		}
	}
}

// TestApplyToAPIServer applies install/ to a real API server (envtest with
// RBAC authorization) like the cluster version operator, then checks as the
// operator's ServiceAccount that the payload RBAC lets it do its job, and no
// more. testenv already installs the Default Machine API CRDs, so applying
// the payload's (identical) copies is an update.
func TestApplyToAPIServer(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ms := loadPayload(t)
	c := env.Client
	// Namespaces other OpenShift components create.
	for ns := range foreignNamespaces {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}

	applyLikeCVO(ctx, t, c, ms)
	// The cluster version operator re-applies the payload periodically.
	applyLikeCVO(ctx, t, c, ms)

	t.Run("objects exist", func(t *testing.T) {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: operatorName}, d); err != nil {
			t.Fatal(err)
		}
		_, images := payloadImages(t, ms)
		if got := d.Spec.Template.Spec.Containers[0].Image; got != images.MachineAPIOperator {
			t.Errorf("Deployment image = %s", got)
		}
		for _, obj := range []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: config.ImagesConfigMapName}},
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: operatorName}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: operatorName}},
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: operatorName}},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: operatorName}},
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: operatorName}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: operatorName}},
			// The operand's identity and RBAC ship with the install.
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: operandRoleName}},
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: operandRoleName}},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: operandRoleName}},
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: operandRoleName}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: operandRoleName}},
			&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "machinehealthchecks.machine.openshift.io"}},
		} {
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				t.Errorf("%T %s: %v", obj, obj.GetName(), err)
			}
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: "machines.machine.openshift.io"}, crd); err != nil {
			t.Fatal(err)
		}
		if fs := crd.Annotations[featureSetAnno]; fs != "Default" {
			t.Errorf("machines CRD feature set = %q, want Default", fs)
		}
		co := &configv1.ClusterOperator{}
		if err := c.Get(ctx, client.ObjectKey{Name: config.ClusterOperatorName}, co); err != nil {
			t.Fatal(err)
		}
		if want := []configv1.OperandVersion{{Name: "operator", Version: versionSentinel}}; !equality.Semantic.DeepEqual(co.Status.Versions, want) {
			t.Errorf("ClusterOperator versions = %v, want %v", co.Status.Versions, want)
		}
		if want := status.RelatedObjects(namespace); !equality.Semantic.DeepEqual(co.Status.RelatedObjects, want) {
			t.Errorf("ClusterOperator relatedObjects = %v, want %v", co.Status.RelatedObjects, want)
		}
	})

	t.Run("the API server authorizes what the operator does, and not more", func(t *testing.T) {
		checkAccess(t, "the operator", reviewer(ctx, t, c, operatorUser, operatorGroups), operatorAccess(), forbiddenAccess())
	})

	t.Run("the API server authorizes the operand's OpenShift roles", func(t *testing.T) {
		user := "system:serviceaccount:" + namespace + ":" + operandRoleName
		groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
		sar := func(a access) bool {
			t.Helper()
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: user, Groups: groups,
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: a.Verb, Group: a.Group, Resource: a.Resource, Namespace: a.Namespace, Name: a.Name,
				},
			}}
			if err := c.Create(ctx, review); err != nil {
				t.Fatal(err)
			}
			return review.Status.Allowed
		}
		for _, ns := range []string{"openshift-config", "openshift-config-managed"} {
			if a := (access{Verb: "get", Resource: "configmaps", Namespace: ns, Name: "cloud-provider-config"}); !eventuallyAllowed(sar, a) {
				t.Errorf("the operand cannot %s", a)
			}
			if a := (access{Verb: "get", Resource: "secrets", Namespace: ns, Name: "pull-secret"}); sar(a) {
				t.Errorf("the operand can %s", a)
			}
		}
		// A remediation provider's aggregated ClusterRole reaches the operand.
		remediation := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "test-remediation-aggregation",
				Labels: map[string]string{"rbac.ext-remediation/aggregate-to-ext-remediation": "true"}},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"infrastructure.cluster.x-k8s.io"},
				Resources: []string{"metal3remediations"}, Verbs: []string{"create", "get"}}},
		}
		if err := c.Create(ctx, remediation); err != nil {
			t.Fatal(err)
		}
		a := access{Verb: "create", Group: "infrastructure.cluster.x-k8s.io", Resource: "metal3remediations", Namespace: namespace}
		// envtest runs no controller manager, which aggregates roles: do it.
		agg := &rbacv1.ClusterRole{}
		if err := c.Get(ctx, client.ObjectKey{Name: "machine-api-operator-ext-remediation"}, agg); err != nil {
			t.Fatal(err)
		}
		agg.Rules = remediation.Rules
		if err := c.Update(ctx, agg); err != nil {
			t.Fatal(err)
		}
		if !eventuallyAllowed(sar, a) {
			t.Errorf("with an aggregated remediation role, the operand cannot %s", a)
		}
	})

	t.Run("cluster monitoring may scrape the Machine API", func(t *testing.T) {
		monitoringAccess(t, func(user string, groups []string, a access, url string) bool {
			t.Helper()
			spec := authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups}
			if url != "" {
				spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: url, Verb: a.Verb}
			} else {
				spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
					Verb: a.Verb, Group: a.Group, Resource: a.Resource, Namespace: a.Namespace, Name: a.Name,
				}
			}
			review := &authorizationv1.SubjectAccessReview{Spec: spec}
			if err := c.Create(ctx, review); err != nil {
				t.Fatal(err)
			}
			return review.Status.Allowed
		})
		var policies networkingv1.NetworkPolicyList
		if err := c.List(ctx, &policies, client.InNamespace(namespace)); err != nil {
			t.Fatal(err)
		}
		if want := len(payloadNetworkPolicies(t, ms)); len(policies.Items) != want {
			t.Errorf("%d NetworkPolicies in %s, want the payload's %d", len(policies.Items), namespace, want)
		}
	})

	// As the operator's ServiceAccount (impersonated): apply and prune what
	// it renders for AWS with the operator's own applier, and the rest of
	// its writes. This proves the writes limited by resourceNames suffice
	// for server-side apply (creates included).
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: operatorUser, Groups: operatorGroups}
	asOperator, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("the operator applies and prunes its operand", func(t *testing.T) {
		objs := renderAWS(t)
		a := apply.New(apply.Options{Client: asOperator, FieldManager: config.FieldManager, Owner: namespace})
		res, err := a.Apply(ctx, objs)
		if err != nil {
			t.Fatalf("applying the rendered AWS objects as the operator: %v", err)
		}
		if len(res.Applied) != len(objs) {
			t.Errorf("applied %d of %d objects", len(res.Applied), len(objs))
		}
		if res, err := a.Apply(ctx, objs); err != nil || len(res.Applied) != 0 {
			t.Errorf("second apply: applied %v, err %v; want nothing", res.Applied, err)
		}
		if deleted, err := a.Prune(ctx, operator.PrunableKinds, namespace, objs); err != nil || len(deleted) != 0 {
			t.Errorf("prune with everything kept: deleted %v, err %v", deleted, err)
		}
		// A platform change drops the termination handler: pruned.
		keep := slices.DeleteFunc(slices.Clone(objs), func(o client.Object) bool { _, ds := o.(*appsv1.DaemonSet); return ds })
		if len(keep) == len(objs) {
			t.Fatal("the AWS render has no DaemonSet")
		}
		deleted, err := a.Prune(ctx, operator.PrunableKinds, namespace, keep)
		if err != nil || len(deleted) != 1 || deleted[0].Kind != "DaemonSet" {
			t.Errorf("prune without the DaemonSet: deleted %v, err %v", deleted, err)
		}
	})

	t.Run("the API server authorizes what the operand does, and not more", func(t *testing.T) {
		// The operand roles of the install, and its Role in the lease namespace.
		checkOperandAuthorization(ctx, t, c, env.Config)
	})

	t.Run("the operator writes its status, events, lease and certificates", func(t *testing.T) {
		w := &status.Writer{Client: asOperator, Reader: asOperator, Name: config.ClusterOperatorName}
		co, err := w.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		next := *co.Status.DeepCopy()
		next.Conditions = append(next.Conditions, configv1.ClusterOperatorStatusCondition{
			Type: configv1.OperatorAvailable, Status: configv1.ConditionTrue, Reason: "AsExpected",
			LastTransitionTime: metav1.Now(),
		})
		if _, err := w.Write(ctx, co, next); err != nil {
			t.Errorf("writing the ClusterOperator status: %v", err)
		}

		ev := &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: config.ClusterOperatorName + ".install-test"},
			EventTime:  metav1.NewMicroTime(time.Now()), ReportingController: operatorName, ReportingInstance: operatorName + "-x",
			Action: "InstallTest", Reason: "InstallTest", Type: corev1.EventTypeNormal,
			Regarding: corev1.ObjectReference{APIVersion: "config.openshift.io/v1", Kind: "ClusterOperator", Name: config.ClusterOperatorName},
		}
		if err := asOperator.Create(ctx, ev); err != nil {
			t.Errorf("recording an event: %v", err)
		}

		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: config.OperatorLeaseName},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a"), LeaseDurationSeconds: ptr.To[int32](137)},
		}
		if err := asOperator.Create(ctx, lease); err != nil {
			t.Errorf("creating the leader election lease: %v", err)
		} else {
			lease.Spec.HolderIdentity = ptr.To("b")
			if err := asOperator.Update(ctx, lease); err != nil {
				t.Errorf("renewing the lease: %v", err)
			}
			// Free it for the operator run below.
			if err := c.Delete(ctx, lease); err != nil {
				t.Fatal(err)
			}
		}

		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: config.WebhookCertSecretName},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{corev1.TLSCertKey: []byte("c"), corev1.TLSPrivateKeyKey: []byte("k")},
		}
		if err := asOperator.Create(ctx, secret); err != nil {
			t.Errorf("creating a webhook certificate Secret: %v", err)
		} else {
			secret.Data[corev1.TLSCertKey] = []byte("rotated")
			if err := asOperator.Update(ctx, secret); err != nil {
				t.Errorf("rotating it: %v", err)
			}
			if err := asOperator.Delete(ctx, secret); err != nil {
				t.Errorf("deleting it: %v", err)
			}
		}
	})

	t.Run("the operator cannot escalate", func(t *testing.T) {
		checkOperatorCannotEscalate(ctx, t, c, asOperator)
		canIChecks(t, env.Config)
	})

	t.Run("no service account token route", func(t *testing.T) {
		checkNoTokenRoute(ctx, t, c, env.Config)
	})

	t.Run("the operator runs as its ServiceAccount", func(t *testing.T) {
		runOperatorAsServiceAccount(ctx, t, c, cfg, ms)
	})
}

// runOperatorAsServiceAccount runs the real operator (the manager `start`
// builds: informers, leader election, certificate issuer, status, events)
// with the payload's images.json, authenticated as its ServiceAccount, on a
// kubemark cluster, and waits until it reports Available: anything its RBAC
// lacks would show as a forbidden error and no progress.
func runOperatorAsServiceAccount(ctx context.Context, t *testing.T, c client.Client, asOperator *rest.Config, ms []install.Manifest) {
	cm := typed[*corev1.ConfigMap](t, ms, "ConfigMap", config.ImagesConfigMapName)
	imagesPath := filepath.Join(t.TempDir(), config.ImagesConfigMapKey)
	if err := os.WriteFile(imagesPath, []byte(cm.Data[config.ImagesConfigMapKey]), 0o600); err != nil {
		t.Fatal(err)
	}
	_, images := payloadImages(t, ms)
	const release = "4.99.0-install-test"

	infra := &configv1.Infrastructure{
		ObjectMeta: metav1.ObjectMeta{Name: config.ClusterConfigName},
		Spec: configv1.InfrastructureSpec{PlatformSpec: configv1.PlatformSpec{
			Type: configv1.ExternalPlatformType, External: &configv1.ExternalPlatformSpec{PlatformName: config.KubemarkPlatformName},
		}},
	}
	if err := c.Create(ctx, infra); err != nil {
		t.Fatal(err)
	}
	infra.Status = configv1.InfrastructureStatus{
		InfrastructureName:   "install-test",
		PlatformStatus:       &configv1.PlatformStatus{Type: configv1.ExternalPlatformType, External: &configv1.ExternalPlatformStatus{}},
		ControlPlaneTopology: configv1.HighlyAvailableTopologyMode, InfrastructureTopology: configv1.HighlyAvailableTopologyMode,
		CPUPartitioning: configv1.CPUPartitioningNone,
		APIServerURL:    "https://api.example.com:6443", APIServerInternalURL: "https://api-int.example.com:6443",
	}
	if err := c.Status().Update(ctx, infra); err != nil {
		t.Fatal(err)
	}

	// Every log line of the operator, client-go included: an RBAC gap that
	// is only logged (a failed event, a failed watch) fails the test too.
	logs := &syncBuffer{}
	klog.LogToStderr(false)
	klog.SetOutput(logs)
	defer func() {
		klog.Flush()
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
	}()
	logger := klog.NewKlogr()
	ctrllog.SetLogger(logger)

	runCtx, stop := context.WithCancel(ctrllog.IntoContext(ctx, logger))
	done := make(chan error, 1)
	go func() {
		mgr, err := operator.NewManager(runCtx, asOperator, operator.Options{
			Namespace:      namespace,
			ImagesJSONPath: imagesPath,
			ReleaseVersion: release,
			Certificates:   operator.CertificatesAuto, // no service-ca here: the operator issues the webhook certificates (Secrets)
			StableDuration: time.Second,
			DegradedAfter:  time.Minute,
		}, operator.ManagerOptions{
			Scheme:                 scheme.New(),
			MetricsBindAddress:     "0",
			HealthProbeBindAddress: "0",
			// Leader election as deployed, with deadlines a loaded CI
			// machine (-race, 2 cores) keeps: a 3 s renew deadline was
			// missed there, and the operator stopped before it sent its
			// events.
			LeaderElection: true,
			LeaderElectionTiming: leaderelection.Timing{
				LeaseDuration: 15 * time.Second,
				RenewDeadline: 10 * time.Second,
				RetryPeriod:   time.Second,
				RenewInterval: 2 * time.Second,
			},
			SkipControllerNameValidation: true,
		})
		if err == nil {
			err = mgr.Start(runCtx)
		}
		done <- err
	}()
	defer func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("operator: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the operator did not stop")
		}
		klog.Flush()
		// klog writes an error once per severity it covers: report it once.
		seen := map[string]bool{}
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(strings.ToLower(line), "forbidden") && !seen[line] {
				seen[line] = true
				t.Errorf("operator log: %s", line)
			}
		}
	}()

	eventually := func(what string, cond func(ctx context.Context) (bool, error)) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, cond); err != nil {
			co := &configv1.ClusterOperator{}
			_ = c.Get(ctx, client.ObjectKey{Name: config.ClusterOperatorName}, co)
			t.Fatalf("waiting for %s: %v\nClusterOperator conditions: %+v", what, err, co.Status.Conditions)
		}
	}
	d := &appsv1.Deployment{}
	eventually("the operand Deployment", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: config.OperandDeploymentName}, d)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		// Re-rendered for kubemark (the AWS render was applied above).
		for _, ctr := range d.Spec.Template.Spec.Containers {
			if ctr.Name == render.MachineContainer {
				return ctr.Image == images.ClusterAPIControllerKubemark, nil
			}
		}
		return false, nil
	})
	// No controller-manager runs here: report the operand available.
	eventually("the operand Deployment status", func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return false, err
		}
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue,
				Reason: "Test", LastTransitionTime: metav1.Now(), LastUpdateTime: metav1.Now()}},
		}
		err := c.Status().Update(ctx, d)
		return err == nil, client.IgnoreAlreadyExists(ignoreConflict(err))
	})
	eventually("ClusterOperator Available=True at the release version", func(ctx context.Context) (bool, error) {
		co := &configv1.ClusterOperator{}
		if err := c.Get(ctx, client.ObjectKey{Name: config.ClusterOperatorName}, co); err != nil {
			return false, err
		}
		for _, cond := range co.Status.Conditions {
			if strings.Contains(strings.ToLower(cond.Message), "forbidden") {
				return false, fmt.Errorf("condition %s: %s", cond.Type, cond.Message)
			}
		}
		available := false
		for _, cond := range co.Status.Conditions {
			available = available || (cond.Type == configv1.OperatorAvailable && cond.Status == configv1.ConditionTrue)
		}
		return available && len(co.Status.Versions) == 1 && co.Status.Versions[0].Version == release, nil
	})

	lease := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: config.OperatorLeaseName}, lease); err != nil {
		t.Errorf("leader election lease: %v", err)
	} else if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Error("the lease has no holder")
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: config.WebhookConfigurationName}, vwc); err != nil {
		t.Error(err)
	} else if len(vwc.Webhooks) == 0 || len(vwc.Webhooks[0].ClientConfig.CABundle) == 0 {
		t.Error("the operator did not inject its CA bundle")
	}
	for _, name := range []string{config.WebhookCertSecretName, config.MachineWebhookCertSecretName} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &corev1.Secret{}); err != nil {
			t.Errorf("webhook certificate Secret: %v", err)
		}
	}
	// The AWS termination handler applied above is obsolete on kubemark;
	// its ServiceAccount ships with install/ and stays.
	eventually("the termination handler DaemonSet pruned", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: config.TerminationHandlerName}, &appsv1.DaemonSet{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: render.TerminationHandlerServiceAccountName}, &corev1.ServiceAccount{}); err != nil {
		t.Errorf("the termination handler ServiceAccount of install/: %v", err)
	}
	// Events are sent asynchronously after the status write: wait for one.
	// Any transition event proves the operator may record events: under a
	// loaded CI machine's timeouts a status write can commit while its
	// client gives up, and the next sync sees no transition to report.
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		events := &eventsv1.EventList{}
		if err := c.List(ctx, events, client.InNamespace("default")); err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Regarding.Name == config.ClusterOperatorName && e.Action == "StatusChanged" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("the operator recorded no transition event for the ClusterOperator: %v", err)
	}
}

func ignoreConflict(err error) error {
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// checkAccess fails t for each of allowed that sar does not allow who (waiting for the RBAC
// authorizer, as eventuallyAllowed) and each of forbidden it allows.
func checkAccess(t *testing.T, who string, sar func(access) bool, allowed, forbidden []access) {
	t.Helper()
	for _, a := range allowed {
		if !eventuallyAllowed(sar, a) {
			t.Errorf("%s cannot %s", who, a)
		}
	}
	for _, a := range forbidden {
		if sar(a) {
			t.Errorf("%s can %s", who, a)
		}
	}
}

// eventuallyAllowed asks sar until it allows a, for up to 10 s: the API
// server's RBAC authorizer reads roles and bindings from an informer, so a
// review right after a write may still see the old rules.
func eventuallyAllowed(sar func(access) bool, a access) bool {
	return poll.Until(context.Background(), 10*time.Second, func(context.Context) (bool, error) {
		return sar(a), nil
	}) == nil
}
