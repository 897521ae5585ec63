package vsphere

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vapi/tags"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/safety"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider/vsphere/vspheretest"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// TestClusterInstance: a tagged VM of a workspace folder is listed only with this provider's ownership mark
// naming it. Breaks if: an unmarked VM (the installer's, OpenShift's clone) were listed, or the template or
// the bootstrap VM with a mark.
func TestClusterInstance(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	vm := func(name, mark, biosUUID, instanceUUID string, template bool) mo.VirtualMachine {
		c := &types.VirtualMachineConfigInfo{Annotation: name, Uuid: biosUUID, InstanceUuid: instanceUUID, Template: template, CreateDate: &created}
		if mark != "" {
			c.ExtraConfig = []types.BaseOptionValue{&types.OptionValue{Key: "guestinfo.hostname", Value: name}, &types.OptionValue{Key: OwnerKey, Value: mark}}
		}
		return mo.VirtualMachine{ManagedEntity: mo.ManagedEntity{Name: name}, Config: c}
	}
	cases := []struct {
		name string
		vm   mo.VirtualMachine
		want bool
	}{
		{"a Machine's clone", vm("c1-worker-a", "ns/c1-worker-a/uid-1", "4216ABCD-0000", "uid-1", false), true},
		{"a template", vm("c1-worker-a", "ns/c1-worker-a/uid-1", "4216ABCD-0000", "uid-1", true), false},
		{"no mark (the installer's, OpenShift's clone)", vm("c1-master-0", "", "4216ABCD-0000", "", false), false},
		{"an unreadable mark", vm("c1-worker-a", "c1-worker-a", "4216ABCD-0000", "uid-1", false), false},
		{"a mark naming another VM (renamed)", vm("c1-worker-b", "ns/c1-worker-a/uid-1", "4216ABCD-0000", "uid-1", false), false},
		{"the template by name", vm("rhcos", "ns/rhcos/uid-1", "4216ABCD-0000", "uid-1", false), false},
		{"the template by instance UUID", vm("c1-worker-a", "ns/c1-worker-a/uid-1", "4216ABCD-0000", "/DC0/vm/rhcos", false), false},
		{"the installer's bootstrap VM", vm("c1-bootstrap", "ns/c1-bootstrap/uid-1", "4216ABCD-0000", "uid-1", false), false},
		{"the installer's bootstrap VM, misspelt", vm("c1-boostrap", "ns/c1-boostrap/uid-1", "4216ABCD-0000", "uid-1", false), false},
		{"another cluster's bootstrap VM", vm("c2-bootstrap", "ns/c2-bootstrap/uid-1", "4216ABCD-0000", "uid-1", false), true},
		{"no BIOS UUID", vm("c1-worker-a", "ns/c1-worker-a/uid-1", "", "uid-1", false), false},
		{"no config", mo.VirtualMachine{ManagedEntity: mo.ManagedEntity{Name: "c1-worker-a"}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := clusterInstance(c.vm, "/DC0/vm/rhcos", "c1")
			if ok != c.want {
				t.Fatalf("listed = %v, want %v", ok, c.want)
			}
			want := provider.Instance{ProviderID: "vsphere://4216abcd-0000", Name: c.vm.Name, CreatedAt: created, Owner: ownerOf(c.vm.Config)}
			if ok && got != want {
				t.Errorf("instance = %+v, want %+v", got, want)
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

// createClusterTag logs in to vcsim's tags API and creates the cluster's tag (category
// openshift-test-abc12, tag test-abc12), returning the tags client and the tag's ID.
func (e *simEnv) createClusterTag(t *testing.T) (*tags.Manager, string) {
	t.Helper()
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
	return tm, id
}

func newOrphanEnv(t *testing.T) *orphanEnv {
	t.Helper()
	e := newSimEnv(t)
	tm, id := e.createClusterTag(t)
	return &orphanEnv{simEnv: e, tags: tm, clusterTag: id}
}

// mark writes the provider's ownership mark on the VM (owner: "<namespace>/<name>/<uid>").
func (e *orphanEnv) mark(vm *object.VirtualMachine, owner string) {
	e.t.Helper()
	e.wait(vm.Reconfigure(e.ctx, types.VirtualMachineConfigSpec{ExtraConfig: []types.BaseOptionValue{&types.OptionValue{Key: OwnerKey, Value: owner}}}))
}

// clone clones the template into the workspace folder outside the provider (as the installer or govc
// does), powered on, and tags it; the clone spec sets only what config asks.
func (e *orphanEnv) clone(name string, config *types.VirtualMachineConfigSpec) *object.VirtualMachine {
	e.t.Helper()
	folder, err := e.Finder.Folder(e.ctx, vspheretest.Folder)
	if err != nil {
		e.t.Fatal(err)
	}
	e.wait(e.vm(vspheretest.Template).Clone(e.ctx, folder, name, types.VirtualMachineCloneSpec{Config: config}))
	vm := e.vm(name)
	e.wait(vm.PowerOn(e.ctx))
	e.tag(vm)
	return vm
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

func instanceNames(insts []provider.Instance) []string {
	var out []string
	for _, i := range insts {
		out = append(out, i.Name)
	}
	slices.Sort(out)
	return out
}

// The listing holds the tagged, marked clones of the Machines' folder: not
// the template (tagged too, as the installer does), not an untagged VM of the
// folder, not a tagged VM without the provider's ownership mark, not a tagged
// clone in another folder. Breaks if: the mark or the folder were not checked.
func TestListInstancesTaggedInFolder(t *testing.T) {
	e := newOrphanEnv(t)
	worker := e.running("worker-0")
	e.tag(e.vm(vspheretest.Template))
	elsewhere := e.vm("DC0_H0_VM1")
	e.mark(elsewhere, testNamespace+"/DC0_H0_VM1/uid-elsewhere")
	e.tag(elsewhere)
	e.tag(e.vm("DC0_C0_RP0_VM1")) // tagged, no mark
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
		t.Fatalf("listed %v, want [worker-0] (untagged DC0_H0_VM0, the template, the unmarked DC0_C0_RP0_VM1 and DC0_H0_VM1 in another folder are not the cluster's)", got)
	}
	if insts[0].ProviderID != *worker.Spec.ProviderID || insts[0].CreatedAt.IsZero() || !insts[0].Owner.Owns(worker) {
		t.Errorf("instance %+v, want providerID %s, a creation time and the mark of %s", insts[0], *worker.Spec.ProviderID, worker.Name)
	}
	// Without vSphere Machines or MachineSets in the namespace, nothing is
	// listed and vCenter is not asked.
	if insts, err := e.a.ListInstances(e.ctx, "elsewhere"); err != nil || len(insts) != 0 {
		t.Errorf("ListInstances(elsewhere) = %v, %v; want none", insts, err)
	}
}

// collector returns the orphan collector (package safety) with this provider.
func (e *orphanEnv) collector(period time.Duration, maxDeletions int, dryRun bool) *safety.OrphanCollector {
	return safety.NewOrphanCollector(safety.OrphanCollectorOptions{
		Client: e.kube, APIReader: e.kube, Namespace: testNamespace, Period: period, MaxDeletions: maxDeletions, DryRun: dryRun,
		Listers: []provider.InstanceLister{e.a},
	})
}

// passUntil runs collection passes until cond holds.
func passUntil(t *testing.T, c *safety.OrphanCollector, what string, cond func() error) {
	t.Helper()
	poll.Eventually(t, 15*time.Second, what, poll.Check(func() error {
		if err := c.Pass(t.Context()); err != nil {
			return err
		}
		return cond()
	}))
}

// The orphan collector with this provider deletes a tagged VM with the
// mark of a Machine that is gone, after the orphan period, and over several
// more passes leaves the VM of a Running Machine, the template, an untagged
// VM, an installer's VM (tagged, powered on, no mark) and a second
// installation's clones in the same folder (marked with another namespace's
// Machines, which exist). Breaks if: the collector matched Machines of its
// own namespace only or by name only (the second installation's clones go),
// or listed VMs without the mark (the installer's goes).
func TestOrphanCollectorDeletesOnlyMarkedVMs(t *testing.T) {
	e := newOrphanEnv(t)
	e.running("worker-0")
	orphan := e.running("orphan-0")
	e.tag(e.vm(vspheretest.Template))
	e.clone("test-abc12-master-0", nil) // the installer's
	for _, name := range []string{"second-worker-0", "second-worker-1"} {
		other := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "second-installation", Name: name, UID: ktypes.UID(uuid.NewUUID())}}
		if err := e.kube.Create(e.ctx, other); err != nil {
			t.Fatal(err)
		}
		e.clone(name, &types.VirtualMachineConfigSpec{InstanceUuid: string(other.UID), ExtraConfig: []types.BaseOptionValue{
			&types.OptionValue{Key: OwnerKey, Value: provider.OwnerOf(other).String()}}})
	}
	if err := e.kube.Delete(e.ctx, orphan); err != nil { // gone without its VM
		t.Fatal(err)
	}
	// DeleteInstance refuses what it did not list, and a name or mark that changed.
	inst := provider.Instance{ProviderID: *orphan.Spec.ProviderID, Name: "orphan-0", Owner: provider.OwnerOf(orphan)}
	if err := e.a.DeleteInstance(e.ctx, inst); err != nil {
		t.Fatal(err)
	}
	if _, err := e.a.ListInstances(e.ctx, testNamespace); err != nil {
		t.Fatal(err)
	}
	renamed, remarked := inst, inst
	renamed.Name = "renamed"
	remarked.Owner.UID = "another-uid"
	for _, i := range []provider.Instance{renamed, remarked} {
		if err := e.a.DeleteInstance(e.ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	if e.vmsNamed("orphan-0") != 1 {
		t.Fatal("DeleteInstance deleted a VM it had not listed under that name and mark")
	}

	c := e.collector(300*time.Millisecond, 0, false)
	passUntil(t, c, "the orphan VM orphan-0 deleted", func() error {
		if n := e.vmsNamed("orphan-0"); n != 0 {
			return fmt.Errorf("%d VMs named orphan-0", n)
		}
		return nil
	})
	for range 3 { // more passes, each after the grace of every VM: nothing else goes
		if err := c.Pass(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"worker-0", vspheretest.Template, "DC0_H0_VM0", "test-abc12-master-0", "second-worker-0", "second-worker-1"} {
		if e.vmsNamed(name) != 1 {
			t.Errorf("VM %s was deleted", name)
		}
	}
	if p := e.props(e.vm("test-abc12-master-0"), "runtime.powerState").Runtime.PowerState; p != types.VirtualMachinePowerStatePoweredOn {
		t.Errorf("the installer's VM is %s, want it left poweredOn", p)
	}
}

// With a cap of 1, a pass deletes one of three orphans, the next pass
// another; in a dry run nothing goes, whatever the passes. Breaks if: the cap
// were per provider call or ignored, or the dry run deleted.
func TestOrphanCollectorCapAndDryRun(t *testing.T) {
	e := newOrphanEnv(t)
	e.running("worker-0") // its folder is where the orphans are looked for
	names := []string{"orphan-0", "orphan-1", "orphan-2"}
	for _, n := range names {
		if err := e.kube.Delete(e.ctx, e.running(n)); err != nil {
			t.Fatal(err)
		}
	}
	left := func() int {
		n := 0
		for _, name := range names {
			n += e.vmsNamed(name)
		}
		return n
	}
	const period = 300 * time.Millisecond
	dry := e.collector(period, 1, true)
	dryBefore := counter(t, safety.OrphanInstancesDryRunTotal)
	passUntil(t, dry, "a dry-run report", func() error {
		if counter(t, safety.OrphanInstancesDryRunTotal) == dryBefore {
			return errors.New("no orphan reported yet")
		}
		return nil
	})
	for range 2 {
		if err := dry.Pass(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := left(); n != 3 {
		t.Fatalf("%d of 3 orphan VMs left after dry-run passes, want all", n)
	}
	if d := counter(t, safety.OrphanInstancesDryRunTotal) - dryBefore; d != 3 {
		t.Errorf("dry-run reports grew by %v over 3 passes with a cap of 1, want 3", d)
	}

	c := e.collector(period, 1, false)
	if err := c.Pass(e.ctx); err != nil {
		t.Fatal(err)
	}
	if n := left(); n != 2 {
		t.Fatalf("%d orphan VMs left after one pass with a cap of 1, want 2", n)
	}
	if err := c.Pass(e.ctx); err != nil {
		t.Fatal(err)
	}
	if n := left(); n != 1 {
		t.Fatalf("%d orphan VMs left after two passes with a cap of 1, want 1", n)
	}
}

func counter(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	m := &dto.Metric{}
	if err := c.Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
