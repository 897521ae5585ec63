package vsphere

import (
	"strings"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// slowClones makes vcsim's clone tasks take ms milliseconds, without holding
// the template's lock meanwhile (as vCenter, which serves reads during a
// clone).
func slowClones(t *testing.T, ms int) {
	t.Helper()
	old := simulator.TaskDelay
	simulator.TaskDelay = simulator.DelayConfig{MethodDelay: map[string]int{"CloneVm": ms, "LockHandoff": 0}}
	t.Cleanup(func() { simulator.TaskDelay = old })
}

// While the clone task runs, Create only polls it: same taskRef, a requeue
// that names the task, no second clone.
func TestCreatePollsRunningCloneTask(t *testing.T) {
	slowClones(t, 1000)
	e := newSimEnv(t)
	m := e.newMachine("worker-0", nil)
	if err := call(m, e.a.Create, true); !requeued(err) {
		t.Fatalf("first Create: %v, want a requeue", err)
	}
	first := status(t, m).TaskRef
	err := call(m, e.a.Create, true)
	if !requeued(err) {
		t.Fatalf("second Create: %v, want a requeue while the task runs", err)
	}
	mustContain(t, err, "vCenter task "+first, "is running")
	if got := status(t, m).TaskRef; got != first {
		t.Errorf("taskRef changed from %s to %s while the clone ran", first, got)
	}
	if err := e.until(m, e.a.Create, true); err != nil {
		t.Fatal(err)
	}
	if n := e.vmsNamed("worker-0"); n != 1 {
		t.Errorf("%d VMs named worker-0, want 1", n)
	}
}

// A Create retried after a crash between the clone and the status write
// (the Machine has no taskRef) leaves exactly one VM, and the Machine gets
// it, powered on.
func TestCreateAfterLostStatusClonesOnce(t *testing.T) {
	slowClones(t, 500)
	e := newSimEnv(t)
	m := e.newMachine("worker-0", nil)
	crashed := m.DeepCopy()
	if err := call(m, e.a.Create, true); !requeued(err) {
		t.Fatalf("first Create: %v, want a requeue", err)
	}
	// The status with the first taskRef is lost: Create runs again.
	if err := e.until(crashed, e.a.Create, true); err != nil {
		t.Fatalf("retried Create: %v", err)
	}
	if err := e.until(m, e.a.Create, true); err != nil {
		t.Fatalf("Create with the first taskRef: %v", err)
	}
	if n := e.vmsNamed("worker-0"); n != 1 {
		t.Fatalf("%d VMs named worker-0, want 1", n)
	}
	p := e.props(e.vm("worker-0"), "config.instanceUuid", "runtime.powerState")
	if p.Config.InstanceUuid != string(m.UID) || p.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOn {
		t.Errorf("VM instance UUID %s power %s; want %s poweredOn", p.Config.InstanceUuid, p.Runtime.PowerState, m.UID)
	}
}

// Delete powers off and destroys the VM; a VM that is gone is success.
func TestDeleteDestroysVM(t *testing.T) {
	e := newSimEnv(t)
	m := e.newMachine("worker-0", nil)
	if err := e.until(m, e.a.Create, true); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	m.DeletionTimestamp = &now
	if err := e.until(m, e.a.Delete, false); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if n := e.vmsNamed("worker-0"); n != 0 {
		t.Fatalf("%d VMs named worker-0 after Delete, want 0", n)
	}
	if ok, err := e.a.Exists(e.ctx, m); err != nil || ok {
		t.Errorf("Exists after Delete: %v, %v; want false", ok, err)
	}
	if err := call(m, e.a.Delete, false); err != nil {
		t.Errorf("Delete of a VM already gone: %v, want success", err)
	}
}

// With the Machine's Node still reporting attached volumes, Delete powers
// the VM off but does not destroy it until the volumes are detached.
func TestDeleteWaitsForNodeVolumes(t *testing.T) {
	e := newSimEnv(t)
	m := e.newMachine("worker-0", nil)
	if err := e.until(m, e.a.Create, true); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-0"}}
	node.Status.VolumesAttached = []corev1.AttachedVolume{{Name: "kubernetes.io/csi/disk-1", DevicePath: "/dev/sdb"}}
	if err := e.kube.Create(e.ctx, node); err != nil {
		t.Fatal(err)
	}
	m.Status.NodeRef = &corev1.ObjectReference{Kind: "Node", Name: "worker-0"}
	var err error
	for range 20 {
		if err = call(m, e.a.Delete, false); err != nil && strings.Contains(err.Error(), "attached volumes") {
			break
		}
	}
	mustContain(t, err, "node worker-0 has attached volumes")
	if p := e.props(e.vm("worker-0"), "runtime.powerState"); p.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOff {
		t.Errorf("VM is %s while waiting for volumes, want poweredOff and not destroyed", p.Runtime.PowerState)
	}
	node.Status.VolumesAttached = nil
	if err := e.kube.Status().Update(e.ctx, node); err != nil {
		if err := e.kube.Update(e.ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.until(m, e.a.Delete, false); err != nil {
		t.Fatal(err)
	}
	if n := e.vmsNamed("worker-0"); n != 0 {
		t.Errorf("%d VMs after the volumes detached, want 0", n)
	}
}

// A providerSpec naming objects vCenter does not have fails the Machine
// (InvalidConfiguration) with a message naming the object, records
// MachineCreation=False, and clones nothing.
func TestCreateInvalidConfiguration(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*machinev1beta1.VSphereMachineProviderSpec)
		want   string
	}{
		{"template", func(s *machinev1beta1.VSphereMachineProviderSpec) { s.Template = "rhcos-missing" }, `template "rhcos-missing" not found, specify valid value`},
		{"datastore", func(s *machinev1beta1.VSphereMachineProviderSpec) { s.Workspace.Datastore = "ds-missing" }, `datastore "ds-missing" not found, specify valid value`},
		{"folder", func(s *machinev1beta1.VSphereMachineProviderSpec) { s.Workspace.Folder = "/DC0/vm/missing" }, `folder "/DC0/vm/missing" not found`},
		{"network", func(s *machinev1beta1.VSphereMachineProviderSpec) { s.Network.Devices[0].NetworkName = "net-missing" }, `unable to get network for "net-missing"`},
	}
	e := newSimEnv(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := e.newMachine("bad-"+tc.name, tc.mutate)
			err := call(m, e.a.Create, true)
			if !provider.IsInvalidConfiguration(err) {
				t.Fatalf("got %v, want InvalidConfiguration", err)
			}
			mustContain(t, err, tc.want)
			c := meta.FindStatusCondition(status(t, m).Conditions, string(machinev1beta1.MachineCreation))
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != machinev1beta1.MachineCreationFailedConditionReason {
				t.Errorf("MachineCreation condition %+v, want False/MachineCreationFailed", c)
			}
			if n := e.vmsNamed(m.Name); n != 0 {
				t.Errorf("%d VMs cloned, want 0", n)
			}
		})
	}
}

