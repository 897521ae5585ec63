package kubemark

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/machine-api-operator/machine-api-operator/pkg/nodeutil"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
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

// waitKwokRounds waits until kwok has renewed the Lease of the Node witness
// (a Node it manages) n more times: proof that kwok ran n more rounds of its
// node management since the call.
func waitKwokRounds(t *testing.T, witness string, n int) {
	t.Helper()
	seen := map[time.Time]bool{}
	poll.Eventually(t, time.Duration(n)*10*time.Second, fmt.Sprintf("kwok to renew the lease of %s %d times", witness, n), func(context.Context) (bool, error) {
		l := getLease(t, witness)
		if leaseHolder(l) == "" || l.Spec.RenewTime == nil {
			return false, fmt.Errorf("lease %+v", l)
		}
		seen[l.Spec.RenewTime.Time] = true
		// The first renewTime seen is where the count starts.
		return len(seen) > n, fmt.Errorf("%d renewals so far", len(seen)-1)
	})
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
	// A healthy Machine's Node, which kwok keeps managing throughout: the
	// renewals of its Lease show that kwok is at work.
	witness := newMachine(t, "")
	if err := a.Create(ctx, witness); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{m.Name, witness.Name} {
		poll.Eventually(t, 30*time.Second, "kwok to set node "+name+" Ready and hold its lease", func(context.Context) (bool, error) {
			n, l := getNode(t, name), getLease(t, name)
			if !nodeutil.IsReady(n) || leaseHolder(l) == "" || leaseHolder(l) == LeaseHolderIdentity {
				return false, fmt.Errorf("Ready condition %+v, lease holder %q", nodeutil.ReadyCondition(n), leaseHolder(l))
			}
			return true, nil
		})
	}
	reg := getNode(t, m.Name).CreationTimestamp.Time

	// Fail it. kwok renews its lease every second, so taking it over may meet
	// a conflict: the controller retries such errors.
	clock.SetTime(reg.Add(time.Hour + time.Second))
	update := func() {
		t.Helper()
		poll.Eventually(t, 10*time.Second, "Update to succeed (asking to be called again)", func(context.Context) (bool, error) {
			err := a.Update(ctx, m)
			_, ok := provider.AsRequeueAfter(err)
			return ok, err
		})
	}
	update()
	lease := getLease(t, m.Name)
	renewed := lease.Spec.RenewTime.Time
	// kwok runs 4 rounds (it renews the witness's lease in each); had it
	// still been managing the failed node, it would have renewed that lease
	// and re-initialised the node in them. The provider reasserts meanwhile,
	// as the controller would.
	for range 4 {
		waitKwokRounds(t, witness.Name, 1)
		update()
	}
	n := assertUnhealthy(t, m.Name, reg.Add(time.Hour))
	lease = getLease(t, m.Name)
	if leaseHolder(lease) != LeaseHolderIdentity || !lease.Spec.RenewTime.Time.Equal(renewed) {
		t.Errorf("lease renewed or taken back while unhealthy: holder %s renewTime %s (was %s)", leaseHolder(lease), lease.Spec.RenewTime, renewed)
	}
	rv := n.ResourceVersion
	waitKwokRounds(t, witness.Name, 2)
	if getNode(t, m.Name).ResourceVersion != rv {
		t.Errorf("the unhealthy node was written to during 2 rounds of kwok: %+v", getNode(t, m.Name).Status.Conditions)
	}

	// Recover: kwok takes the node back and sets it Ready.
	clock.SetTime(reg.Add(2*time.Hour + time.Second))
	update()
	poll.Eventually(t, 30*time.Second, "kwok to set the recovered node Ready", func(context.Context) (bool, error) {
		n := getNode(t, m.Name)
		return nodeutil.IsReady(n), fmt.Errorf("Ready condition %+v", nodeutil.ReadyCondition(n))
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
