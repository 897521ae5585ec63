package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/machine-api-operator/machine-api-operator/pkg/leaderelection"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/apply/applytest"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
	"github.com/machine-api-operator/machine-api-operator/pkg/tlsflags"
)

var env *testenv.Env

// TestMain adds the APIServer CRD, which only OpenShift serves, so the
// operator's TLS profile handling runs here as it does there, and removes
// the NodeMaintenance CRD testenv installs: on a vanilla cluster the
// operator installs it (one created by another field manager would be the
// node-maintenance-operator's, left alone; see TestNodeMaintenanceCRDOfAnotherOperator).
func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	e, err := testenv.New(testenv.Options{ExtraCRDs: []*apiextensionsv1.CustomResourceDefinition{apiServerCRD()}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		return 1
	}
	env = e
	defer func() {
		if err := e.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: stopping: %v\n", err)
		}
	}()
	if err := deleteCRD(context.Background(), e.Client, config.NodeMaintenanceCRDName); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		return 1
	}
	return m.Run()
}

// deleteCRD deletes a CRD and waits until it is gone.
func deleteCRD(ctx context.Context, c client.Client, name string) error {
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Delete(ctx, crd); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting CRD %s: %w", name, err)
	}
	return poll.Until(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Name: name}, crd)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// apiServerCRD is a minimal config.openshift.io/v1 APIServer CRD.
func apiServerCRD() *apiextensionsv1.CustomResourceDefinition {
	crd := anyFieldCRD("config.openshift.io", "apiservers", "apiserver", "APIServer")
	crd.Spec.Versions[0].Subresources = &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
	return crd
}

// anyFieldCRD is a cluster-scoped v1 CRD whose schema keeps any field: an
// OpenShift API the operator only reads or looks for.
func anyFieldCRD(group, plural, singular, kind string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: singular, Kind: kind, ListKind: kind + "List"},
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}},
			}},
		},
	}
}

const testRelease = "4.22.0-test"

var testImages = config.Images{
	MachineAPIOperator:           "example.io/mao:test",
	KubeRBACProxy:                "example.io/rbac-proxy:test",
	ClusterAPIControllerAWS:      "example.io/aws:test",
	ClusterAPIControllerAzure:    "example.io/azure:test",
	ClusterAPIControllerGCP:      "example.io/gcp:test",
	ClusterAPIControllerKubemark: "example.io/kubemark:test",
	// OpenShift's payload: vSphere's machine controller is in the
	// operator's own image.
	ClusterAPIControllerVSphere: "example.io/mao:test",
}

// running is one operator process under test.
type running struct {
	t       *testing.T
	ns      string
	images  string
	counter *applytest.CountingTransport
	stop    func()
}

type harnessOptions struct {
	ns             string
	leaderElection bool
	restConfig     *rest.Config
	degradedAfter  time.Duration
	// upgradeDegradedAfter: 0, no suppression while versions differ.
	upgradeDegradedAfter time.Duration
	stable               time.Duration
	metricsTLS           *tlsflags.Live
	// holdGC (optional) delays the stand-in garbage collector until closed.
	holdGC <-chan struct{}
}

// writeImages writes images.json into a temp dir and returns its path.
func writeImages(t *testing.T, images config.Images) string {
	t.Helper()
	data, err := json.Marshal(images)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "images.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// newNamespace creates an operand namespace and cleans the cluster-scoped
// singletons (Infrastructure, ClusterOperator, ...) when the test ends, so
// tests in this package run one after another on one API server.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "mao-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cleanupClusterScoped(t) })
	return ns.Name
}

func cleanupClusterScoped(t *testing.T) {
	ctx := context.Background()
	c := env.Client
	for _, obj := range []client.Object{
		&configv1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}},
		&configv1.Proxy{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}},
		&configv1.FeatureGate{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}},
		&configv1.APIServer{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}},
		&configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: "machine-api"}},
	} {
		if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: %v", err)
		}
	}
	owned := client.MatchingLabels{config.ManagedByLabel: config.ManagedByValue}
	for _, obj := range []client.Object{&rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{},
		&admissionregistrationv1.ValidatingWebhookConfiguration{}, &admissionregistrationv1.MutatingWebhookConfiguration{},
		// Each test's operator has a namespace of its own: a cluster-scoped
		// object the last one applied (and labelled as its own) is not taken
		// over while that namespace exists.
		&admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}} {
		if err := c.DeleteAllOf(ctx, obj, owned); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
}

