//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/names"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// localPID returns the pid of a container run by the local pod runner
// (containerID local://<pid>), or 0 on a cluster with a real kubelet.
func localPID(cs corev1.ContainerStatus) int {
	pid, err := strconv.Atoi(strings.TrimPrefix(cs.ContainerID, "local://"))
	if !strings.HasPrefix(cs.ContainerID, "local://") || err != nil {
		return 0
	}
	return pid
}

// operandPod returns the one Ready pod of the operand Deployment.
func operandPod(ctx context.Context, t *testing.T) *corev1.Pod {
	t.Helper()
	d := &appsv1.Deployment{}
	key := client.ObjectKey{Namespace: operandNamespace(), Name: config.OperandDeploymentName}
	var pod *corev1.Pod
	waitFor(ctx, t, "one Ready pod of deployment "+key.String(), func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, key, d); err != nil {
			return false, err
		}
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil {
			return false, err
		}
		pods := &corev1.PodList{}
		if err := cluster.List(ctx, pods, client.InNamespace(key.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return false, err
		}
		var ready []*corev1.Pod
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.DeletionTimestamp == nil && podReady(p) {
				ready = append(ready, p)
			}
		}
		if len(ready) != 1 || len(pods.Items) != 1 {
			return false, nil
		}
		pod = ready[0]
		return true, nil
	})
	return pod
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TestOperandPodRunsItsSpec: the operand pod is Ready because every
// container is running and answers its readiness probe; where the pod runs
// as local processes (the local cluster), each process runs exactly the
// container's command and args.
func TestOperandPodRunsItsSpec(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pod := operandPod(ctx, t)
	statuses := map[string]corev1.ContainerStatus{}
	for _, cs := range pod.Status.ContainerStatuses {
		statuses[cs.Name] = cs
	}
	for _, c := range pod.Spec.Containers {
		cs, ok := statuses[c.Name]
		if !ok || !cs.Ready || cs.State.Running == nil {
			t.Errorf("container %s: status %+v, want running and ready", c.Name, cs)
			continue
		}
		if c.ReadinessProbe == nil {
			t.Errorf("container %s has no readiness probe", c.Name)
		}
		pid := localPID(cs)
		if pid == 0 {
			continue
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			t.Errorf("container %s: reading the command line of pid %d: %v", c.Name, pid, err)
			continue
		}
		got := strings.Split(string(bytes.TrimRight(raw, "\x00")), "\x00")
		want := append(append([]string{}, c.Command...), c.Args...)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("container %s runs %q, want exactly the rendered %q", c.Name, got, want)
		} else {
			t.Logf("container %s: pid %d runs %s", c.Name, pid, strings.Join(got, " "))
		}
	}
}

// TestWebhooksRefuseInvalidObjects: the admission webhooks the operator
// registers are served (by the operand pod) and called by the API server:
// an invalid Machine and an invalid MachineSet are refused with a message
// naming the field.
func TestWebhooksRefuseInvalidObjects(t *testing.T) {
	ctx := kubemarkTest(t, 2*time.Minute)
	operandPod(ctx, t)

	m := newKubemarkMachine("e2e-refused-"+rand.String(5), "refused")
	m.Spec.ProviderSpec.Value.Raw = []byte(`{"apiVersion":"kubemark.machine-api-operator.io/v1alpha1","kind":"KubemarkMachineProviderSpec","cpus":"4"}`)
	err := cluster.Create(ctx, m)
	if err == nil {
		deleteMachineOnCleanup(t, m)
		t.Fatalf("machine with providerSpec field cpus was admitted; want it refused by the validating webhook")
	}
	if !strings.Contains(err.Error(), "spec.providerSpec") || !strings.Contains(err.Error(), "cpus") {
		t.Errorf("refusal %q does not name spec.providerSpec and the field cpus", err)
	}
	t.Logf("machine refused: %v", err)

	ms := newKubemarkMachineSet("e2e-refused-"+rand.String(5), 1)
	ms.Spec.Selector.MatchLabels = map[string]string{machineSetLabel: "something-else"}
	err = cluster.Create(ctx, ms)
	if err == nil {
		deleteMachineSetOnCleanup(t, ms)
		t.Fatalf("machineset whose selector does not match its template was admitted; want it refused by the validating webhook")
	}
	if !strings.Contains(err.Error(), "spec.selector") && !strings.Contains(err.Error(), "spec.template.metadata.labels") {
		t.Errorf("refusal %q does not name spec.selector or spec.template.metadata.labels", err)
	}
	t.Logf("machineset refused: %v", err)
}

