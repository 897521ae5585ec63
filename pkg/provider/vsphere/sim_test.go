package vsphere

// The test harness: an in-process vcsim (VPX model) on 127.0.0.1 and a fake
// API client holding the Machine and its Secrets.

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	_ "github.com/vmware/govmomi/vapi/simulator" // vCenter REST API (tags)
	"github.com/vmware/govmomi/vim25/mo"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machine"
)

const (
	testNamespace = "openshift-machine-api"
	testTemplate  = "rhcos"
	testPool      = "/DC0/host/DC0_C0/Resources"
	testNetwork   = "DC0_DVPG0"
)

type simEnv struct {
	t      *testing.T
	ctx    context.Context
	server string // host of the vCenter (127.0.0.1)
	port   string
	vc     *govmomi.Client // inspects vcsim behind the provider's back
	finder *find.Finder
	kube   client.Client
	a      *Actuator
}

// newSimEnv starts vcsim, turns its first cluster VM into a hardware-15,
// powered-off template named rhcos, and creates the credentials Secret.
func newSimEnv(t *testing.T, fds ...configv1.VSpherePlatformFailureDomainSpec) *simEnv {
	t.Helper()
	return newSimEnvWith(t, nil, Options{}, fds...)
}

// newSimEnvWith is newSimEnv with a hook on the model before it serves and
// actuator options (PollInterval and APITimeout when set).
func newSimEnvWith(t *testing.T, hook func(*simulator.Model), opts Options, fds ...configv1.VSpherePlatformFailureDomainSpec) *simEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	t.Cleanup(cancel)
	model := simulator.VPX()
	if err := model.Create(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(model.Remove)
	if hook != nil {
		hook(model)
	}
	model.Service.Listen = &url.URL{Host: "127.0.0.1:0", User: url.UserPassword("administrator@vsphere.local", "vcsim-secret")} // loopback only; these credentials only
	model.Service.RegisterEndpoints = true                                                                                      // the vCenter REST API (tags)
	model.Service.TLS = new(tls.Config)                                                                                         // https, as vCenter
	srv := model.Service.NewServer()
	t.Cleanup(srv.Close)
	host, port, err := net.SplitHostPort(srv.URL.Host)
	if err != nil {
		t.Fatal(err)
	}
	vc, err := govmomi.NewClient(ctx, srv.URL, true)
	if err != nil {
		t.Fatal(err)
	}
	e := &simEnv{t: t, ctx: ctx, server: host, port: port, vc: vc, finder: find.NewFinder(vc.Client, true)}
	dc, err := e.finder.Datacenter(ctx, "DC0")
	if err != nil {
		t.Fatal(err)
	}
	e.finder.SetDatacenter(dc)
	tpl := e.vm("DC0_C0_RP0_VM0")
	e.wait(tpl.PowerOff(ctx))
	e.wait(tpl.UpgradeVM(ctx, "vmx-15"))
	e.wait(tpl.Rename(ctx, testTemplate))

	password, _ := srv.URL.User.Password()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, machinev1beta1.Install, configv1.Install} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: DefaultCredentialsSecret},
		Data:       map[string][]byte{host + ".username": []byte(srv.URL.User.Username()), host + ".password": []byte(password)},
	}
	userData := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "worker-user-data"},
		Data:       map[string][]byte{"userData": []byte(`{"ignition":{"version":"3.2.0"}}`)},
	}
	e.kube = fake.NewClientBuilder().WithScheme(scheme).WithObjects(secret, userData).WithStatusSubresource(&machinev1beta1.Machine{}).Build()
	if opts.PollInterval == 0 {
		opts.PollInterval = 5 * time.Millisecond
	}
	opts.Client = e.kube
	opts.Settings = StaticSettings{Port: port, Insecure: true, FailureDomains: fds}
	e.a = NewActuator(opts)
	t.Cleanup(func() { e.a.Close(context.Background()) })
	return e
}

func (e *simEnv) vm(name string) *object.VirtualMachine {
	e.t.Helper()
	vm, err := e.finder.VirtualMachine(e.ctx, name)
	if err != nil {
		e.t.Fatalf("finding VM %s: %v", name, err)
	}
	return vm
}