// startOperator runs an operator (a full manager, as `start` builds it)
// until the test ends. Its API requests are counted.
func startOperator(t *testing.T, images string, o harnessOptions) *running {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	if o.restConfig != nil {
		cfg = rest.CopyConfig(o.restConfig)
	}
	counter := applytest.NewCountingTransport()
	cfg = counter.Install(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := runManager(ctx, cfg, images, o)
		if err != nil && ctx.Err() == nil {
			t.Errorf("operator exited with error: %v", err)
		}
	}()

	go collectForeground(ctx, o.ns, o.holdGC)
	r := &running{t: t, ns: o.ns, images: images, counter: counter}
	var stopped bool
	r.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("operator did not stop within 30s")
		}
	}
	t.Cleanup(r.stop)
	return r
}

// setInfrastructure creates or replaces the Infrastructure "cluster" with the
// given platform (status is a subresource, so it takes two requests).
func setInfrastructure(t *testing.T, platform configv1.PlatformType, externalName string) {
	t.Helper()
	setInfrastructureIn(t, env.Client, platform, externalName)
}

// setInfrastructureIn is setInfrastructure on the API server of c.
func setInfrastructureIn(t *testing.T, c client.Client, platform configv1.PlatformType, externalName string) {
	t.Helper()
	ctx := context.Background()
	infra := &configv1.Infrastructure{}
	err := c.Get(ctx, client.ObjectKey{Name: "cluster"}, infra)
	if apierrors.IsNotFound(err) {
		infra = &configv1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
		infra.Spec.PlatformSpec.Type = platform
		if err := c.Create(ctx, infra); err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	infra.Spec.PlatformSpec = configv1.PlatformSpec{Type: platform}
	if platform == configv1.ExternalPlatformType {
		infra.Spec.PlatformSpec.External = &configv1.ExternalPlatformSpec{PlatformName: externalName}
	}
	if err := c.Update(ctx, infra); err != nil {
		t.Fatal(err)
	}
	infra.Status = configv1.InfrastructureStatus{
		InfrastructureName:     "test-cluster",
		ControlPlaneTopology:   configv1.SingleReplicaTopologyMode,
		InfrastructureTopology: configv1.SingleReplicaTopologyMode,
		PlatformStatus:         &configv1.PlatformStatus{Type: platform},
	}
	if err := c.Status().Update(ctx, infra); err != nil {
		t.Fatal(err)
	}
}

func getCO(ctx context.Context) (*configv1.ClusterOperator, error) {
	return getCOIn(ctx, env.Client)
}

func getCOIn(ctx context.Context, c client.Client) (*configv1.ClusterOperator, error) {
	co := &configv1.ClusterOperator{}
	return co, c.Get(ctx, client.ObjectKey{Name: config.ClusterOperatorName}, co)
}

func coCondition(co *configv1.ClusterOperator, t configv1.ClusterStatusConditionType) *configv1.ClusterOperatorStatusCondition {
	for i := range co.Status.Conditions {
		if co.Status.Conditions[i].Type == t {
			return &co.Status.Conditions[i]
		}
	}
	return nil
}

// waitCondition waits until the ClusterOperator condition has the status
// (and reason and message substring, when given) and returns it.
func waitCondition(t *testing.T, ct configv1.ClusterStatusConditionType, status configv1.ConditionStatus, reason, msg string) *configv1.ClusterOperatorStatusCondition {
	t.Helper()
	return waitConditionIn(t, env.Client, ct, status, reason, msg)
}

// waitConditionIn is waitCondition on the API server of c.
func waitConditionIn(t *testing.T, c client.Client, ct configv1.ClusterStatusConditionType, status configv1.ConditionStatus, reason, msg string) *configv1.ClusterOperatorStatusCondition {
	t.Helper()
	var got *configv1.ClusterOperatorStatusCondition
	poll.Eventually(t, 60*time.Second, string(ct)+"="+string(status)+" "+reason, func(ctx context.Context) (bool, error) {
		co, err := getCOIn(ctx, c)
		if err != nil {
			return false, err
		}
		got = coCondition(co, ct)
		if got == nil {
			return false, fmt.Errorf("no %s condition", ct)
		}
		if got.Status != status || (reason != "" && got.Reason != reason) || !strings.Contains(got.Message, msg) {
			return false, fmt.Errorf("%s is %s %s: %q", ct, got.Status, got.Reason, got.Message)
		}
		return true, nil
	})
	return got
}

// getDeployment returns the operand Deployment or nil.
func getDeployment(ctx context.Context, ns string) (*appsv1.Deployment, error) {
	return getDeploymentIn(ctx, env.Client, ns)
}

func getDeploymentIn(ctx context.Context, c client.Client, ns string) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: config.OperandDeploymentName}, d)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return d, err
}

