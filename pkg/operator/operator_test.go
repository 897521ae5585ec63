package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/render"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/status"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

func exists(ctx context.Context, obj client.Object) (bool, error) {
	err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// TestPlatforms checks the platform table end to end: the right provider
// image, the termination handler only where it belongs, and NoOp.
func TestPlatforms(t *testing.T) {
	tests := []struct {
		name          string
		platform      configv1.PlatformType
		external      string
		providerImage string
		termination   bool
		noop          bool
	}{
		{name: "aws", platform: configv1.AWSPlatformType, providerImage: testImages.ClusterAPIControllerAWS, termination: true},
		{name: "kubemark", platform: configv1.ExternalPlatformType, external: "kubemark", providerImage: testImages.ClusterAPIControllerKubemark},
		{name: "none", platform: configv1.NonePlatformType, noop: true},
		{name: "external-other", platform: configv1.ExternalPlatformType, external: "somecloud", noop: true},
		{name: "unknown-platform", platform: configv1.LibvirtPlatformType, noop: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t)
			setInfrastructure(t, tt.platform, tt.external)
			startOperator(t, writeImages(t, testImages), harnessOptions{ns: ns})
			ctx := context.Background()
			if tt.noop {
				waitCondition(t, configv1.OperatorAvailable, configv1.ConditionTrue, status.ReasonAsExpected, "Cluster Machine API Operator is in NoOp mode")
				waitCondition(t, configv1.OperatorDegraded, configv1.ConditionFalse, "", "")
				if d, err := getDeployment(ctx, ns); err != nil || d != nil {
					t.Fatalf("NoOp rendered a deployment (err %v)", err)
				}
				co, _ := getCO(ctx)
				if len(co.Status.Versions) != 1 || co.Status.Versions[0].Version != testRelease {
					t.Errorf("versions = %v, want %s", co.Status.Versions, testRelease)
				}
				return
			}
			d := waitDeployment(t, ns)
			if got := containerImage(d, render.MachineContainer); got != tt.providerImage {
				t.Errorf("machine-controller image = %q, want %q", got, tt.providerImage)
			}
			ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: config.TerminationHandlerName}}
			if tt.termination {
				poll.Eventually(t, 10*time.Second, "termination handler", func(ctx context.Context) (bool, error) { return exists(ctx, ds) })
			} else if ok, _ := exists(ctx, ds); ok {
				t.Errorf("termination handler rendered on %s", tt.platform)
			}
			vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: config.WebhookConfigurationName}}
			poll.Eventually(t, 10*time.Second, "validating webhook with caBundle", func(ctx context.Context) (bool, error) {
				ok, err := exists(ctx, vwc)
				return ok && len(vwc.Webhooks) > 0 && len(vwc.Webhooks[0].ClientConfig.CABundle) > 0, err
			})
			if svc := vwc.Webhooks[0].ClientConfig.Service; svc == nil || svc.Namespace != ns {
				t.Errorf("webhook service = %+v, want namespace %s", svc, ns)
			}
			waitCondition(t, configv1.OperatorAvailable, configv1.ConditionFalse, status.ReasonInitializing, "")
			waitCondition(t, configv1.OperatorProgressing, configv1.ConditionTrue, status.ReasonSyncing, "Progressing towards operator: "+testRelease)
			setDeploymentAvailable(t, ns, true)
			if tt.termination {
				// envtest has no DaemonSet controller either.
				poll.Eventually(t, 10*time.Second, "daemonset status", func(ctx context.Context) (bool, error) {
					if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ds), ds); err != nil {
						return false, err
					}
					ds.Status = appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation}
					return true, env.Client.Status().Update(ctx, ds)
				})
			}
			waitCondition(t, configv1.OperatorAvailable, configv1.ConditionTrue, status.ReasonAsExpected,
				"Cluster Machine API Operator is available at operator: "+testRelease)
			waitCondition(t, configv1.OperatorProgressing, configv1.ConditionFalse, status.ReasonAsExpected, "")
			co, _ := getCO(ctx)
			if len(co.Status.RelatedObjects) == 0 {
				t.Errorf("relatedObjects not filled")
			}
		})
	}
}

