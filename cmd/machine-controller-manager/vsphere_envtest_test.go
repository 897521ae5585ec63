package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vapi/tags"
	"github.com/vmware/govmomi/vim25/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/manifests"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machine"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand/crdwait/crdwaittest"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider/vsphere"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider/vsphere/vspheretest"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// TestServesVSphereAndKubemark: the binary, started with the command line
// the operator renders, serves a vSphere Machine with the vSphere provider
// (a VM cloned and powered on in vcsim, found through the cluster's
// Infrastructure, the cloud config in openshift-config-managed/kube-cloud-config (not the Infrastructure's
// older cloud-provider-config) and the credentials Secret, a
// vsphere:// providerID; not Failed as a kubemark Machine would be) and a
// kubemark Machine with the kubemark provider, and leaves an AWS Machine of
// the group vSphere shares untouched. The orphan collector (a 1 s period,
// the test's) deletes a VM tagged for the cluster in the Machines' folder
// whose ownership mark names a Machine that is gone, and leaves the Machine's VM, the template (tagged
// too) and an untagged VM. Breaks if: addControllers wired the kubemark
// actuator alone (the vSphere Machine is Failed, InvalidConfiguration), or
// vSphere served machine.openshift.io by group (the AWS Machine reaches it),
// or the collector did not get the vSphere provider (the orphan stays), or the cloud config were read from
// openshift-config first (port 1: no VM).
func TestServesVSphereAndKubemark(t *testing.T) {
	e := crdwaittest.Start(t, manifests.MachineCRDs, manifests.ConfigCRDs)
	vc := vspheretest.Start(t, nil)
	ctx := context.Background()
	const ns = "machine-vsphere"
	cloudConfig := fmt.Sprintf("[Global]\ninsecure-flag = \"1\"\nport = %q\n", vc.Port)
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "openshift-config"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: vsphere.ManagedCloudConfigNamespace}},
		// OpenShift's location (the port is only there) and the Infrastructure's older one, with a port
		// nothing listens on: read first, it fails every vCenter call.
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: vsphere.ManagedCloudConfigNamespace, Name: vsphere.ManagedCloudConfigName},
			Data: map[string]string{vsphere.ManagedCloudConfigKey: cloudConfig}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-config", Name: "cloud-provider-config"},
			Data: map[string]string{"config": "[Global]\ninsecure-flag = \"1\"\nport = \"1\"\n"}},
		&configv1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: configv1.InfrastructureSpec{
			CloudConfig:  configv1.ConfigMapFileReference{Name: "cloud-provider-config", Key: "config"},
			PlatformSpec: configv1.PlatformSpec{Type: configv1.VSpherePlatformType},
		}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: vsphere.DefaultCredentialsSecret},
			Data: map[string][]byte{vc.Server + ".username": []byte(vspheretest.Username), vc.Server + ".password": []byte(vspheretest.Password)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "worker-user-data"}, Data: map[string][]byte{"userData": []byte(`{"ignition":{"version":"3.2.0"}}`)}},
	} {
		if err := e.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}

	// The installer's cluster ID tag, on the template and on an orphan: a
	// clone (with the provider's ownership mark) in the Machines' folder
	// whose Machine is gone.
	vc.Wait(vc.VM("DC0_H0_VM0").Reconfigure(ctx, types.VirtualMachineConfigSpec{ExtraConfig: []types.BaseOptionValue{
		&types.OptionValue{Key: vsphere.OwnerKey, Value: ns + "/DC0_H0_VM0/5c0f7d0e-0000-4000-8000-0000000000aa"}}}))
	tagOrphanAndTemplate(ctx, t, vc, "envtest-x1", "DC0_H0_VM0", vspheretest.Template)

	// The operator's command line (render golden, kubemark platform), with
	// a short orphan period.
	opts, drainTimeout, err := parse([]string{"--namespace=" + ns, "--leader-elect=false", "--metrics-bind-address=0",
		"--health-probe-bind-address=0", "--kube-api-qps=50", "--kube-api-burst=100", "--max-concurrent-reconciles=50",
		"--machine-safety-orphan-vms-period=1s"})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := opts.NewManager(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	// Only the poll interval is the test's: vcsim's tasks end in
	// milliseconds, the default waits 10 s between the create steps.
	// Another test of this process sets the same controller up.
	co := opts.ControllerOptions()
	co.SkipNameValidation = ptr.To(true)
	if err := addControllersWith(mgr, opts, drainTimeout, vsphere.Options{PollInterval: 50 * time.Millisecond}, co); err != nil {
		t.Fatal(err)
	}
	testenv.Run(t, mgr)

	vs := newMachine(ns, "worker-vs", vsphereSpec(t, vc))
	aws := newMachine(ns, "worker-aws", `{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig","instanceType":"m6i.xlarge"}`)
	km := newMachine(ns, "worker-km", `{"apiVersion":"kubemark.machine-api-operator.io/v1alpha1","kind":"KubemarkMachineProviderSpec"}`)
	for _, m := range []*machinev1beta1.Machine{vs, aws, km} {
		if err := e.Client.Create(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	get := func(m *machinev1beta1.Machine) (*machinev1beta1.Machine, error) {
		got := &machinev1beta1.Machine{}
		return got, e.Client.Get(ctx, client.ObjectKeyFromObject(m), got)
	}
	poll.Eventually(t, 60*time.Second, "a powered-on VM and a vsphere:// providerID for worker-vs", poll.Check(func() error {
		got, err := get(vs)
		if err != nil {
			return err
		}
		if got.Status.Phase != nil && *got.Status.Phase == machinev1beta1.PhaseFailed {
			return fmt.Errorf("the vSphere Machine is Failed: %v", ptrString(got.Status.ErrorMessage))
		}
		if vc.VMsNamed(vs.Name) != 1 || vc.Props(vc.VM(vs.Name), "runtime.powerState").Runtime.PowerState != "poweredOn" {
			return fmt.Errorf("no powered-on VM yet (phase %s)", ptrString(got.Status.Phase))
		}
		if got.Spec.ProviderID == nil || !strings.HasPrefix(*got.Spec.ProviderID, "vsphere://") {
			return fmt.Errorf("providerID %s", ptrString(got.Spec.ProviderID))
		}
		return nil
	}))
	poll.Eventually(t, 30*time.Second, "a kubemark:// providerID for worker-km", poll.Check(func() error {
		got, err := get(km)
		if err != nil {
			return err
		}
		if got.Spec.ProviderID == nil || !strings.HasPrefix(*got.Spec.ProviderID, "kubemark://") {
			return fmt.Errorf("providerID %s (phase %s)", ptrString(got.Spec.ProviderID), ptrString(got.Status.Phase))
		}
		return nil
	}))
	got, err := get(aws)
	if err != nil {
		t.Fatal(err)
	}
	c := machineCondition(got, machine.ProviderSupportedCondition)
	if c == nil || c.Status != corev1.ConditionFalse || c.Reason != machine.ReasonUnsupportedProvider {
		t.Errorf("AWS Machine: ProviderSupported %+v, want False/%s", c, machine.ReasonUnsupportedProvider)
	}
	if got.Status.Phase != nil || len(got.Finalizers) != 0 {
		t.Errorf("AWS Machine touched: phase %s, finalizers %v", ptrString(got.Status.Phase), got.Finalizers)
	}
	if n := vc.VMsNamed(aws.Name); n != 0 {
		t.Errorf("%d VMs for the AWS Machine, want 0", n)
	}
	poll.Eventually(t, 30*time.Second, "the orphan VM DC0_H0_VM0 deleted", poll.Check(func() error {
		if n := vc.VMsNamed("DC0_H0_VM0"); n != 0 {
			return fmt.Errorf("%d VMs named DC0_H0_VM0", n)
		}
		return nil
	}))
	for _, name := range []string{vs.Name, vspheretest.Template, "DC0_H0_VM1"} {
		if n := vc.VMsNamed(name); n != 1 {
			t.Errorf("%d VMs named %s, want 1 (not an orphan)", n, name)
		}
	}
}

// tagOrphanAndTemplate creates the installer's cluster ID tag (category
// openshift-<clusterID>) and attaches it to the named VMs.
func tagOrphanAndTemplate(ctx context.Context, t *testing.T, vc *vspheretest.VCenter, clusterID string, vms ...string) {
	t.Helper()
	rc := rest.NewClient(vc.Client.Client)
	if err := rc.Login(ctx, url.UserPassword(vspheretest.Username, vspheretest.Password)); err != nil {
		t.Fatal(err)
	}
	tm := tags.NewManager(rc)
	cat, err := tm.CreateCategory(ctx, &tags.Category{Name: "openshift-" + clusterID, Cardinality: "SINGLE", AssociableTypes: []string{"VirtualMachine"}})
	if err != nil {
		t.Fatal(err)
	}
	id, err := tm.CreateTag(ctx, &tags.Tag{Name: clusterID, CategoryID: cat})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range vms {
		if err := tm.AttachTag(ctx, id, vc.VM(name).Reference()); err != nil {
			t.Fatal(err)
		}
	}
}

func newMachine(ns, name, spec string) *machinev1beta1.Machine {
	return &machinev1beta1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{machinev1beta1.MachineClusterIDLabel: "envtest-x1"}},
		Spec:       machinev1beta1.MachineSpec{ProviderSpec: machinev1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: []byte(spec)}}},
	}
}

