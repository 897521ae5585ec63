//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider/vsphere"
	"github.com/machine-api-operator/machine-api-operator/test/vsphere/standin"
)

// requireVSphere skips on clusters whose platform is not VSphere and returns
// a client of the vCenter in GOVC_URL, GOVC_USERNAME, GOVC_PASSWORD and
// GOVC_INSECURE (`. .local/vsphere.env` after `make run PLATFORM=vsphere`).
func requireVSphere(ctx context.Context, t *testing.T) *govmomi.Client {
	t.Helper()
	if p := expectedOperand(ctx, t).platform; p != "VSphere" {
		t.Skipf("platform %s: the vSphere tests need the VSphere platform (make run PLATFORM=vsphere)", p)
	}
	raw := os.Getenv("GOVC_URL")
	if raw == "" {
		t.Fatal("GOVC_URL is not set: source the vCenter's environment (. .local/vsphere.env after make run PLATFORM=vsphere)")
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("GOVC_URL %q: %v", raw, err)
	}
	u.User = url.UserPassword(os.Getenv("GOVC_USERNAME"), os.Getenv("GOVC_PASSWORD"))
	vc, err := govmomi.NewClient(ctx, u, os.Getenv("GOVC_INSECURE") == "1" || os.Getenv("GOVC_INSECURE") == "true")
	if err != nil {
		t.Fatalf("logging in to %s: %v", raw, err)
	}
	t.Cleanup(func() { _ = vc.Logout(context.Background()) })
	return vc
}

// vsphereTemplateMachineSet returns a vSphere MachineSet of the cluster (make
// run PLATFORM=vsphere creates one) whose Machine template the test copies:
// the inventory names are the cluster's, not the test's.
func vsphereTemplateMachineSet(ctx context.Context, t *testing.T) (*machinev1beta1.MachineSet, *machinev1beta1.VSphereMachineProviderSpec) {
	t.Helper()
	var list machinev1beta1.MachineSetList
	if err := cluster.List(ctx, &list, client.InNamespace(operandNamespace())); err != nil {
		t.Fatalf("listing MachineSets: %v", err)
	}
	for i := range list.Items {
		ms := &list.Items[i]
		raw := ms.Spec.Template.Spec.ProviderSpec.Value
		if raw == nil {
			continue
		}
		spec := &machinev1beta1.VSphereMachineProviderSpec{}
		if err := json.Unmarshal(raw.Raw, spec); err == nil && spec.Kind == "VSphereMachineProviderSpec" && spec.Workspace != nil {
			return ms, spec
		}
	}
	t.Skip("no vSphere MachineSet to copy the Machine template from (make run PLATFORM=vsphere creates one)")
	return nil, nil
}

// setLabel selects a MachineSet's Machines (and names its VMs' prefix).
const setLabel = "machine.openshift.io/cluster-api-machineset"

// newVSphereMachineSet creates a MachineSet named prefix-<random> with 0
// replicas and the cluster's vSphere Machine template (deleted, with its
// Machines, when the test ends), and returns it with a reader of the VMs in
// its workspace folder.
func newVSphereMachineSet(ctx context.Context, t *testing.T, vc *govmomi.Client, prefix string) (*machinev1beta1.MachineSet, *standin.Kubelet) {
	t.Helper()
	base, spec := vsphereTemplateMachineSet(ctx, t)
	name := prefix + "-" + rand.String(5)
	ms := &machinev1beta1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: operandNamespace(), Labels: base.Labels},
		Spec: machinev1beta1.MachineSetSpec{
			Replicas: ptr.To[int32](0),
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{setLabel: name}},
			Template: *base.Spec.Template.DeepCopy(),
		},
	}
	ms.Spec.Template.Labels = map[string]string{setLabel: name}
	for k, v := range base.Spec.Template.Labels {
		if k != setLabel {
			ms.Spec.Template.Labels[k] = v
		}
	}
	createMachineSet(ctx, t, ms)
	return ms, &standin.Kubelet{VCenter: vc.Client, Folder: spec.Workspace.Folder}
}

// vsphereSetRunning reports whether the MachineSet has exactly n Running
// Machines with Ready Nodes whose vsphere:// providerIDs are the BIOS UUIDs
// of exactly n powered-on VMs of the same names (no VM more, none less).
func vsphereSetRunning(ctx context.Context, vms *standin.Kubelet, ms *machinev1beta1.MachineSet, n int) (bool, error) {
	machines, err := machinesWithLabels(ctx, map[string]string{setLabel: ms.Name})
	if err != nil {
		return false, err
	}
	want := map[string]string{} // machine name -> providerID
	for _, m := range machines {
		if ptr.Deref(m.Status.Phase, "") != "Running" || m.Status.NodeRef == nil || m.Spec.ProviderID == nil {
			return false, fmt.Errorf("machine %s: phase %q, providerID %v", m.Name, ptr.Deref(m.Status.Phase, ""), ptr.Deref(m.Spec.ProviderID, ""))
		}
		node := &corev1.Node{}
		if err := cluster.Get(ctx, client.ObjectKey{Name: m.Status.NodeRef.Name}, node); err != nil {
			return false, err
		}
		if !nodeReady(node) {
			return false, fmt.Errorf("node %s of %s not Ready", node.Name, m.Name)
		}
		want[m.Name] = *m.Spec.ProviderID
	}
	if len(want) != n {
		return false, fmt.Errorf("%d Running Machines, want %d", len(want), n)
	}
	got, err := machineSetVMs(ctx, vms, ms.Name)
	if err != nil {
		return false, err
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return false, fmt.Errorf("powered-on VMs %v, want exactly the Machines' %v", got, want)
	}
	return true, nil
}

