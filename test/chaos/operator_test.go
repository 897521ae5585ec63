//go:build chaos

package chaos

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/watch"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

var binDir = flag.String("chaos.bin-dir", "bin", "Directory with machine-api-operator (for `render`, the oracle of the operand's end state).")

// conditionLog records every ClusterOperator condition transition it sees.
type conditionLog struct {
	mu    sync.Mutex
	last  map[configv1.ClusterStatusConditionType]configv1.ConditionStatus
	trans []string // "Type: From→To"
}

func watchConditions(ctx context.Context, t *testing.T) *conditionLog {
	l := &conditionLog{last: map[configv1.ClusterStatusConditionType]configv1.ConditionStatus{}}
	co := &configv1.ClusterOperator{}
	if err := cluster.Get(ctx, client.ObjectKey{Name: config.ClusterOperatorName}, co); err != nil {
		t.Fatal(err)
	}
	for _, c := range co.Status.Conditions {
		l.last[c.Type] = c.Status
	}
	wctx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	rv := co.ResourceVersion
	go func() {
		for wctx.Err() == nil {
			var w watch.Interface
			if poll.Until(wctx, 0, func(ctx context.Context) (bool, error) {
				var err error
				w, err = cluster.Watch(ctx, &configv1.ClusterOperatorList{}, client.MatchingFields{"metadata.name": co.Name},
					&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
				return err == nil, err
			}) != nil {
				return // the test ended
			}
			for ev := range w.ResultChan() {
				o, ok := ev.Object.(*configv1.ClusterOperator)
				if !ok {
					continue
				}
				rv = o.ResourceVersion
				l.mu.Lock()
				for _, c := range o.Status.Conditions {
					if prev, seen := l.last[c.Type]; seen && prev != c.Status {
						l.trans = append(l.trans, fmt.Sprintf("%s: %s→%s", c.Type, prev, c.Status))
					}
					l.last[c.Type] = c.Status
				}
				l.mu.Unlock()
			}
		}
	}()
	return l
}

// take returns the transitions since the last call.
func (l *conditionLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.trans
	l.trans = nil
	return out
}

// checkOnce fails the test when a transition repeats (a flap) or Degraded
// turned True.
func checkOnce(t *testing.T, phase string, trans []string) {
	t.Helper()
	t.Logf("%s: ClusterOperator transitions %v", phase, trans)
	seen := map[string]bool{}
	for _, tr := range trans {
		if seen[tr] {
			t.Errorf("%s: transition %q happened more than once: %v", phase, tr, trans)
		}
		seen[tr] = true
		if tr == "Degraded: False→True" {
			t.Errorf("%s: Degraded turned True", phase)
		}
	}
}

func setPlatform(ctx context.Context, t *testing.T, platform string) {
	t.Helper()
	patch := `{"status":{"platformStatus":{"type":"` + platform + `"}}}`
	infra := &configv1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	waitFor(ctx, t, "infrastructure platform "+platform, func(ctx context.Context) (bool, error) {
		return true, cluster.Status().Patch(ctx, infra, client.RawPatch(types.MergePatchType, []byte(patch)))
	})
}

func waitSettled(ctx context.Context, t *testing.T, noOp bool) {
	t.Helper()
	waitFor(ctx, t, "clusteroperator Available, not Progressing, not Degraded", func(ctx context.Context) (bool, error) {
		co := &configv1.ClusterOperator{}
		if err := cluster.Get(ctx, client.ObjectKey{Name: config.ClusterOperatorName}, co); err != nil {
			return false, err
		}
		want := map[configv1.ClusterStatusConditionType]configv1.ConditionStatus{
			configv1.OperatorAvailable: configv1.ConditionTrue, configv1.OperatorProgressing: configv1.ConditionFalse, configv1.OperatorDegraded: configv1.ConditionFalse,
		}
		for _, c := range co.Status.Conditions {
			if w, ok := want[c.Type]; ok {
				if c.Status != w {
					return false, nil
				}
				if c.Type == configv1.OperatorAvailable && strings.Contains(c.Message, "NoOp") != noOp {
					return false, nil
				}
				delete(want, c.Type)
			}
		}
		return len(want) == 0, nil
	})
}

// renderFor runs `machine-api-operator render` for the cluster's current
// inputs: the oracle of what the operand must end as.
func renderFor(ctx context.Context, t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	dir := t.TempDir()
	infra := &configv1.Infrastructure{}
	if err := cluster.Get(ctx, client.ObjectKey{Name: "cluster"}, infra); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	if err := cluster.Get(ctx, client.ObjectKey{Namespace: namespace, Name: config.ImagesConfigMapName}, cm); err != nil {
		t.Fatal(err)
	}
	infra.APIVersion, infra.Kind = "config.openshift.io/v1", "Infrastructure"
	data, _ := json.Marshal(infra)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	args := []string{"render", "--images-json", write("images.json", []byte(cm.Data["images.json"])),
		"--infrastructure", write("infra.json", data), "--output-dir", filepath.Join(dir, "out"), "--namespace", namespace}
	co := &configv1.ClusterOperator{}
	if err := cluster.Get(ctx, client.ObjectKey{Name: config.ClusterOperatorName}, co); err == nil && len(co.Status.Versions) > 0 {
		args = append(args, "--release-version", co.Status.Versions[0].Version)
	}
	out, err := exec.CommandContext(ctx, filepath.Join(*binDir, "machine-api-operator"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("render: %v\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "out", "*.yaml"))
	var objs []*unstructured.Unstructured
	for _, f := range files {
		b, _ := os.ReadFile(f)
		u := &unstructured.Unstructured{}
		if err := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096).Decode(&u.Object); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		objs = append(objs, u)
	}
	return objs
}

// subset reports where live differs from rendered: every rendered value
// must be in live, and lists must have exactly the rendered length (an
// addition is drift too). Server defaults (fields rendered leaves out) are
// allowed.
func subset(path string, rendered, live any) []string {
	switch r := rendered.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return []string{path + ": missing"}
		}
		var diffs []string
		for k, v := range r {
			diffs = append(diffs, subset(path+"."+k, v, l[k])...)
		}
		return diffs
	case []any:
		l, ok := live.([]any)
		if !ok || len(l) != len(r) {
			return []string{fmt.Sprintf("%s: %d items live, %d rendered", path, len(l), len(r))}
		}
		var diffs []string
		for i := range r {
			diffs = append(diffs, subset(fmt.Sprintf("%s[%d]", path, i), r[i], l[i])...)
		}
		return diffs
	default:
		if fmt.Sprint(rendered) != fmt.Sprint(live) {
			return []string{fmt.Sprintf("%s: live %v, rendered %v", path, live, rendered)}
		}
		return nil
	}
}

// checkRendered checks that every object render produces exists as
// rendered (metadata: labels only).
func checkRendered(ctx context.Context, t *testing.T, phase string) {
	t.Helper()
	objs := renderFor(ctx, t)
	var diffs []string
	waitFor(ctx, t, phase+": the live objects as rendered", func(ctx context.Context) (bool, error) {
		diffs = nil
		for _, want := range objs {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(want.GroupVersionKind())
			if err := cluster.Get(ctx, client.ObjectKeyFromObject(want), live); err != nil {
				diffs = append(diffs, fmt.Sprintf("%s %s: %v", want.GetKind(), want.GetName(), err))
				continue
			}
			r := want.DeepCopy().Object
			delete(r, "metadata")
			l := live.DeepCopy().Object
			diffs = append(diffs, subset(want.GetKind()+"/"+want.GetName(), r, l)...)
			for k, v := range want.GetLabels() {
				if live.GetLabels()[k] != v {
					diffs = append(diffs, fmt.Sprintf("%s %s: label %s", want.GetKind(), want.GetName(), k))
				}
			}
		}
		return len(diffs) == 0, nil
	})
	t.Logf("%s: %d rendered objects live as rendered", phase, len(objs))
}

// TestOperatorKilledDuringChanges: the operator is killed right after a
// platform change (kubemark → None, then killed during None → kubemark) and right after its webhook
// CA is deleted (a forced certificate rotation). It ends with the operand
// exactly as rendered for the final input and each ClusterOperator condition
// transition happening once.
func TestOperatorKilledDuringChanges(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	r := rng(t.Name())
	waitSettled(ctx, t, false)
	log := watchConditions(ctx, t)
	t.Cleanup(func() { setPlatform(context.Background(), t, "External") })

	for _, step := range []struct {
		platform string
		noOp     bool
	}{{"None", true}, {"External", false}} {
		phase := "platform " + step.platform
		start := time.Now()
		setPlatform(ctx, t, step.platform)
		if !step.noOp {
			// Killed while it rolls the operand out again (each kill costs
			// a lease duration, 137 s, before the restarted process leads).
			pause(ctx, time.Duration(r.IntN(1500))*time.Millisecond)
			v := kill(ctx, t, r, operatorSelector, "machine-api-operator")
			t.Logf("%s: SIGKILL machine-api-operator (pid %d) %s after the change", phase, v.pid, time.Since(start).Round(time.Millisecond))
		}
		waitSettled(ctx, t, step.noOp)
		if step.noOp {
			waitFor(ctx, t, "operand removed on the NoOp platform", func(ctx context.Context) (bool, error) {
				err := cluster.Get(ctx, client.ObjectKey{Namespace: namespace, Name: config.OperandDeploymentName}, &appsv1.Deployment{})
				return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
			})
		} else {
			checkRendered(ctx, t, phase)
		}
		how := "with the operator killed"
		if step.noOp {
			how = "(no kill)"
		}
		t.Logf("FIGURE %s %s: settled %s after the change", phase, how, time.Since(start).Round(time.Second))
		checkOnce(t, phase, log.take())
	}

	// Certificate rotation: a new CA, new serving certificates, a new bundle.
	phase := "certificate rotation"
	ca := &corev1.Secret{}
	caKey := client.ObjectKey{Namespace: namespace, Name: "machine-api-operator-webhook-ca"}
	if err := cluster.Get(ctx, caKey, ca); err != nil {
		t.Skipf("no operator-issued webhook CA (service-ca cluster?): %v", err)
	}
	oldCA := ca.UID
	start := time.Now()
	if err := cluster.Delete(ctx, ca); err != nil {
		t.Fatal(err)
	}
	pause(ctx, time.Duration(r.IntN(500))*time.Millisecond)
	v := kill(ctx, t, r, operatorSelector, "machine-api-operator")
	t.Logf("%s: SIGKILL machine-api-operator (pid %d) %s after deleting the CA", phase, v.pid, time.Since(start).Round(time.Millisecond))
	waitFor(ctx, t, "a new CA whose certificate is in both webhook configurations and signs the serving certificate", func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, caKey, ca); err != nil || ca.UID == oldCA {
			return false, client.IgnoreNotFound(err)
		}
		pool, err := certutil.NewPoolFromBytes(ca.Data["tls.crt"])
		if err != nil {
			return false, fmt.Errorf("CA secret: %w", err)
		}
		serving := &corev1.Secret{}
		if err := cluster.Get(ctx, client.ObjectKey{Namespace: namespace, Name: config.WebhookCertSecretName}, serving); err != nil {
			return false, err
		}
		certs, err := certutil.ParseCertsPEM(serving.Data["tls.crt"])
		if err != nil {
			return false, fmt.Errorf("serving certificate: %w", err)
		}
		if _, err := certs[0].Verify(x509.VerifyOptions{Roots: pool}); err != nil {
			return false, fmt.Errorf("serving certificate: %w", err)
		}
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := cluster.Get(ctx, client.ObjectKey{Name: config.WebhookConfigurationName}, vwc); err != nil {
			return false, err
		}
		for _, w := range vwc.Webhooks {
			if !bytes.Contains(w.ClientConfig.CABundle, bytes.TrimSpace(ca.Data["tls.crt"])) {
				return false, nil
			}
		}
		return true, nil
	})
	// The webhook server serves the new certificate: admission works.
	waitFor(ctx, t, "the webhook refuses an invalid MachineSet with the rotated certificate", func(ctx context.Context) (bool, error) {
		ms := newMachineSet("chaos-refused")
		ms.Spec.Selector.MatchLabels = map[string]string{poolLabel: "something-else"}
		err := cluster.Create(ctx, ms)
		if err == nil {
			_ = cluster.Delete(ctx, ms)
			return false, fmt.Errorf("an invalid MachineSet was admitted")
		}
		return strings.Contains(err.Error(), "denied the request"), nil
	})
	waitSettled(ctx, t, false)
	checkRendered(ctx, t, phase)
	t.Logf("FIGURE %s with the operator killed: settled %s after the CA was deleted", phase, time.Since(start).Round(time.Second))
	checkOnce(t, phase, log.take())
}

