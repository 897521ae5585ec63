package vsphere

// The test harness: an in-process vcsim (VPX model) on 127.0.0.1 and a fake
// API client holding the Machine and its Secrets.

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	ipamv1beta1 "sigs.k8s.io/cluster-api/api/ipam/v1beta1" //nolint:staticcheck // SA1019: ipam v1beta1 is OpenShift's version
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider/vsphere/vspheretest"
)

const testNamespace = "openshift-machine-api"

type simEnv struct {
	*vspheretest.VCenter
	t      *testing.T
	ctx    context.Context
	server string // host of the vCenter (127.0.0.1)
	kube   client.Client
	a      *Actuator
}

// newSimEnv starts vcsim (package vspheretest) and creates the credentials
// and user data Secrets.
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
	vc := vspheretest.Start(t, hook)
	e := &simEnv{VCenter: vc, t: t, ctx: ctx, server: vc.Server}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, machinev1beta1.Install, configv1.Install, ipamv1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: DefaultCredentialsSecret},
		Data:       map[string][]byte{vc.Server + ".username": []byte(vspheretest.Username), vc.Server + ".password": []byte(vspheretest.Password)},
	}
	userData := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "worker-user-data"},
		Data:       map[string][]byte{"userData": []byte(`{"ignition":{"version":"3.2.0"}}`)},
	}
	e.kube = fake.NewClientBuilder().WithScheme(scheme).WithObjects(secret, userData).WithStatusSubresource(&machinev1beta1.Machine{}, &ipamv1beta1.IPAddressClaim{}).Build()
	if opts.PollInterval == 0 {
		opts.PollInterval = 5 * time.Millisecond
	}
	opts.Client = e.kube
	opts.Settings = StaticSettings{Port: vc.Port, Insecure: true, FailureDomains: fds}
	e.a = NewActuator(opts)
	t.Cleanup(func() { e.a.Close(context.Background()) })
	return e
}

func (e *simEnv) vm(name string) *object.VirtualMachine { return e.VM(name) }

func (e *simEnv) wait(task *object.Task, err error) { e.Wait(task, err) }

func (e *simEnv) vmsNamed(name string) int { return e.VMsNamed(name) }

func (e *simEnv) props(vm *object.VirtualMachine, ps ...string) mo.VirtualMachine {
	return e.Props(vm, ps...)
}

// newMachine returns a worker Machine (stored in the fake client) whose spec
// is changed by mutate.
func (e *simEnv) newMachine(name string, mutate func(*machinev1beta1.VSphereMachineProviderSpec)) *machinev1beta1.Machine {
	e.t.Helper()
	spec := &machinev1beta1.VSphereMachineProviderSpec{
		TypeMeta:          metav1.TypeMeta{APIVersion: "machine.openshift.io/v1beta1", Kind: providerSpecKind},
		Template:          vspheretest.Template,
		UserDataSecret:    &corev1.LocalObjectReference{Name: "worker-user-data"},
		CredentialsSecret: &corev1.LocalObjectReference{Name: DefaultCredentialsSecret},
		Workspace:         &machinev1beta1.Workspace{Server: e.server, Datacenter: vspheretest.Datacenter, Folder: vspheretest.Folder, Datastore: vspheretest.Datastore, ResourcePool: vspheretest.ResourcePool},
		Network:           machinev1beta1.NetworkSpec{Devices: []machinev1beta1.NetworkDeviceSpec{{NetworkName: vspheretest.Network}}},
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
		ra, ok := provider.AsRequeueAfter(err)
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
	_, ok := provider.AsRequeueAfter(err)
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