// vsphereSetGone reports whether no Machine, Node or VM of the MachineSet is
// left.
func vsphereSetGone(ctx context.Context, vms *standin.Kubelet, ms *machinev1beta1.MachineSet) (bool, error) {
	machines, err := machinesWithLabels(ctx, map[string]string{setLabel: ms.Name})
	if err != nil {
		return false, err
	}
	if n := len(machines); n > 0 {
		return false, fmt.Errorf("%d Machines left", n)
	}
	var nodes corev1.NodeList
	if err := cluster.List(ctx, &nodes); err != nil {
		return false, err
	}
	for _, n := range nodes.Items {
		if strings.HasPrefix(n.Name, ms.Name+"-") {
			return false, fmt.Errorf("node %s left", n.Name)
		}
	}
	all, err := vms.VMs(ctx)
	if err != nil {
		return false, err
	}
	left := slices.DeleteFunc(all, func(vm standin.VM) bool { return !strings.HasPrefix(vm.Name, ms.Name+"-") })
	if len(left) > 0 {
		return false, fmt.Errorf("%d VMs left (%s first)", len(left), left[0].Name)
	}
	return true, nil
}

// TestVSphereScaleMatchesVCenter scales a new vSphere MachineSet 0 → 5 → 0:
// at 5, five Running Machines with Ready Nodes whose vsphere:// providerIDs
// are the BIOS UUIDs of exactly five powered-on VMs of the same names in the
// workspace folder; at 0, no Machine, no Node and no VM of the MachineSet is
// left.
func TestVSphereScaleMatchesVCenter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	vc := requireVSphere(ctx, t)
	ms, vms := newVSphereMachineSet(ctx, t, vc, "e2e-vsphere")

	scaleMachineSet(ctx, t, ms, 5)
	waitFor(ctx, t, "5 Running Machines with Ready Nodes matching 5 powered-on VMs", func(ctx context.Context) (bool, error) {
		return vsphereSetRunning(ctx, vms, ms, 5)
	})
	scaleMachineSet(ctx, t, ms, 0)
	waitFor(ctx, t, "no Machine, Node or VM of the MachineSet left", func(ctx context.Context) (bool, error) {
		return vsphereSetGone(ctx, vms, ms)
	})
}

// TestVSphereScaleFromZeroAnnotations: the cluster's vSphere MachineSet (make run PLATFORM=vsphere's worker set:
// numCPUs 4, memoryMiB 16384) carries OpenShift's scale-from-zero annotations machine.openshift.io/vCPU and
// machine.openshift.io/memoryMb with its providerSpec's values, and none of kubemark's other ones.
func TestVSphereScaleFromZeroAnnotations(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	requireVSphere(ctx, t)
	ms, spec := vsphereTemplateMachineSet(ctx, t)
	want := map[string]string{vCPUAnnotation: strconv.Itoa(int(spec.NumCPUs)), memoryMbAnnotation: strconv.FormatInt(spec.MemoryMiB, 10)}
	waitFor(ctx, t, "scale-from-zero annotations on machineset "+ms.Name, func(ctx context.Context) (bool, error) {
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(ms), ms); err != nil {
			return false, err
		}
		return ms.Annotations[vCPUAnnotation] == want[vCPUAnnotation] && ms.Annotations[memoryMbAnnotation] == want[memoryMbAnnotation], nil
	})
	for _, k := range []string{maxPodsAnnotation, capacityCPUAnnotation, capacityMemoryAnnotation, capacityMaxPodsAnnotation} {
		if v, ok := ms.Annotations[k]; ok {
			t.Errorf("annotation %s=%q on a vSphere MachineSet: OpenShift sets only %s and %s", k, v, vCPUAnnotation, memoryMbAnnotation)
		}
	}
	t.Logf("machineset %s: %s=%s %s=%s", ms.Name, vCPUAnnotation, ms.Annotations[vCPUAnnotation], memoryMbAnnotation, ms.Annotations[memoryMbAnnotation])
}