// TestDriftIsReverted edits and deletes owned objects and expects them back.
func TestDriftIsReverted(t *testing.T) {
	ns := newNamespace(t)
	setInfrastructure(t, configv1.ExternalPlatformType, "kubemark")
	startOperator(t, writeImages(t, testImages), harnessOptions{ns: ns})
	ctx := context.Background()
	d := waitDeployment(t, ns)

	// An edit of a field the operator owns, by another field manager.
	for i := range d.Spec.Template.Spec.Containers {
		if d.Spec.Template.Spec.Containers[i].Name == render.MachineContainer {
			d.Spec.Template.Spec.Containers[i].Image = "example.io/tampered:1"
		}
	}
	start := time.Now()
	if err := env.Client.Update(ctx, d, client.FieldOwner("someone-else")); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 10*time.Second, "image reverted", func(ctx context.Context) (bool, error) {
		d, err := getDeployment(ctx, ns)
		return d != nil && containerImage(d, render.MachineContainer) == testImages.ClusterAPIControllerKubemark, err
	})
	t.Logf("edit reverted in %s", time.Since(start).Round(time.Millisecond))

	// Deletions.
	for _, obj := range []client.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: config.WebhookServiceName}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: config.OperandDeploymentName}},
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: config.WebhookConfigurationName}},
	} {
		old, err := exists(ctx, obj)
		if err != nil || !old {
			t.Fatalf("%T %s missing before delete: %v", obj, obj.GetName(), err)
		}
		uid := obj.GetUID()
		start := time.Now()
		if err := env.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			t.Fatal(err)
		}
		poll.Eventually(t, 10*time.Second, "recreated "+obj.GetName(), func(ctx context.Context) (bool, error) {
			ok, err := exists(ctx, obj)
			return ok && obj.GetUID() != uid, err
		})
		t.Logf("%T %s recreated in %s", obj, obj.GetName(), time.Since(start).Round(time.Millisecond))
	}
}

// TestPrune changes the platform and the MHC gate and expects obsolete
// objects to go away.
func TestPrune(t *testing.T) {
	ns := newNamespace(t)
	setInfrastructure(t, configv1.AWSPlatformType, "")
	holdGC := make(chan struct{})
	startOperator(t, writeImages(t, testImages), harnessOptions{ns: ns, holdGC: holdGC})
	ctx := context.Background()
	d := waitDeployment(t, ns)
	if !hasContainer(d, render.MachineHealthCheckContainer) {
		t.Fatal("no MHC container before the gate is set")
	}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: config.TerminationHandlerName}}
	poll.Eventually(t, 10*time.Second, "termination handler", func(ctx context.Context) (bool, error) { return exists(ctx, ds) })

	// Gate on: the MHC container goes, the rest stays.
	fg := &configv1.FeatureGate{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	if err := env.Client.Create(ctx, fg); err != nil {
		t.Fatal(err)
	}
	fg.Status.FeatureGates = []configv1.FeatureGateDetails{{
		Version: testRelease,
		Enabled: []configv1.FeatureGateAttributes{{Name: config.FeatureGateDisableMachineHealthCheck}},
	}}
	if err := env.Client.Status().Update(ctx, fg); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 10*time.Second, "MHC container removed", func(ctx context.Context) (bool, error) {
		d, err := getDeployment(ctx, ns)
		return d != nil && !hasContainer(d, render.MachineHealthCheckContainer) && hasContainer(d, render.MachineContainer), err
	})

	// AWS → None: the Deployment and DaemonSet are deleted in the foreground,
	// the webhooks and Service at once; CRDs stay (the ServiceAccounts and
	// RBAC ship in install/: the operator neither renders nor prunes them).
	setInfrastructure(t, configv1.NonePlatformType, "")
	waitCondition(t, configv1.OperatorAvailable, configv1.ConditionTrue, status.ReasonAsExpected, "NoOp")
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: config.OperandDeploymentName}}
	for _, obj := range []client.Object{deployment, ds} {
		poll.Eventually(t, 10*time.Second, "foreground deletion of "+obj.GetName(), func(ctx context.Context) (bool, error) {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			return err == nil && obj.GetDeletionTimestamp() != nil && slices.Contains(obj.GetFinalizers(), metav1.FinalizerDeleteDependents), err
		})
	}
	for _, obj := range []client.Object{
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: config.WebhookConfigurationName}},
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: config.WebhookConfigurationName}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: config.WebhookServiceName}},
	} {
		poll.Eventually(t, 10*time.Second, "pruned "+obj.GetName(), func(ctx context.Context) (bool, error) {
			ok, err := exists(ctx, obj)
			return !ok, err
		})
	}
	syncs(t, 2) // syncs while the workloads are still being deleted
	close(holdGC)
	for _, obj := range []client.Object{deployment, ds} {
		poll.Eventually(t, 10*time.Second, "pruned "+obj.GetName(), func(ctx context.Context) (bool, error) {
			ok, err := exists(ctx, obj)
			return !ok, err
		})
	}
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsGVK)
	crd.SetName("machines.machine.openshift.io")
	if ok, err := exists(ctx, crd); !ok {
		t.Fatalf("Machine CRD was removed: %v", err)
	}
}

