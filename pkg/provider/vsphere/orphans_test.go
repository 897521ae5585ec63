package vsphere

import (
	"context"
	"net/url"
	"slices"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vapi/tags"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machine"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/safety"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider/vsphere/vspheretest"
)

func TestClusterInstance(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	vm := func(name, annotation, biosUUID, instanceUUID string, template bool) mo.VirtualMachine {
		return mo.VirtualMachine{ManagedEntity: mo.ManagedEntity{Name: name}, Config: &types.VirtualMachineConfigInfo{
			Annotation: annotation, Uuid: biosUUID, InstanceUuid: instanceUUID, Template: template, CreateDate: &created}}
	}
	cases := []struct {
		name string
		vm   mo.VirtualMachine
		want bool
	}{
		{"a Machine's clone", vm("c1-worker-a", "c1-worker-a", "4216ABCD-0000", "uid-1", false), true},
		{"a template", vm("c1-worker-a", "c1-worker-a", "4216ABCD-0000", "uid-1", true), false},
		{"not annotated with its name (not a machine controller's clone)", vm("c1-master-0", "Created By OpenShift Installer", "4216ABCD-0000", "", false), false},
		{"not annotated", vm("c1-master-0", "", "4216ABCD-0000", "", false), false},
		{"the template by name", vm("rhcos", "rhcos", "4216ABCD-0000", "uid-1", false), false},
		{"the template by instance UUID", vm("c1-worker-a", "c1-worker-a", "4216ABCD-0000", "/DC0/vm/rhcos", false), false},
		{"the installer's bootstrap VM", vm("c1-bootstrap", "c1-bootstrap", "4216ABCD-0000", "uid-1", false), false},
		{"the installer's bootstrap VM, misspelt", vm("c1-boostrap", "c1-boostrap", "4216ABCD-0000", "uid-1", false), false},
		{"another cluster's bootstrap VM", vm("c2-bootstrap", "c2-bootstrap", "4216ABCD-0000", "uid-1", false), true},
		{"no BIOS UUID", vm("c1-worker-a", "c1-worker-a", "", "uid-1", false), false},
		{"no config", mo.VirtualMachine{ManagedEntity: mo.ManagedEntity{Name: "c1-worker-a"}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := clusterInstance(c.vm, "/DC0/vm/rhcos", "c1")
			if ok != c.want {
				t.Fatalf("listed = %v, want %v", ok, c.want)
			}
			if ok && got != (machine.Instance{ProviderID: "vsphere://4216abcd-0000", Name: c.vm.Name, CreatedAt: created}) {
				t.Errorf("instance = %+v", got)
			}
		})
	}
}

// orphanEnv is a simEnv whose vCenter has the installer's cluster ID tag
// (cluster ID test-abc12, newMachine's label).
type orphanEnv struct {
	*simEnv
	tags       *tags.Manager
	clusterTag string
}

func newOrphanEnv(t *testing.T) *orphanEnv {
	t.Helper()
	e := newSimEnv(t)
	rc := rest.NewClient(e.Client.Client)
	if err := rc.Login(e.ctx, url.UserPassword(vspheretest.Username, vspheretest.Password)); err != nil {
		t.Fatal(err)
	}
	tm := tags.NewManager(rc)
	cat, err := tm.CreateCategory(e.ctx, &tags.Category{Name: "openshift-test-abc12", Cardinality: "SINGLE", AssociableTypes: []string{"VirtualMachine"}})
	if err != nil {
		t.Fatal(err)
	}
	id, err := tm.CreateTag(e.ctx, &tags.Tag{Name: "test-abc12", CategoryID: cat})
	if err != nil {
		t.Fatal(err)
	}
	return &orphanEnv{simEnv: e, tags: tm, clusterTag: id}
}

// annotate annotates the VM with its name, as a machine controller's clone.
func (e *orphanEnv) annotate(vm *object.VirtualMachine) {
	e.t.Helper()
	e.wait(vm.Reconfigure(e.ctx, types.VirtualMachineConfigSpec{Annotation: vm.Name()}))
}

func (e *orphanEnv) tag(vm *object.VirtualMachine) {
	e.t.Helper()
	if err := e.tags.AttachTag(e.ctx, e.clusterTag, vm.Reference()); err != nil {
		e.t.Fatal(err)
	}
}