// TestOperandProcessRestart (local cluster): a machine-controller process
// killed with SIGKILL is restarted (restart count +1, last state exit code
// 137), the ClusterOperator goes through the operand outage
// (Available=False, OperandUnavailable) and back to Available, and the
// restarted process renews its Lease within 30 s of the kill: its identity
// is its pod's, so it does not wait out its predecessor's 120 s lease.
func TestOperandProcessRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pod := operandPod(ctx, t)
	var before corev1.ContainerStatus
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == "machine-controller" {
			before = cs
		}
	}
	pid := localPID(before)
	if pid == 0 {
		t.Skip("the operand pod is not run by the local pod runner (make test-e2e-local); killing its process needs the node")
	}
	co, err := clusterOperator(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, err := cluster.Watch(ctx, &configv1.ClusterOperatorList{}, client.MatchingFields{"metadata.name": co.Name},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: co.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	lease := machineControllerLease(ctx, t, pod)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing pid %d: %v", pid, err)
	}
	killed := time.Now() // any renewal stamped later is the new process's
	t.Logf("killed machine-controller (pid %d)", pid)
	retaken := make(chan time.Duration, 1)
	go func() {
		defer close(retaken)
		if poll.Until(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			l := &coordinationv1.Lease{}
			if err := cluster.Get(ctx, client.ObjectKeyFromObject(lease), l); err != nil {
				return false, err
			}
			return l.Spec.RenewTime != nil && l.Spec.RenewTime.After(killed), nil
		}) == nil {
			retaken <- time.Since(killed)
		}
	}()

	sawOutage := false
	for !sawOutage {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch of the ClusterOperator ended")
			}
			if ev.Type != watch.Modified {
				continue
			}
			c := condition(ev.Object.(*configv1.ClusterOperator), configv1.OperatorAvailable)
			if c != nil && c.Status == configv1.ConditionFalse {
				t.Logf("ClusterOperator Available=False %s after %s: %s", c.Reason, time.Since(killed).Round(time.Millisecond), c.Message)
				if c.Reason != "OperandUnavailable" {
					t.Errorf("Available=False reason %s, want OperandUnavailable", c.Reason)
				}
				sawOutage = true
			}
		case <-ctx.Done():
			t.Fatal("the ClusterOperator never reported the operand outage")
		}
	}
	waitFor(ctx, t, "ClusterOperator Available again", func(ctx context.Context) (bool, error) {
		co, err := clusterOperator(ctx)
		if err != nil {
			return false, err
		}
		c := condition(co, configv1.OperatorAvailable)
		return c != nil && c.Status == configv1.ConditionTrue, nil
	})
	t.Logf("available again %s after the kill", time.Since(killed).Round(time.Millisecond))
	if took, ok := <-retaken; ok {
		t.Logf("lease %s renewed by the restarted process %s after the kill", lease.Name, took.Round(time.Millisecond))
	} else {
		t.Errorf("lease %s not renewed within 30 s of the kill: the restarted process waits for its predecessor's lease", lease.Name)
	}
	after := operandPod(ctx, t)
	for _, cs := range after.Status.ContainerStatuses {
		if cs.Name != "machine-controller" {
			continue
		}
		if cs.RestartCount != before.RestartCount+1 {
			t.Errorf("restartCount %d, want %d", cs.RestartCount, before.RestartCount+1)
		}
		if term := cs.LastTerminationState.Terminated; term == nil || term.ExitCode != 137 {
			t.Errorf("lastState %+v, want terminated with exit code 137", cs.LastTerminationState)
		}
		if localPID(cs) == pid {
			t.Errorf("the container still reports the killed pid %d", pid)
		}
	}
	if after.UID != pod.UID {
		t.Errorf("the pod was replaced (%s → %s); a restart keeps the pod", pod.Name, after.Name)
	}
}

// machineControllerLease is the Lease the machine-controller container of
// pod holds (its name depends on the platform), by its holder: the pod.
func machineControllerLease(ctx context.Context, t *testing.T, pod *corev1.Pod) *coordinationv1.Lease {
	t.Helper()
	candidates := []string{names.KubemarkLeaseName, "cluster-api-provider-vsphere-leader"}
	var found *coordinationv1.Lease
	waitFor(ctx, t, "the machine controller's Lease held by pod "+pod.Name, func(ctx context.Context) (bool, error) {
		for _, name := range candidates {
			l := &coordinationv1.Lease{}
			err := cluster.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: name}, l)
			if client.IgnoreNotFound(err) != nil {
				return false, err
			}
			if err == nil && strings.HasPrefix(ptr.Deref(l.Spec.HolderIdentity, ""), pod.Name+"_") {
				found = l
				return true, nil
			}
		}
		return false, fmt.Errorf("none of %v is held by pod %s", candidates, pod.Name)
	})
	return found
}