// TestMetal3WebhooksFollowPlatform: the metal3 remediation webhooks exist
// on BareMetal only; a platform change away prunes them and keeps the
// Machine API's.
func TestMetal3WebhooksFollowPlatform(t *testing.T) {
	ns := newNamespace(t)
	setInfrastructure(t, configv1.BareMetalPlatformType, "")
	images := testImages
	images.ClusterAPIControllerBareMetal = "example.io/baremetal:test"
	startOperator(t, writeImages(t, images), harnessOptions{ns: ns})
	metal3 := []client.Object{
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: config.Metal3RemediationWebhookConfigurationName}},
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: config.Metal3RemediationWebhookConfigurationName}},
	}
	vwc := metal3[0].(*admissionregistrationv1.ValidatingWebhookConfiguration)
	poll.Eventually(t, 10*time.Second, "metal3 remediation webhooks with the webhook CA", func(ctx context.Context) (bool, error) {
		ok, err := exists(ctx, vwc)
		return ok && len(vwc.Webhooks) == 2 && len(vwc.Webhooks[0].ClientConfig.CABundle) > 0, err
	})
	if s := vwc.Webhooks[0].ClientConfig.Service; s == nil || s.Namespace != ns || s.Name != config.MachineWebhookServiceName {
		t.Errorf("metal3 webhook service = %+v, want %s/%s", s, ns, config.MachineWebhookServiceName)
	}
	poll.Eventually(t, 10*time.Second, "mutating metal3 remediation webhooks", func(ctx context.Context) (bool, error) { return exists(ctx, metal3[1]) })

	setInfrastructure(t, configv1.AWSPlatformType, "")
	for _, obj := range metal3 {
		poll.Eventually(t, 10*time.Second, "pruned "+describeObject(obj), func(ctx context.Context) (bool, error) {
			ok, err := exists(ctx, obj)
			return !ok, err
		})
	}
	for _, obj := range []client.Object{
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: config.WebhookConfigurationName}},
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: config.WebhookConfigurationName}},
	} {
		if ok, err := exists(context.Background(), obj); !ok {
			t.Errorf("%s gone after the switch to AWS (err %v)", describeObject(obj), err)
		}
	}
}

func describeObject(obj client.Object) string {
	return fmt.Sprintf("%T %s", obj, obj.GetName())
}

