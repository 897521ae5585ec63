package controllertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi/simulator"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machine"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider/vsphere"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider/vsphere/vspheretest"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

var env *testenv.Env

// TestMain installs, besides the project's CRDs, the IPAM ones an IPAM provider would (testdata).
func TestMain(m *testing.M) {
	crds, err := ipamCRDs()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testenv.MainWith(m, &env, testenv.Options{ExtraCRDs: crds})
}

const namespace = "vsphere-envtest"

// fixture is a vcsim, the Secrets the provider reads, and the machine
// controller with the vSphere provider.
type fixture struct {
	vc  *vspheretest.VCenter
	r   *machine.Reconciler
	ctx context.Context
}

// newFixture starts the fixture; model (optional) changes vcsim before it
// serves (method delays, for instance) and tune the provider's options (a
// short APITimeout).
func newFixture(t *testing.T, model func(*simulator.Model), tune ...func(*vsphere.Options)) *fixture {
	t.Helper()
	ctx := t.Context()
	vc := vspheretest.Start(t, model)
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: vsphere.DefaultCredentialsSecret},
			Data: map[string][]byte{vc.Server + ".username": []byte(vspheretest.Username), vc.Server + ".password": []byte(vspheretest.Password)}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "worker-user-data"},
			Data: map[string][]byte{"userData": []byte(`{"ignition":{"version":"3.2.0"}}`)}},
	} {
		_ = env.Client.Delete(ctx, s) // a previous test's vcsim had another port
		if err := env.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	opts := vsphere.Options{
		Client:       env.Client,
		Settings:     vsphere.StaticSettings{Port: vc.Port, Insecure: true},
		PollInterval: 10 * time.Millisecond,
	}
	for _, f := range tune {
		f(&opts)
	}
	a := vsphere.NewActuator(opts)
	t.Cleanup(func() { a.Close(context.Background()) })
	r := machine.NewReconciler(machine.Options{Client: env.Client, APIReader: env.Client, Actuator: a, Namespace: namespace})
	return &fixture{vc: vc, r: r, ctx: ctx}
}

// machine creates a worker Machine cloned from template.
func (f *fixture) machine(t *testing.T, name, template string, datastore ...string) *machinev1beta1.Machine {
	t.Helper()
	return f.machineWith(t, name, func(s *machinev1beta1.VSphereMachineProviderSpec) {
		s.Template, s.Workspace.Datastore = template, append(datastore, vspheretest.Datastore)[0]
	})
}

// machineWith creates a worker Machine whose providerSpec mutate changes.
func (f *fixture) machineWith(t *testing.T, name string, mutate func(*machinev1beta1.VSphereMachineProviderSpec)) *machinev1beta1.Machine {
	t.Helper()
	spec := machinev1beta1.VSphereMachineProviderSpec{
		TypeMeta:          metav1.TypeMeta{APIVersion: "machine.openshift.io/v1beta1", Kind: "VSphereMachineProviderSpec"},
		Template:          vspheretest.Template,
		UserDataSecret:    &corev1.LocalObjectReference{Name: "worker-user-data"},
		CredentialsSecret: &corev1.LocalObjectReference{Name: vsphere.DefaultCredentialsSecret},
		Workspace: &machinev1beta1.Workspace{Server: f.vc.Server, Datacenter: vspheretest.Datacenter, Folder: vspheretest.Folder,
			Datastore: vspheretest.Datastore, ResourcePool: vspheretest.ResourcePool},
		Network:   machinev1beta1.NetworkSpec{Devices: []machinev1beta1.NetworkDeviceSpec{{NetworkName: vspheretest.Network}}},
		NumCPUs:   2,
		MemoryMiB: 4096,
		DiskGiB:   20,
	}
	mutate(&spec)
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	m := &machinev1beta1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{machinev1beta1.MachineClusterIDLabel: "envtest-x1"}},
		Spec:       machinev1beta1.MachineSpec{ProviderSpec: machinev1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: raw}}},
	}
	if err := env.Client.Create(f.ctx, m); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { forget(m) })
	return m
}

// forget removes a test's Machine from the API server, finalizer and all,
// so that a later test (or -count=2) can reuse its name; its VM went with
// the test's vcsim.
func forget(m *machinev1beta1.Machine) {
	ctx := context.Background()
	got := &machinev1beta1.Machine{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(m), got); err != nil {
		return
	}
	if len(got.Finalizers) > 0 {
		got.Finalizers = nil
		_ = env.Client.Update(ctx, got)
	}
	_ = env.Client.Delete(ctx, got)
}