// leases of each operand binary (OpenShift's names) and container.
var operandLeases = map[string]string{
	"machineset-controller":          "cluster-api-provider-machineset-leader",
	"machine-controller":             "cluster-api-provider-kubemark-leader",
	"nodelink-controller":            "cluster-api-provider-nodelink-leader",
	"machine-healthcheck-controller": "cluster-api-provider-healthcheck-leader",
}

func leaseHolder(ctx context.Context, name string) (string, error) {
	l := &coordinationv1.Lease{}
	if err := cluster.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, l); err != nil {
		return "", err
	}
	return ptr.Deref(l.Spec.HolderIdentity, ""), nil
}

func scaleDeployment(ctx context.Context, t *testing.T, name string, n int32, selector map[string]string) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	waitFor(ctx, t, fmt.Sprintf("deployment %s scaled to %d", name, n), func(ctx context.Context) (bool, error) {
		return true, cluster.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(patch)))
	})
	waitFor(ctx, t, fmt.Sprintf("%d ready pods of %s", n, name), func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := cluster.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels(selector)); err != nil {
			return false, err
		}
		ready := 0
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
					ready++
				}
			}
		}
		return ready == int(n) && len(pods.Items) == int(n), nil
	})
}

// failover kills the leader of lease (a process of container name) and
// returns how long until another process holds the lease.
func failover(ctx context.Context, t *testing.T, selector map[string]string, name, lease string) (took time.Duration, leaderPod string) {
	t.Helper()
	// Identities are <hostname>_<uuid>; the local pod runner sets the
	// hostname to the pod's name. Wait until a running process holds the
	// lease (after a scale, an earlier holder's lease may still be valid).
	var holder, pod string
	var victim *container
	waitFor(ctx, t, "a running "+name+" holding lease "+lease, func(ctx context.Context) (bool, error) {
		var err error
		if holder, err = leaseHolder(ctx, lease); err != nil {
			return false, err
		}
		pod, _, _ = strings.Cut(holder, "_")
		cs, err := containers(ctx, selector, name)
		if err != nil {
			return false, err
		}
		for i := range cs {
			if cs[i].pod == pod {
				victim = &cs[i]
				return true, nil
			}
		}
		return false, nil
	})
	killed := time.Now()
	if err := syscallKill(victim.pid); err != nil {
		t.Fatal(err)
	}
	// The new leader may be the standby in the other pod or the killed
	// container's restarted process (a new identity): either is a failover.
	waitFor(ctx, t, "a new process holding lease "+lease, func(ctx context.Context) (bool, error) {
		h, err := leaseHolder(ctx, lease)
		if err != nil {
			return false, err
		}
		leaderPod, _, _ = strings.Cut(h, "_")
		return h != holder && h != "", nil
	})
	return time.Since(killed), leaderPod
}