// TestSteadyStateMakesNoWrites counts API requests over syncs that surely
// ran (each brought by a watch event and waited for), and across a restart
// of the operator.
func TestSteadyStateMakesNoWrites(t *testing.T) {
	ns := newNamespace(t)
	setInfrastructure(t, configv1.ExternalPlatformType, "kubemark")
	images := writeImages(t, testImages)
	op := startOperator(t, images, harnessOptions{ns: ns})
	waitDeployment(t, ns)
	setDeploymentAvailable(t, ns, true)
	waitCondition(t, configv1.OperatorAvailable, configv1.ConditionTrue, status.ReasonAsExpected, "")
	waitCondition(t, configv1.OperatorProgressing, configv1.ConditionFalse, "", "")

	// Settled: a sync made no write (the last transition's event may still
	// have been on its way before).
	poll.Eventually(t, 30*time.Second, "a sync without a write", func(context.Context) (bool, error) {
		before := op.counter.Writes()
		syncs(t, 1)
		return op.counter.Writes() == before, nil
	})
	op.counter.Reset()
	syncs(t, 5)
	if w := op.counter.Writes(); w != 0 {
		t.Fatalf("steady state made %d write requests in 5 syncs: %v", w, op.counter.WriteRequests())
	}
	t.Logf("steady state, 5 syncs: %d requests, 0 writes", op.counter.Total())

	// A restart must not write either.
	op.stop()
	before := reconcileCount()
	restarted := startOperator(t, images, harnessOptions{ns: ns})
	poll.Eventually(t, 20*time.Second, "restarted operator synced", func(context.Context) (bool, error) {
		return reconcileCount() > before, nil
	})
	syncs(t, 3)
	if w := restarted.counter.Writes(); w != 0 {
		t.Fatalf("restart made %d write requests: %v", w, restarted.counter.WriteRequests())
	}
	t.Logf("restart: %d requests, 0 writes", restarted.counter.Total())
}

// syncs brings n syncs, one after another: each touches an annotation of
// the ClusterOperator (watched; the operator writes only its status) and
// waits until a sync has finished since.
func syncs(t *testing.T, n int) {
	t.Helper()
	for range n {
		before := reconcileCount()
		co := &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: "machine-api"}}
		touch := fmt.Appendf(nil, `{"metadata":{"annotations":{"test.machine-api-operator/touched":%q}}}`, time.Now().Format(time.RFC3339Nano))
		if err := env.Client.Patch(context.Background(), co, client.RawPatch(types.MergePatchType, touch)); err != nil {
			t.Fatal(err)
		}
		poll.Eventually(t, 10*time.Second, "a sync after the touch", func(context.Context) (bool, error) {
			return reconcileCount() > before, nil
		})
	}
}