// reconcileUntil runs the controller on m until cond holds for the stored
// Machine (nil once it is gone).
func (f *fixture) reconcileUntil(t *testing.T, m *machinev1beta1.Machine, what string, cond func(*machinev1beta1.Machine) error) {
	t.Helper()
	poll.Eventually(t, 20*time.Second, what, poll.Check(func() error {
		if _, err := f.r.Reconcile(f.ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(m)}); err != nil {
			return fmt.Errorf("reconcile: %w", err)
		}
		got := &machinev1beta1.Machine{}
		if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(m), got); err != nil {
			if apierrors.IsNotFound(err) {
				return cond(nil)
			}
			return err
		}
		return cond(got)
	}))
}

// deleteUntilGone deletes the Machine (m: its last read) and reconciles it until it is gone.
func (f *fixture) deleteUntilGone(t *testing.T, m *machinev1beta1.Machine) {
	t.Helper()
	if err := env.Client.Delete(f.ctx, m); err != nil {
		t.Fatal(err)
	}
	f.reconcileUntil(t, m, "the Machine gone", func(got *machinev1beta1.Machine) error {
		if got != nil {
			return fmt.Errorf("still there, phase %q", phase(got))
		}
		return nil
	})
}

// reconcileUntilPhase reconciles m until it is in phase.
func (f *fixture) reconcileUntilPhase(t *testing.T, m *machinev1beta1.Machine, want string) {
	t.Helper()
	f.reconcileUntil(t, m, "phase "+want, func(got *machinev1beta1.Machine) error {
		if phase(got) != want {
			return fmt.Errorf("phase %q", phase(got))
		}
		return nil
	})
}

// reconcileUntilPoweredOn reconciles m until vCenter has one VM named vm, powered on.
func (f *fixture) reconcileUntilPoweredOn(t *testing.T, m *machinev1beta1.Machine, vm string) {
	t.Helper()
	f.reconcileUntil(t, m, "a powered-on VM", func(got *machinev1beta1.Machine) error {
		if f.vc.VMsNamed(vm) == 1 && f.vc.Props(f.vc.VM(vm), "runtime.powerState").Runtime.PowerState == "poweredOn" {
			return nil
		}
		return fmt.Errorf("phase %q, no powered-on VM yet", phase(got))
	})
}

func phase(m *machinev1beta1.Machine) string {
	if m == nil || m.Status.Phase == nil {
		return ""
	}
	return *m.Status.Phase
}

// The machine controller drives a vSphere Machine to Provisioned (VM cloned,
// powered on, providerID vsphere://, the guest's IP) and, once deleted,
// destroys its VM and lets the Machine go.
func TestMachineLifecycleOnVCenter(t *testing.T) {
	f := newFixture(t, nil)
	m := f.machine(t, "worker-a", vspheretest.Template)

	f.reconcileUntilPoweredOn(t, m, "worker-a")
	f.vc.SetGuestIP("worker-a", "10.1.0.5")
	var stored *machinev1beta1.Machine
	f.reconcileUntil(t, m, "Provisioned with the guest IP", func(got *machinev1beta1.Machine) error {
		stored = got
		if phase(got) != machinev1beta1.PhaseProvisioned || !slices.Contains(got.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.1.0.5"}) {
			return fmt.Errorf("phase %q, addresses %v", phase(got), got.Status.Addresses)
		}
		return nil
	})
	if id := stored.Spec.ProviderID; id == nil || !strings.HasPrefix(*id, "vsphere://") {
		t.Errorf("providerID %v, want vsphere://<BIOS UUID>", id)
	}
	if got := stored.Annotations[provider.InstanceStateAnnotation]; got != "poweredOn" {
		t.Errorf("instance-state annotation %q, want poweredOn", got)
	}
	if n := f.vc.VMsNamed("worker-a"); n != 1 {
		t.Errorf("%d VMs for the Machine, want 1", n)
	}

	f.deleteUntilGone(t, stored)
	if n := f.vc.VMsNamed("worker-a"); n != 0 {
		t.Errorf("%d VMs left after the Machine was deleted, want 0", n)
	}
}

// A template that does not exist fails the Machine with OpenShift's reason
// (InvalidConfiguration) and a message naming the template; nothing is
// cloned.
func TestMissingTemplateFailsMachine(t *testing.T) {
	f := newFixture(t, nil)
	m := f.machine(t, "worker-bad", "rhcos-missing")
	f.reconcileUntilPhase(t, m, machinev1beta1.PhaseFailed)
	got := &machinev1beta1.Machine{}
	if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(m), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.ErrorReason == nil || *got.Status.ErrorReason != machinev1beta1.InvalidConfigurationMachineError {
		t.Errorf("errorReason %v, want InvalidConfiguration", got.Status.ErrorReason)
	}
	if got.Status.ErrorMessage == nil || !strings.Contains(*got.Status.ErrorMessage, `template "rhcos-missing" not found`) {
		t.Errorf("errorMessage %v, want it to name the template", got.Status.ErrorMessage)
	}
	if n := f.vc.VMsNamed("worker-bad"); n != 0 {
		t.Errorf("%d VMs cloned, want 0", n)
	}
}
