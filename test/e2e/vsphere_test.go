//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// TestVSphereScaleMatchesVCenter scales a new vSphere MachineSet 0 → 5 → 0:
// at 5, five Running Machines with Ready Nodes whose vsphere:// providerIDs
// are the BIOS UUIDs of exactly five powered-on VMs of the same names in the
// workspace folder; at 0, no Machine, no Node and no VM of the MachineSet is
// left.
func TestVSphereScaleMatchesVCenter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	vc := requireVSphere(ctx, t)
	base, spec := vsphereTemplateMachineSet(ctx, t)

	name := "e2e-vsphere-" + rand.String(5)
	ms := &machinev1beta1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: operandNamespace(), Labels: base.Labels},
		Spec: machinev1beta1.MachineSetSpec{
			Replicas: ptr.To[int32](0),
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"machine.openshift.io/cluster-api-machineset": name}},
			Template: *base.Spec.Template.DeepCopy(),
		},
	}
	ms.Spec.Template.Labels = map[string]string{"machine.openshift.io/cluster-api-machineset": name}
	for k, v := range base.Spec.Template.Labels {
		if k != "machine.openshift.io/cluster-api-machineset" {
			ms.Spec.Template.Labels[k] = v
		}
	}
	if err := cluster.Create(ctx, ms); err != nil {
		t.Fatalf("creating MachineSet %s: %v", name, err)
	}
	t.Cleanup(func() { _ = cluster.Delete(context.Background(), ms) })
	vms := &standin.Kubelet{VCenter: vc.Client, Folder: spec.Workspace.Folder}

	scale := func(replicas int32) {
		t.Helper()
		patch := client.MergeFrom(ms.DeepCopy())
		ms.Spec.Replicas = ptr.To(replicas)
		if err := cluster.Patch(ctx, ms, patch); err != nil {
			t.Fatalf("scaling %s to %d: %v", name, replicas, err)
		}
	}

	scale(5)
	waitFor(ctx, t, "5 Running Machines with Ready Nodes matching 5 powered-on VMs", func(ctx context.Context) (bool, error) {
		var machines machinev1beta1.MachineList
		if err := cluster.List(ctx, &machines, client.InNamespace(ms.Namespace), client.MatchingLabels{"machine.openshift.io/cluster-api-machineset": name}); err != nil {
			return false, err
		}
		want := map[string]string{} // machine name -> providerID
		for _, m := range machines.Items {
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
		if len(want) != 5 {
			return false, fmt.Errorf("%d Running Machines, want 5", len(want))
		}
		got, err := machineSetVMs(ctx, vms, name)
		if err != nil {
			return false, err
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return false, fmt.Errorf("powered-on VMs %v, want exactly the Machines' %v", got, want)
		}
		return true, nil
	})

	scale(0)
	waitFor(ctx, t, "no Machine, Node or VM of the MachineSet left", func(ctx context.Context) (bool, error) {
		var machines machinev1beta1.MachineList
		if err := cluster.List(ctx, &machines, client.InNamespace(ms.Namespace), client.MatchingLabels{"machine.openshift.io/cluster-api-machineset": name}); err != nil {
			return false, err
		}
		if n := len(machines.Items); n > 0 {
			return false, fmt.Errorf("%d Machines left", n)
		}
		var nodes corev1.NodeList
		if err := cluster.List(ctx, &nodes); err != nil {
			return false, err
		}
		for _, n := range nodes.Items {
			if strings.HasPrefix(n.Name, name+"-") {
				return false, fmt.Errorf("node %s left", n.Name)
			}
		}
		all, err := vms.VMs(ctx)
		if err != nil {
			return false, err
		}
		left := slices.DeleteFunc(all, func(vm standin.VM) bool { return !strings.HasPrefix(vm.Name, name+"-") })
		if len(left) > 0 {
			return false, fmt.Errorf("%d VMs left (%s first)", len(left), left[0].Name)
		}
		return true, nil
	})
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