// TestStatusTransitions: install, operand outage after install, recovery, and
// one event per transition.
func TestStatusTransitions(t *testing.T) {
	ns := newNamespace(t)
	setInfrastructure(t, configv1.ExternalPlatformType, "kubemark")
	startOperator(t, writeImages(t, testImages), harnessOptions{ns: ns, degradedAfter: 2 * time.Second})
	waitDeployment(t, ns)
	waitCondition(t, configv1.OperatorAvailable, configv1.ConditionFalse, status.ReasonInitializing, "")
	setDeploymentAvailable(t, ns, true)
	waitCondition(t, configv1.OperatorAvailable, configv1.ConditionTrue, status.ReasonAsExpected, "")

	// Outage after install.
	setDeploymentAvailable(t, ns, false)
	waitCondition(t, configv1.OperatorAvailable, configv1.ConditionFalse, status.ReasonOperandUnavailable, "")
	waitCondition(t, configv1.OperatorDegraded, configv1.ConditionTrue, status.ReasonOperandUnavailable, "unavailable")

	// Recovery.
	setDeploymentAvailable(t, ns, true)
	waitCondition(t, configv1.OperatorAvailable, configv1.ConditionTrue, status.ReasonAsExpected, "")
	waitCondition(t, configv1.OperatorDegraded, configv1.ConditionFalse, status.ReasonAsExpected, "")

	co, err := getCO(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var events map[string]int
	poll.Eventually(t, 10*time.Second, "transition events", func(context.Context) (bool, error) {
		events = coEvents(t, co.UID)
		for _, reason := range []string{"AvailableFalse", "AvailableTrue", "DegradedTrue", "DegradedFalse"} {
			if events[reason] == 0 {
				return false, nil
			}
		}
		return true, nil
	})
	if events["DegradedTrue"] != 1 {
		t.Errorf("DegradedTrue recorded %d times, want 1 (events are per transition)", events["DegradedTrue"])
	}
}

// TestBadInput: every input a user can get wrong is reported on the
// ClusterOperator with its reason, and the operand is left as it was.
func TestBadInput(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		breaks func(t *testing.T, images string) // makes the input bad
		reason string
		msg    func(images string) string
	}{
		{name: "images.json missing", reason: config.ReasonInvalidImagesJSON,
			breaks: func(t *testing.T, images string) { mustRemove(t, images) },
			msg:    func(images string) string { return images }},
		{name: "images.json unreadable", reason: config.ReasonInvalidImagesJSON,
			breaks: func(t *testing.T, images string) { mustRemove(t, images); mustMkdir(t, images) },
			msg:    func(images string) string { return images }},
		{name: "images.json malformed", reason: config.ReasonInvalidImagesJSON,
			breaks: func(t *testing.T, images string) { mustWrite(t, images, `{"machineAPIOperator": `) },
			msg:    func(images string) string { return images }},
		{name: "images.json without machineAPIOperator", reason: config.ReasonInvalidImagesJSON,
			breaks: func(t *testing.T, images string) { mustWrite(t, images, `{"clusterAPIControllerKubemark": "x"}`) },
			msg:    func(images string) string { return "machineAPIOperator" }},
		{name: "no infrastructure", reason: config.ReasonInfrastructureNotFound,
			breaks: func(t *testing.T, _ string) {
				if err := env.Client.Delete(ctx, &configv1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}); err != nil {
					t.Fatal(err)
				}
			},
			msg: func(string) string { return "infrastructures.config.openshift.io \"cluster\" not found" }},
		{name: "no platform", reason: config.ReasonInvalidInfrastructure,
			breaks: func(t *testing.T, _ string) {
				infra := &configv1.Infrastructure{}
				if err := env.Client.Get(ctx, client.ObjectKey{Name: "cluster"}, infra); err != nil {
					t.Fatal(err)
				}
				infra.Status.PlatformStatus = nil
				if err := env.Client.Status().Update(ctx, infra); err != nil {
					t.Fatal(err)
				}
			},
			msg: func(string) string { return "platformStatus" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t)
			setInfrastructure(t, configv1.ExternalPlatformType, "kubemark")
			images := writeImages(t, testImages)
			startOperator(t, images, harnessOptions{ns: ns})
			before := waitDeployment(t, ns)
			setDeploymentAvailable(t, ns, true)
			waitCondition(t, configv1.OperatorAvailable, configv1.ConditionTrue, status.ReasonAsExpected, "")

			tt.breaks(t, images)
			// degradedAfter is 0 in these tests: the report is immediate.
			waitCondition(t, configv1.OperatorDegraded, configv1.ConditionTrue, tt.reason, tt.msg(images))

			after, err := getDeployment(ctx, ns)
			if err != nil || after == nil {
				t.Fatalf("operand deployment gone after bad input (err %v)", err)
			}
			if after.Generation != before.Generation || containerImage(after, render.MachineContainer) != containerImage(before, render.MachineContainer) {
				t.Errorf("operand changed after bad input: generation %d → %d", before.Generation, after.Generation)
			}
			co, _ := getCO(ctx)
			if c := coCondition(co, configv1.OperatorAvailable); c.Status != configv1.ConditionTrue {
				t.Errorf("Available = %s (%s) after bad input, want True: the operand still runs", c.Status, c.Message)
			}

			// Fixing the input clears Degraded.
			switch tt.reason {
			case config.ReasonInvalidImagesJSON:
				_ = os.RemoveAll(images)
				writeTo(t, images, testImages)
			default:
				setInfrastructure(t, configv1.ExternalPlatformType, "kubemark")
			}
			waitCondition(t, configv1.OperatorDegraded, configv1.ConditionFalse, status.ReasonAsExpected, "")
		})
	}
}