// waitDeployment waits for the operand Deployment to exist.
func waitDeployment(t *testing.T, ns string) *appsv1.Deployment {
	t.Helper()
	return waitDeploymentIn(t, env.Client, ns)
}

func waitDeploymentIn(t *testing.T, c client.Client, ns string) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	poll.Eventually(t, 60*time.Second, "deployment "+ns+"/"+config.OperandDeploymentName, func(ctx context.Context) (bool, error) {
		var err error
		d, err = getDeploymentIn(ctx, c, ns)
		return d != nil, err
	})
	return d
}

// setDeploymentAvailable plays the Deployment controller (envtest runs no
// kube-controller-manager): it reports the current generation rolled out and
// Available as given.
func setDeploymentAvailable(t *testing.T, ns string, available bool) {
	t.Helper()
	setDeploymentAvailableIn(t, env.Client, ns, available)
}

func setDeploymentAvailableIn(t *testing.T, c client.Client, ns string, available bool) {
	t.Helper()
	poll.Eventually(t, 10*time.Second, "deployment status update", func(ctx context.Context) (bool, error) {
		d, err := getDeploymentIn(ctx, c, ns)
		if err != nil || d == nil {
			return false, err
		}
		st := corev1.ConditionTrue
		var ready int32 = 1
		if !available {
			st, ready = corev1.ConditionFalse, 0
		}
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration:  d.Generation,
			Replicas:            1,
			UpdatedReplicas:     1,
			ReadyReplicas:       ready,
			AvailableReplicas:   ready,
			UnavailableReplicas: 1 - ready,
			Conditions: []appsv1.DeploymentCondition{{
				Type: appsv1.DeploymentAvailable, Status: st, Reason: "Test",
				LastTransitionTime: metav1.Now(), LastUpdateTime: metav1.Now(),
			}},
		}
		return true, c.Status().Update(ctx, d)
	})
}

func containerImage(d *appsv1.Deployment, name string) string {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == name {
			return c.Image
		}
	}
	return ""
}

func hasContainer(d *appsv1.Deployment, name string) bool { return containerImage(d, name) != "" }

// runManager builds and runs the operator's manager as `start` does.
func runManager(ctx context.Context, cfg *rest.Config, images string, o harnessOptions) error {
	// NewManager blocks until the API server answers: run it with Start.
	mgr, err := NewManager(ctx, cfg, Options{
		Namespace:            o.ns,
		ImagesJSONPath:       images,
		ReleaseVersion:       testRelease,
		StableDuration:       o.stable,
		DegradedAfter:        o.degradedAfter,
		UpgradeDegradedAfter: o.upgradeDegradedAfter,
		MetricsTLS:           o.metricsTLS,
	}, ManagerOptions{
		Scheme:                 scheme.New(),
		MetricsBindAddress:     "0",
		HealthProbeBindAddress: "0",
		LeaderElection:         o.leaderElection,
		LeaderElectionTiming: leaderelection.Timing{
			LeaseDuration: 4 * time.Second,
			RenewDeadline: 3 * time.Second,
			RetryPeriod:   500 * time.Millisecond,
		},
		SkipControllerNameValidation: true,
	})
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// collectForeground plays the garbage collector envtest lacks (after hold is
// closed, if set): it removes the foregroundDeletion finalizer of ns's
// Deployments and DaemonSets being deleted, whose pods (none: envtest runs
// no controllers) are then gone.
func collectForeground(ctx context.Context, ns string, hold <-chan struct{}) {
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return
		}
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, list := range []client.ObjectList{&appsv1.DeploymentList{}, &appsv1.DaemonSetList{}} {
			if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
				continue
			}
			_ = meta.EachListItem(list, func(o runtime.Object) error {
				obj := o.(client.Object)
				if obj.GetDeletionTimestamp() != nil && controllerutil.RemoveFinalizer(obj, metav1.FinalizerDeleteDependents) {
					_ = env.Client.Update(ctx, obj)
				}
				return nil
			})
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}