// vsphereSpec is a worker's providerSpec on the simulator.
func vsphereSpec(t *testing.T, vc *vspheretest.VCenter) string {
	t.Helper()
	raw, err := json.Marshal(machinev1beta1.VSphereMachineProviderSpec{
		TypeMeta:          metav1.TypeMeta{APIVersion: "machine.openshift.io/v1beta1", Kind: "VSphereMachineProviderSpec"},
		Template:          vspheretest.Template,
		UserDataSecret:    &corev1.LocalObjectReference{Name: "worker-user-data"},
		CredentialsSecret: &corev1.LocalObjectReference{Name: vsphere.DefaultCredentialsSecret},
		Workspace: &machinev1beta1.Workspace{Server: vc.Server, Datacenter: vspheretest.Datacenter, Folder: vspheretest.Folder,
			Datastore: vspheretest.Datastore, ResourcePool: vspheretest.ResourcePool},
		Network:   machinev1beta1.NetworkSpec{Devices: []machinev1beta1.NetworkDeviceSpec{{NetworkName: vspheretest.Network}}},
		NumCPUs:   2,
		MemoryMiB: 4096,
		DiskGiB:   20,
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func machineCondition(m *machinev1beta1.Machine, t machinev1beta1.ConditionType) *machinev1beta1.Condition {
	for i := range m.Status.Conditions {
		if m.Status.Conditions[i].Type == t {
			return &m.Status.Conditions[i]
		}
	}
	return nil
}

func ptrString[T ~string](p *T) string {
	if p == nil {
		return "<nil>"
	}
	return string(*p)
}