// Missing or wrong credentials give an error that says what to fix.
func TestCredentialErrors(t *testing.T) {
	e := newSimEnv(t)
	noSecret := e.newMachine("no-secret", func(s *machinev1beta1.VSphereMachineProviderSpec) {
		s.CredentialsSecret = &corev1.LocalObjectReference{Name: "missing-creds"}
	})
	err := call(noSecret, e.a.Create, true)
	mustContain(t, err, "credentials secret openshift-machine-api/missing-creds not found", `"127.0.0.1.username"`, `"127.0.0.1.password"`)
	if provider.IsInvalidConfiguration(err) {
		t.Error("a missing Secret failed the Machine; it should be retried (the Secret may come later)")
	}

	partial := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "partial"}, Data: map[string][]byte{"127.0.0.1.username": []byte("user")}}
	wrong := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "wrong"}, Data: map[string][]byte{"127.0.0.1.username": []byte("administrator@vsphere.local"), "127.0.0.1.password": []byte("not-the-password")}}
	for _, s := range []*corev1.Secret{partial, wrong} {
		if err := e.kube.Create(e.ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	m := e.newMachine("partial", func(s *machinev1beta1.VSphereMachineProviderSpec) { s.CredentialsSecret.Name = "partial" })
	err = call(m, e.a.Create, true)
	if !provider.IsInvalidConfiguration(err) {
		t.Errorf("Secret without password: %v, want InvalidConfiguration", err)
	}
	mustContain(t, err, `secret openshift-machine-api/partial does not have "127.0.0.1.password" field set`)

	m = e.newMachine("wrong", func(s *machinev1beta1.VSphereMachineProviderSpec) { s.CredentialsSecret.Name = "wrong" })
	mustContain(t, call(m, e.a.Create, true), "logging in to vCenter", `as "administrator@vsphere.local"`, "credentials Secret")
}