func (e *simEnv) wait(task *object.Task, err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := task.Wait(e.ctx); err != nil {
		e.t.Fatal(err)
	}
}

// vmsNamed counts the datacenter's VMs with that name.
func (e *simEnv) vmsNamed(name string) int {
	e.t.Helper()
	vms, err := e.finder.VirtualMachineList(e.ctx, "*")
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, vm := range vms {
		if vm.Name() == name {
			n++
		}
	}
	return n
}

// props reads a VM's properties.
func (e *simEnv) props(vm *object.VirtualMachine, ps ...string) mo.VirtualMachine {
	e.t.Helper()
	var m mo.VirtualMachine
	if err := vm.Properties(e.ctx, vm.Reference(), ps, &m); err != nil {
		e.t.Fatal(err)
	}
	return m
}

// newMachine returns a worker Machine (stored in the fake client) whose spec
// is changed by mutate.
func (e *simEnv) newMachine(name string, mutate func(*machinev1beta1.VSphereMachineProviderSpec)) *machinev1beta1.Machine {
	e.t.Helper()
	spec := &machinev1beta1.VSphereMachineProviderSpec{
		TypeMeta:          metav1.TypeMeta{APIVersion: "machine.openshift.io/v1beta1", Kind: providerSpecKind},
		Template:          testTemplate,
		UserDataSecret:    &corev1.LocalObjectReference{Name: "worker-user-data"},
		CredentialsSecret: &corev1.LocalObjectReference{Name: DefaultCredentialsSecret},
		Workspace:         &machinev1beta1.Workspace{Server: e.server, Datacenter: "DC0", Folder: "/DC0/vm", Datastore: "LocalDS_0", ResourcePool: testPool},
		Network:           machinev1beta1.NetworkSpec{Devices: []machinev1beta1.NetworkDeviceSpec{{NetworkName: testNetwork}}},
		NumCPUs:           4,
		NumCoresPerSocket: 2,
		MemoryMiB:         8192,
		DiskGiB:           20,
	}
	if mutate != nil {
		mutate(spec)
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		e.t.Fatal(err)
	}
	m := &machinev1beta1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name, UID: ktypes.UID(uuid.NewUUID()),
			Labels: map[string]string{machinev1beta1.MachineClusterIDLabel: "test-abc12"}},
		Spec: machinev1beta1.MachineSpec{ProviderSpec: machinev1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: raw}}},
	}
	if err := e.kube.Create(e.ctx, m); err != nil {
		e.t.Fatal(err)
	}
	return m
}

// call runs one actuator call the way the machine controller does: on a
// copy, persisting only providerID, addresses and providerStatus (and
// nothing for Delete).
func call(m *machinev1beta1.Machine, op func(context.Context, *machinev1beta1.Machine) error, persist bool) error {
	c := m.DeepCopy()
	err := op(context.Background(), c)
	if persist {
		m.Spec.ProviderID, m.Status.Addresses, m.Status.ProviderStatus = c.Spec.ProviderID, c.Status.Addresses, c.Status.ProviderStatus
	}
	return err
}

// until calls op until it stops asking to be requeued, honouring the
// requested wait; it fails after 10 s.
func (e *simEnv) until(m *machinev1beta1.Machine, op func(context.Context, *machinev1beta1.Machine) error, persist bool) error {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := call(m, op, persist)
		ra, ok := machine.AsRequeueAfter(err)
		if !ok {
			return err
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("still requeued after 10s: %v", err)
		}
		time.Sleep(ra.After)
	}
}

// status decodes the persisted providerStatus.
func status(t *testing.T, m *machinev1beta1.Machine) *machinev1beta1.VSphereMachineProviderStatus {
	t.Helper()
	if m.Status.ProviderStatus == nil {
		t.Fatal("no providerStatus")
	}
	return decodeStatus(m)
}

func requeued(err error) bool {
	_, ok := machine.AsRequeueAfter(err)
	return ok
}

func mustContain(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not contain %q", err, p)
		}
	}
}