// running creates the Machine's VM and tags it (Create, then Update), and
// stores the Machine as the machine controller leaves it: Running, with
// the providerID.
func (e *orphanEnv) running(name string) *machinev1beta1.Machine {
	e.t.Helper()
	m := e.newMachine(name, nil)
	if err := e.until(m, e.a.Create, true); err != nil {
		e.t.Fatal(err)
	}
	if err := call(m, e.a.Update, true); err != nil {
		e.t.Fatal(err)
	}
	stored := &machinev1beta1.Machine{}
	if err := e.kube.Get(e.ctx, client.ObjectKeyFromObject(m), stored); err != nil {
		e.t.Fatal(err)
	}
	stored.Spec.ProviderID = m.Spec.ProviderID
	if err := e.kube.Update(e.ctx, stored); err != nil {
		e.t.Fatal(err)
	}
	m = stored
	m.Status.Phase = ptr.To(machinev1beta1.PhaseRunning)
	if err := e.kube.Status().Update(e.ctx, m); err != nil {
		e.t.Fatal(err)
	}
	return m
}

func instanceNames(insts []machine.Instance) []string {
	var out []string
	for _, i := range insts {
		out = append(out, i.Name)
	}
	slices.Sort(out)
	return out
}

// The listing holds the tagged clones of the Machines' folder: not the
// template (tagged too, as the installer does), not an untagged VM of the
// folder, not a tagged VM that is no machine controller's clone (not
// annotated with its name), not a tagged clone in another folder.
func TestListInstancesTaggedInFolder(t *testing.T) {
	e := newOrphanEnv(t)
	worker := e.running("worker-0")
	e.tag(e.vm(vspheretest.Template))
	elsewhere := e.vm("DC0_H0_VM1")
	e.annotate(elsewhere)
	e.tag(elsewhere)
	e.tag(e.vm("DC0_C0_RP0_VM1")) // tagged, not annotated
	root, err := e.Finder.Folder(e.ctx, vspheretest.Folder)
	if err != nil {
		t.Fatal(err)
	}
	other, err := root.CreateFolder(e.ctx, "other-cluster")
	if err != nil {
		t.Fatal(err)
	}
	e.wait(other.MoveInto(e.ctx, []types.ManagedObjectReference{elsewhere.Reference()}))

	insts, err := e.a.ListInstances(e.ctx, testNamespace)
	if err != nil {
		t.Fatal(err)
	}
	if got := instanceNames(insts); !slices.Equal(got, []string{"worker-0"}) {
		t.Fatalf("listed %v, want [worker-0] (untagged DC0_H0_VM0, the template, the unannotated DC0_C0_RP0_VM1 and DC0_H0_VM1 in another folder are not the cluster's)", got)
	}
	if insts[0].ProviderID != *worker.Spec.ProviderID || insts[0].CreatedAt.IsZero() {
		t.Errorf("instance %+v, want providerID %s and a creation time", insts[0], *worker.Spec.ProviderID)
	}
	// Without vSphere Machines or MachineSets in the namespace, nothing is
	// listed and vCenter is not asked.
	if insts, err := e.a.ListInstances(e.ctx, "elsewhere"); err != nil || len(insts) != 0 {
		t.Errorf("ListInstances(elsewhere) = %v, %v; want none", insts, err)
	}
}

// The orphan collector (package safety) with this provider deletes a
// tagged VM whose Machine is gone, after the orphan period, and leaves the
// VM of a Running Machine, the template and an untagged VM alone.
func TestOrphanCollectorDeletesUnownedVM(t *testing.T) {
	e := newOrphanEnv(t)
	e.running("worker-0")
	orphan := e.running("orphan-0")
	e.tag(e.vm(vspheretest.Template))
	if err := e.kube.Delete(e.ctx, orphan); err != nil { // gone without its VM
		t.Fatal(err)
	}
	// DeleteInstance refuses what it did not list, and a name that changed.
	if err := e.a.DeleteInstance(e.ctx, machine.Instance{ProviderID: *orphan.Spec.ProviderID, Name: "orphan-0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.a.ListInstances(e.ctx, testNamespace); err != nil {
		t.Fatal(err)
	}
	if err := e.a.DeleteInstance(e.ctx, machine.Instance{ProviderID: *orphan.Spec.ProviderID, Name: "renamed"}); err != nil {
		t.Fatal(err)
	}
	if e.vmsNamed("orphan-0") != 1 {
		t.Fatal("DeleteInstance deleted a VM it had not listed under that name")
	}

	period := 300 * time.Millisecond
	c := safety.NewOrphanCollector(safety.OrphanCollectorOptions{
		Client: e.kube, APIReader: e.kube, Namespace: testNamespace, Period: period,
		Listers: []machine.InstanceLister{e.a},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(15 * time.Second)
	for e.vmsNamed("orphan-0") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the orphan VM orphan-0 is still there after 15 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Two more passes: nothing else goes.
	time.Sleep(2 * period)
	for _, name := range []string{"worker-0", vspheretest.Template, "DC0_H0_VM0"} {
		if e.vmsNamed(name) != 1 {
			t.Errorf("VM %s was deleted", name)
		}
	}
}