// machineSetVMs maps the powered-on VMs of the MachineSet (named after its
// Machines) in the folder to their vsphere:// providerIDs; a VM that is not
// powered on is an error.
func machineSetVMs(ctx context.Context, k *standin.Kubelet, machineSet string) (map[string]string, error) {
	all, err := k.VMs(ctx)
	if err != nil {
		return nil, err
	}
	got := map[string]string{}
	for _, vm := range all {
		if !strings.HasPrefix(vm.Name, machineSet+"-") {
			continue
		}
		if !vm.PoweredOn {
			return nil, fmt.Errorf("VM %s is not powered on", vm.Name)
		}
		got[vm.Name] = standin.ProviderID(vm.BIOSUUID)
	}
	return got, nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// vcsimPauseFor is how long TestVSpherePausedVCenter stops vcsim: past the
// deployed provider's per-request vCenter timeout (machine-controller-manager
// runs it with the default APITimeout), so requests in flight time out.
const vcsimPauseFor = vsphere.DefaultAPITimeout + 10*time.Second

// TestVSpherePausedVCenter stops the vcsim process (SIGSTOP; $VCSIM_PID,
// `make run PLATFORM=vsphere` writes it to .local/machine-api.vcsim.pid) for
// longer than the provider's vCenter timeout while a clone of a 3-replica
// MachineSet is in flight, then resumes it: the MachineSet reaches 3
// Running Machines backed by exactly 3 VMs. Scaled to 0 with another pause
// while the Machines are being deleted, nothing is left.
func TestVSpherePausedVCenter(t *testing.T) {
	raw := os.Getenv("VCSIM_PID")
	if raw == "" {
		t.Skip("VCSIM_PID is not set: run with VCSIM_PID=$(cat .local/machine-api.vcsim.pid) on a make run PLATFORM=vsphere cluster (the test stops and resumes that process)")
	}
	pid, err := strconv.Atoi(raw)
	if err != nil || pid <= 1 {
		t.Fatalf("VCSIM_PID=%q is not a process id", raw)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("VCSIM_PID=%d: %v (is vcsim running? .local/machine-api.vcsim.pid)", pid, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	vc := requireVSphere(ctx, t)
	ms, vms := newVSphereMachineSet(ctx, t, vc, "e2e-vsphere-pause")
	// Registered after the MachineSet's cleanup, so it runs first: vcsim
	// answers again before the MachineSet's Machines are deleted.
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })

	inFlight := make(chan string, 1)
	list := &machinev1beta1.MachineList{}
	if err := cluster.List(ctx, list, client.InNamespace(ms.Namespace), client.MatchingLabels{setLabel: ms.Name}); err != nil {
		t.Fatal(err)
	}
	watchFrom(t, list, list.ResourceVersion, func(ev watch.Event) {
		m, ok := ev.Object.(*machinev1beta1.Machine)
		if !ok || m.Status.ProviderStatus == nil || ptr.Deref(m.Status.Phase, "") == "Running" {
			return
		}
		var st machinev1beta1.VSphereMachineProviderStatus
		if json.Unmarshal(m.Status.ProviderStatus.Raw, &st) == nil && st.TaskRef != "" {
			select {
			case inFlight <- fmt.Sprintf("machine %s (phase %q) waits on vCenter task %s", m.Name, ptr.Deref(m.Status.Phase, ""), st.TaskRef):
			default:
			}
		}
	}, client.InNamespace(ms.Namespace), client.MatchingLabels{setLabel: ms.Name})

	pause := func(why string) {
		t.Helper()
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatalf("stopping vcsim (pid %d): %v", pid, err)
		}
		t.Logf("vcsim stopped for %s: %s", vcsimPauseFor, why)
		select {
		case <-time.After(vcsimPauseFor): // the fault itself, not a wait for a condition
		case <-ctx.Done():
		}
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatalf("resuming vcsim (pid %d): %v", pid, err)
		}
		t.Log("vcsim resumed")
	}

	scaleMachineSet(ctx, t, ms, 3)
	select {
	case why := <-inFlight:
		pause(why)
	case <-ctx.Done():
		t.Fatal("no Machine of the MachineSet recorded a vCenter task")
	}
	waitFor(ctx, t, "3 Running Machines with Ready Nodes matching exactly 3 powered-on VMs", func(ctx context.Context) (bool, error) {
		return vsphereSetRunning(ctx, vms, ms, 3)
	})

	scaleMachineSet(ctx, t, ms, 0)
	waitFor(ctx, t, "a Machine of the MachineSet deleting while its VM exists", func(ctx context.Context) (bool, error) {
		machines, err := machinesWithLabels(ctx, map[string]string{setLabel: ms.Name})
		if err != nil {
			return false, err
		}
		got, err := vms.VMs(ctx)
		if err != nil {
			return false, err
		}
		for _, m := range machines {
			if m.DeletionTimestamp == nil {
				continue
			}
			for _, vm := range got {
				if vm.Name == m.Name {
					return true, nil
				}
			}
		}
		return false, fmt.Errorf("none of %d Machines is deleting with its VM present", len(machines))
	})
	pause("Machines of the MachineSet are being deleted")
	waitFor(ctx, t, "no Machine, Node or VM of the MachineSet left", func(ctx context.Context) (bool, error) {
		return vsphereSetGone(ctx, vms, ms)
	})
}
