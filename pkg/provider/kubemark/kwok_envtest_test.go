package kubemark

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machine"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
)

// kwokStages is the kwok configuration of the test: one Stage that sets a
// Node Ready whenever it is not (as kwok's default node-initialize does).
const kwokStages = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-initialize
spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ["True"]
  next:
    statusTemplate: |
      conditions:
      - type: Ready
        status: "True"
        reason: KubeletReady
        message: kept Ready by kwok
        lastHeartbeatTime: {{ Now | Quote }}
        lastTransitionTime: {{ Now | Quote }}
`

// startKwok runs the kwok controller (bin/kwok, built by make tools) against
// the test API server with the given node selection flag; it holds node
// Leases (of 4s here, renewed every second). It is stopped when the test
// ends.
func startKwok(t *testing.T, manageFlag string) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin", "kwok")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s not found: run make tools (%v)", bin, err)
	}
	dir := t.TempDir()
	cfg := env.Config
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kubeconfig.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kubeconfig.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kubeconfig.CurrentContext = "envtest"
	kcPath := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kubeconfig, kcPath); err != nil {
		t.Fatal(err)
	}
	stagesPath := filepath.Join(dir, "kwok.yaml")
	if err := os.WriteFile(stagesPath, []byte(kwokStages), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.Command(bin, "--kubeconfig="+kcPath, "--config="+stagesPath,
		manageFlag, "--node-lease-duration-seconds=4")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.Env = append(os.Environ(), "HOME="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("kwok output:\n%s", logs.String())
		}
	})
}

// eventually polls cond every 200ms until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func isReady(n *corev1.Node) bool {
	c := readyCondition(n)
	return c != nil && c.Status == corev1.ConditionTrue
}

func leaseHolder(l *coordinationv1.Lease) string {
	if l == nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// TestHealthSimulationWithKwok runs the health simulation against a real kwok
// controller: the failed node stays not Ready although kwok is running, and
// after the recovery kwok makes it Ready again. Both ways kwok selects nodes
// are covered: all nodes (kwokctl's binary runtime, the local cluster) and
// the kwok.x-k8s.io/node=fake annotation (kwokctl's other runtimes).
func TestHealthSimulationWithKwok(t *testing.T) {
	for name, flag := range map[string]string{
		"all-nodes":  "--manage-all-nodes=true",
		"annotation": "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
	} {
		t.Run(name, func(t *testing.T) { testHealthSimulationWithKwok(t, flag) })
	}
}

func testHealthSimulationWithKwok(t *testing.T, manageFlag string) {
	a, clock := setup(t, Options{})
	ctx := t.Context()
	startKwok(t, manageFlag)
	m := newMachine(t, `"health":{"mode":"Periodic","unhealthyAfter":"1h","unhealthyFor":"1h"}`)
	if err := a.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	var kwokID string
	eventually(t, 30*time.Second, "kwok to set the node Ready and hold its lease", func() bool {
		l := getLease(t, m.Name)
		kwokID = leaseHolder(l)
		return isReady(getNode(t, m.Name)) && kwokID != ""
	})
	reg := getNode(t, m.Name).CreationTimestamp.Time

	// Fail it. kwok renews its lease every second, so taking it over may meet
	// a conflict: the controller retries such errors.
	clock.Set(reg.Add(time.Hour + time.Second))
	update := func() {
		t.Helper()
		eventually(t, 10*time.Second, "Update to succeed", func() bool {
			_, ok := machine.AsRequeueAfter(a.Update(ctx, m))
			return ok
		})
	}
	update()
	lease := getLease(t, m.Name)
	renewed := lease.Spec.RenewTime.Time
	// kwok would have renewed its 4s lease about 4 times in this interval and
	// re-initialised the node at once had it still been managing it. The
	// provider reasserts meanwhile, as the controller would.
	for range 4 {
		time.Sleep(time.Second)
		update()
	}
	n := assertUnhealthy(t, m.Name, reg.Add(time.Hour))
	lease = getLease(t, m.Name)
	if leaseHolder(lease) != LeaseHolderIdentity || !lease.Spec.RenewTime.Time.Equal(renewed) {
		t.Errorf("lease renewed or taken back while unhealthy: holder %s renewTime %s (was %s)", leaseHolder(lease), lease.Spec.RenewTime, renewed)
	}
	rv := n.ResourceVersion
	time.Sleep(2 * time.Second)
	if getNode(t, m.Name).ResourceVersion != rv {
		t.Errorf("the unhealthy node was written to: %+v", getNode(t, m.Name).Status.Conditions)
	}

	// Recover: kwok takes the node back and sets it Ready.
	clock.Set(reg.Add(2*time.Hour + time.Second))
	update()
	eventually(t, 30*time.Second, "kwok to set the recovered node Ready", func() bool {
		return isReady(getNode(t, m.Name))
	})
	if h := leaseHolder(getLease(t, m.Name)); h == LeaseHolderIdentity || h == "" {
		t.Errorf("lease holder after recovery %q, want kwok's", h)
	}
	if getNode(t, m.Name).Annotations[KwokNodeAnnotation] != "fake" {
		t.Error("kwok annotation not restored")
	}

	// Delete: the node goes away for good.
	if err := a.Delete(ctx, m); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Exists(context.Background(), m); err != nil || ok {
		t.Errorf("Exists after Delete: %v, %v", ok, err)
	}
}