func mustRemove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

func mustMkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// coEvents counts the events recorded on the ClusterOperator by reason.
func coEvents(t *testing.T, uid types.UID) map[string]int {
	t.Helper()
	counts := map[string]int{}
	list := &eventsv1List{}
	if err := env.Client.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.Regarding.Kind == "ClusterOperator" && e.Regarding.UID == uid {
			n := int(e.DeprecatedCount)
			if e.Series != nil {
				n = int(e.Series.Count)
			}
			if n == 0 {
				n = 1
			}
			counts[e.Reason] += n
		}
	}
	return counts
}

var apiextensionsGVK = apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition")

type eventsv1List = eventsv1.EventList

func writeTo(t *testing.T, path string, images config.Images) {
	t.Helper()
	data, err := json.Marshal(images)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, path, string(data))
}

// reconcileCount reads controller-runtime's reconcile counter of the
// operator's controller from the process-wide metrics registry.
func reconcileCount() float64 {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return 0
	}
	var total float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "machine-api-operator" {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

// TestAWSToVSphere: switched from AWS to vSphere, the operator deploys the
// vSphere provider from clusterAPIControllerVSphere (the operator's own
// image, as in OpenShift's payload): the machine-controller container runs
// this project's /machine-controller-manager, AWS's termination handler is
// pruned, and once the Deployment is available the ClusterOperator is
// Available and not Degraded. Breaks if: VSphere were NoOp or unsupported
// (no Deployment, or Available=False).
func TestAWSToVSphere(t *testing.T) {
	ns := newNamespace(t)
	setInfrastructure(t, configv1.AWSPlatformType, "")
	startOperator(t, writeImages(t, testImages), harnessOptions{ns: ns})
	waitDeployment(t, ns)
	setDeploymentAvailable(t, ns, true)
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: config.TerminationHandlerName}}
	poll.Eventually(t, 10*time.Second, "termination handler status", func(ctx context.Context) (bool, error) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ds), ds); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		ds.Status = appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation} // envtest has no DaemonSet controller
		return true, env.Client.Status().Update(ctx, ds)
	})
	waitCondition(t, configv1.OperatorAvailable, configv1.ConditionTrue, status.ReasonAsExpected, "")

	setInfrastructure(t, configv1.VSpherePlatformType, "")
	var d *appsv1.Deployment
	poll.Eventually(t, 30*time.Second, "the machine controller from clusterAPIControllerVSphere", func(ctx context.Context) (bool, error) {
		var err error
		d, err = getDeployment(ctx, ns)
		return d != nil && containerImage(d, render.MachineContainer) == testImages.ClusterAPIControllerVSphere, err
	})
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == render.MachineContainer && (len(c.Command) != 1 || c.Command[0] != "/machine-controller-manager") {
			t.Errorf("machine-controller command %q, want /machine-controller-manager", c.Command)
		}
	}
	poll.Eventually(t, 10*time.Second, "AWS's termination handler pruned", func(ctx context.Context) (bool, error) {
		ok, err := exists(ctx, ds)
		return !ok, err
	})
	setDeploymentAvailable(t, ns, true)
	waitCondition(t, configv1.OperatorAvailable, configv1.ConditionTrue, status.ReasonAsExpected, "")
	waitCondition(t, configv1.OperatorDegraded, configv1.ConditionFalse, "", "")
	waitCondition(t, configv1.OperatorProgressing, configv1.ConditionFalse, "", "")
}