// failoverSlack bounds a failover beyond the lease duration, the issue's
// bound. A standby checks the lease every retry period (250 ms) plus
// client-go's jitter of up to 120% (so every 250-550 ms): it notices the
// leader's last write up to 0.55 s late and takes the expired lease up to
// 0.55 s after it expires (pkg/leaderelection); this test sees the new
// holder up to 250 ms (its poll) plus a write's latency later. The leader
// writes the lease every 10 s, so a failover measured from the kill is
// often shorter than the lease duration.
const failoverSlack = 2 * time.Second

// TestLeaderFailover: with two replicas of each operand binary, and then of
// the operator, the leader is killed; a standby in the other pod takes the
// lease within the lease duration + 2 s and acts, and no standby ever
// started its controllers while another process led.
func TestLeaderFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	// The operator would scale its operand back to 1: stop it first.
	scaleDeployment(ctx, t, "machine-api-operator", 0, operatorSelector)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		scaleDeployment(ctx, t, "machine-api-operator", 1, operatorSelector)
		waitSettled(ctx, t, false)
	})
	scaleDeployment(ctx, t, config.OperandDeploymentName, 2, operandSelector)
	for name, lease := range operandLeases {
		waitFor(ctx, t, "lease "+lease+" held", func(ctx context.Context) (bool, error) {
			h, err := leaseHolder(ctx, lease)
			return h != "", client.IgnoreNotFound(err)
		})
		_ = name
	}
	const operandLease = 120 * time.Second
	var wg sync.WaitGroup
	var mu sync.Mutex
	results := map[string]time.Duration{}
	// The machineset controller must act, not only lead: a MachineSet
	// scaled at the kill gets its Machine from the new leader.
	ms := newMachineSet("chaos-failover")
	if err := cluster.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		scale(ctx, t, ms, 0)
		checkEndState(ctx, t, ms, 0)
		_ = cluster.Delete(ctx, ms)
	})
	start := time.Now()
	for name, lease := range operandLeases {
		wg.Go(func() {
			took, pod := failover(ctx, t, operandSelector, name, lease)
			mu.Lock()
			results[name] = took
			mu.Unlock()
			t.Logf("FIGURE %s: lease %s taken by %s %s after the leader was killed", name, lease, pod, took.Round(time.Millisecond))
		})
	}
	scale(ctx, t, ms, 1)
	var created time.Duration
	waitFor(ctx, t, "the new machineset leader creates the Machine", func(ctx context.Context) (bool, error) {
		machines := &machinev1beta1.MachineList{}
		if err := cluster.List(ctx, machines, client.InNamespace(namespace), client.MatchingLabels{poolLabel: ms.Name}); err != nil {
			return false, err
		}
		if len(machines.Items) == 0 {
			return false, nil
		}
		created = machines.Items[0].CreationTimestamp.Sub(start)
		return true, nil
	})
	wg.Wait()
	t.Logf("FIGURE machineset controller acted (Machine created) %s after its leader was killed", created.Round(time.Second))
	for name, took := range results {
		if took > operandLease+failoverSlack {
			t.Errorf("%s: failover took %s, more than the lease duration %s + %s", name, took, operandLease, failoverSlack)
		}
	}
	if created > operandLease+failoverSlack+time.Second { // creationTimestamp has 1 s resolution
		t.Errorf("the Machine was created %s after the kill, more than the lease duration + %s", created, failoverSlack)
	}
	checkStandbysIdle(t)

	// The operator: two replicas, kill the leader, the standby reverts drift.
	scaleDeployment(ctx, t, "machine-api-operator", 2, operatorSelector)
	waitSettled(ctx, t, false)
	took, pod := failover(ctx, t, operatorSelector, "machine-api-operator", config.OperatorLeaseName)
	t.Logf("FIGURE operator: lease taken by %s %s after the leader was killed", pod, took.Round(time.Millisecond))
	if took > 137*time.Second+failoverSlack {
		t.Errorf("operator failover took %s, more than the lease duration 137 s + %s", took, failoverSlack)
	}
	// Acting: the operand's replicas (2, set above) go back to the rendered 1.
	waitFor(ctx, t, "the new operator leader scales the operand back to 1", func(ctx context.Context) (bool, error) {
		d := &appsv1.Deployment{}
		if err := cluster.Get(ctx, client.ObjectKey{Namespace: namespace, Name: config.OperandDeploymentName}, d); err != nil {
			return false, err
		}
		return ptr.Deref(d.Spec.Replicas, 1) == 1, nil
	})
	checkStandbysIdle(t)
	scaleDeployment(ctx, t, "machine-api-operator", 1, operatorSelector)
}

// checkStandbysIdle reads every container log of the operator's and the
// operand's pods: a process may start its controllers ("Starting workers",
// "Starting Controller") only after it acquired its lease.
func checkStandbysIdle(t *testing.T) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(*logDir, "machine-api-*", "*.log"))
	if len(logs) == 0 {
		t.Errorf("no container logs under %s", *logDir)
	}
	for _, f := range logs {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Error(err)
			continue
		}
		// A log holds every run of the container; check each run.
		for i, run := range strings.Split(string(data), "=== container started") {
			acquired := strings.Index(strings.ToLower(run), "successfully acquired lease")
			for _, marker := range []string{"Starting workers", "Starting Controller"} {
				if at := strings.Index(run, marker); at >= 0 && (acquired < 0 || at < acquired) {
					t.Errorf("%s (run %d): %q before the lease was acquired", f, i, marker)
				}
			}
		}
	}
}

var logDir = flag.String("chaos.log-dir", ".local/logs", "The local pod runner's container log directory.")
