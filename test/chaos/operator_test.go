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
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/watch"
	certutil "k8s.io/client-go/util/cert"
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
	var rt retakes
	defer rt.report(t, "operator SIGKILLed")

	for _, step := range []struct {
		platform string
		noOp     bool
	}{{"None", true}, {"External", false}} {
		phase := "platform " + step.platform
		start := time.Now()
		setPlatform(ctx, t, step.platform)
		if !step.noOp {
			// Killed while it rolls the operand out again (the restarted
			// process takes its lease back at once).
			pause(ctx, time.Duration(r.IntN(1500))*time.Millisecond)
			v := kill(ctx, t, r, operatorSelector, "machine-api-operator")
			rt.watch(ctx, v, time.Now())
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
	rt.watch(ctx, v, time.Now())
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
		// A providerSpec rule: the webhook's, not one of the admission policies the API server runs itself.
		ms := newMachineSet("chaos-refused")
		ms.Spec.Template.Spec.ProviderSpec.Value.Raw = []byte(`{"apiVersion":"kubemark.machine-api-operator.io/v1alpha1","kind":"KubemarkMachineProviderSpec","cpus":"4"}`)
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
