//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/nodeutil"
	"github.com/machine-api-operator/machine-api-operator/test/vsphere/standin"
)

// kubeletCallTimeout bounds one logs or exec call: the API server answers at
// once from a loopback kubelet endpoint, or fails at once.
const kubeletCallTimeout = 10 * time.Second

// Messages of the local cluster's kwok kubelet server (hack/kwokctl.yaml's
// ClusterLogs, kwok's answer for a pod without an exec rule).
const (
	simulatedLogLine  = "This pod is simulated by kwok: no container runs, so it has no logs."
	noExecForPauseMsg = `no exec found for container "pause"`
)

// unclearKubeletError names what makes a logs or exec error a failure to reach
// the kubelet rather than the kubelet's answer ("" if nothing does): a name
// looked up in DNS, a dial that failed or hung, the call's own deadline.
func unclearKubeletError(msg string) string {
	for _, marker := range []string{"lookup ", "no such host", "dial tcp", "i/o timeout", "deadline exceeded", "context canceled"} {
		if strings.Contains(msg, marker) {
			return marker
		}
	}
	return ""
}

// kubectlPath is $KUBECTL, else the checkout's bin/kubectl (make tools),
// else kubectl from PATH.
func kubectlPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("KUBECTL"); p != "" {
		return p
	}
	if p, err := filepath.Abs("../../bin/kubectl"); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("no kubectl: set KUBECTL or run make tools")
	}
	return p
}

// kubectl runs kubectl against $KUBECONFIG, killed when ctx ends; it returns
// stdout and, on failure, an error carrying stderr.
func kubectl(ctx context.Context, t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, kubectlPath(t), append([]string{"--kubeconfig", os.Getenv("KUBECONFIG")}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: no answer within the deadline: %w (stderr %q)", strings.Join(args, " "), ctx.Err(), stderr.String())
	}
	if err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// TestKubeletCallsOnKubemarkNode runs `kubectl logs` and `kubectl exec`
// against a pod on a kubemark Machine's Node (checkKubeletCalls).
// Breaks if: hack/kwokctl.yaml loses kubelet-preferred-address-types
// (the API server looks the Node's name up in DNS: "lookup ...: no such host"),
// its kubelet-port ("dial tcp 127.x.y.z:10250: connect: connection refused")
// or its ClusterLogs (kwok answers "no logs found" instead of the log line).
func TestKubeletCallsOnKubemarkNode(t *testing.T) {
	ctx := kubemarkTest(t, 3*time.Minute)
	m := newKubemarkMachine("e2e-kubelet-"+rand.String(5), "kubelet")
	createMachine(ctx, t, m)
	nodeName, _ := waitRunning(ctx, t, m)
	checkKubeletCalls(ctx, t, nodeName)
}

// TestVSphereKubeletCallsOnStandInNode is TestKubeletCallsOnKubemarkNode on a
// Node of the vSphere stand-in kubelet (make run PLATFORM=vsphere's workers).
// Breaks if: as TestKubeletCallsOnKubemarkNode.
func TestVSphereKubeletCallsOnStandInNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if p := expectedOperand(ctx, t).platform; p != "VSphere" {
		t.Skipf("platform %s: the stand-in kubelet runs on the VSphere platform (make run PLATFORM=vsphere)", p)
	}
	var nodeName string
	waitFor(ctx, t, "a Ready Node of the stand-in kubelet", func(ctx context.Context) (bool, error) {
		nodes := &corev1.NodeList{}
		if err := cluster.List(ctx, nodes, client.HasLabels{standin.StandInLabel}); err != nil {
			return false, err
		}
		for i := range nodes.Items {
			if nodeutil.IsReady(&nodes.Items[i]) {
				nodeName = nodes.Items[i].Name
				return true, nil
			}
		}
		return false, nil
	})
	checkKubeletCalls(ctx, t, nodeName)
}

// checkKubeletCalls runs `kubectl logs` and `kubectl exec` against a pod bound
// to the Node. Either way they answer within kubeletCallTimeout with the
// kubelet's answer, never with a failure to reach it; on the local cluster
// that answer is kwok's, served at the Node's loopback InternalIP: the
// simulated pod's log line, and a clear refusal to exec.
func checkKubeletCalls(ctx context.Context, t *testing.T, nodeName string) {
	t.Helper()
	local := localPID(operandPod(ctx, t).Status.ContainerStatuses[0]) != 0
	node := &corev1.Node{}
	if err := cluster.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
		t.Fatal(err)
	}
	if local {
		// What the API server dials: the InternalIP, which must be loopback.
		for _, a := range node.Status.Addresses {
			ip, err := netip.ParseAddr(a.Address)
			if a.Type == corev1.NodeInternalIP && (err != nil || !ip.IsLoopback()) {
				t.Errorf("node %s InternalIP %q is not a loopback address", nodeName, a.Address)
			}
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-kubelet-"}}
	if err := cluster.Create(ctx, ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() { _ = cluster.Delete(context.Background(), ns) })
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pause", Namespace: ns.Name},
		Spec: corev1.PodSpec{
			NodeName:   nodeName,
			Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	if err := cluster.Create(ctx, pod); err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	waitFor(ctx, t, "pod "+ns.Name+"/pause Running on "+nodeName, func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err
		}
		return pod.Status.Phase == corev1.PodRunning, nil
	})

	t.Run("logs", func(t *testing.T) {
		callCtx, cancel := context.WithTimeout(ctx, kubeletCallTimeout)
		defer cancel()
		out, err := kubectl(callCtx, t, "-n", ns.Name, "logs", pod.Name, "-c", "pause")
		switch {
		case err != nil && unclearKubeletError(err.Error()) != "":
			t.Fatalf("logs did not reach the kubelet (%q): %v", unclearKubeletError(err.Error()), err)
		case local && (err != nil || !strings.Contains(out, simulatedLogLine)):
			t.Fatalf("logs on the local cluster: got %q, error %v; want the line %q", out, err, simulatedLogLine)
		case err == nil && strings.TrimSpace(out) == "":
			t.Fatalf("logs succeeded with no content")
		}
		t.Logf("logs: %q, error %v", strings.TrimSpace(out), err)
	})

	t.Run("exec", func(t *testing.T) {
		callCtx, cancel := context.WithTimeout(ctx, kubeletCallTimeout)
		defer cancel()
		out, err := kubectl(callCtx, t, "-n", ns.Name, "exec", pod.Name, "-c", "pause", "--", "true")
		switch {
		case err != nil && unclearKubeletError(err.Error()) != "":
			t.Fatalf("exec did not reach the kubelet (%q): %v", unclearKubeletError(err.Error()), err)
		case local && (err == nil || !strings.Contains(err.Error(), noExecForPauseMsg)):
			t.Fatalf("exec on the local cluster: error %v; want one saying %q", err, noExecForPauseMsg)
		}
		t.Logf("exec: output %q, error %v", out, err)
	})
}
