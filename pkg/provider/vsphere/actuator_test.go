package vsphere

import (
	"encoding/base64"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi/vim25/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// Create clones the template with the spec's settings and the Machine's UID
// as instance UUID, then powers the VM on; Update reports providerID,
// addresses, providerStatus, the instance-state annotation and the failure
// domain's region/zone labels.
func TestCreateThenUpdate(t *testing.T) {
	fd := configv1.VSpherePlatformFailureDomainSpec{Name: "fd1", Region: "region-a", Zone: "zone-1", Server: "127.0.0.1",
		Topology: configv1.VSpherePlatformTopology{Datacenter: "DC0", ComputeCluster: "/DC0/host/DC0_C0", Datastore: "/DC0/datastore/LocalDS_0"}}
	e := newSimEnv(t, fd)
	m := e.newMachine("worker-0", nil)

	err := call(m, e.a.Create, true)
	if !requeued(err) {
		t.Fatalf("first Create: got %v, want a requeue while the clone task runs", err)
	}
	if ref := status(t, m).TaskRef; ref == "" {
		t.Fatal("first Create left no taskRef in providerStatus")
	}
	if err := e.until(m, e.a.Create, true); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if n := e.vmsNamed("worker-0"); n != 1 {
		t.Fatalf("%d VMs named worker-0, want 1", n)
	}
	vm := e.vm("worker-0")
	p := e.props(vm, "config", "runtime.powerState")
	if p.Config.InstanceUuid != string(m.UID) {
		t.Errorf("instance UUID %q, want the Machine's UID %q", p.Config.InstanceUuid, m.UID)
	}
	if p.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOn {
		t.Errorf("power state %q, want poweredOn", p.Runtime.PowerState)
	}
	if p.Config.Hardware.NumCPU != 4 || p.Config.Hardware.MemoryMB != 8192 {
		t.Errorf("hardware: %d CPUs, %d MiB; want 4, 8192", p.Config.Hardware.NumCPU, p.Config.Hardware.MemoryMB)
	}
	extra := map[string]string{}
	for _, o := range p.Config.ExtraConfig {
		if v, ok := o.GetOptionValue().Value.(string); ok {
			extra[o.GetOptionValue().Key] = v
		}
	}
	wantIgnition := base64.StdEncoding.EncodeToString([]byte(`{"ignition":{"version":"3.2.0"}}`))
	if extra["guestinfo.ignition.config.data"] != wantIgnition || extra["guestinfo.ignition.config.data.encoding"] != "base64" || extra["guestinfo.hostname"] != "worker-0" {
		t.Errorf("extraConfig ignition/hostname: %v", extra)
	}
	if st := status(t, m); st.InstanceState == nil || *st.InstanceState != "poweredOn" {
		t.Errorf("providerStatus.instanceState %v, want poweredOn", st.InstanceState)
	}

	// vcsim as VMware tools: the guest reports an IP on its NIC.
	e.SetGuestIP("worker-0", "10.0.0.7")
	if ok, err := e.a.Exists(e.ctx, m); err != nil || !ok {
		t.Fatalf("Exists: %v, %v; want true", ok, err)
	}
	if err := call(m, e.a.Update, true); err != nil {
		t.Fatalf("Update: %v", err)
	}
	if want := "vsphere://" + strings.ToLower(p.Config.Uuid); m.Spec.ProviderID == nil || *m.Spec.ProviderID != want {
		t.Errorf("providerID %v, want %s", m.Spec.ProviderID, want)
	}
	wantAddrs := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.7"}, {Type: corev1.NodeInternalDNS, Address: "worker-0"}}
	if !equality.Semantic.DeepEqual(m.Status.Addresses, wantAddrs) {
		t.Errorf("addresses %v, want %v", m.Status.Addresses, wantAddrs)
	}
	if st := status(t, m); st.InstanceID == nil || *st.InstanceID != p.Config.Uuid {
		t.Errorf("providerStatus.instanceId %v, want the BIOS UUID %s", st.InstanceID, p.Config.Uuid)
	}
	stored := &machinev1beta1.Machine{}
	if err := e.kube.Get(e.ctx, client.ObjectKeyFromObject(m), stored); err != nil {
		t.Fatal(err)
	}
	if got := stored.Annotations[provider.InstanceStateAnnotation]; got != "poweredOn" {
		t.Errorf("instance-state annotation %q, want poweredOn", got)
	}
	if stored.Labels[RegionLabel] != "region-a" || stored.Labels[ZoneLabel] != "zone-1" {
		t.Errorf("labels %v, want region-a/zone-1", stored.Labels)
	}
}
