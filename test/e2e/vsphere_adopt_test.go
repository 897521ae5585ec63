//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi"
	vfind "github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/vim25/mo"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider/vsphere"
)

// govc runs bin/govc (make vsphere-tools) with the vCenter's GOVC_* environment.
func govc(ctx context.Context, t *testing.T, args ...string) {
	t.Helper()
	bin, err := filepath.Abs("../../bin/govc")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("bin/govc: %v (run make vsphere-tools)", err)
	}
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("govc %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// outsideVMSnapshot is what the provider must never change on a VM it did not clone: UUIDs, hardware,
// annotation, extraConfig, power state.
func outsideVMSnapshot(ctx context.Context, vc *govmomi.Client, path string) (string, error) {
	vm, err := vfind.NewFinder(vc.Client, true).VirtualMachine(ctx, path)
	if err != nil {
		return "", err
	}
	var p mo.VirtualMachine
	if err := vm.Properties(ctx, vm.Reference(), []string{"config", "runtime.powerState"}, &p); err != nil {
		return "", err
	}
	var extra []string
	for _, o := range p.Config.ExtraConfig {
		extra = append(extra, fmt.Sprintf("%s=%v", o.GetOptionValue().Key, o.GetOptionValue().Value))
	}
	return fmt.Sprintf("instanceUUID=%s biosUUID=%s annotation=%q cpus=%d memoryMiB=%d power=%s extraConfig=%v",
		p.Config.InstanceUuid, p.Config.Uuid, p.Config.Annotation, p.Config.Hardware.NumCPU, p.Config.Hardware.MemoryMB,
		p.Runtime.PowerState, extra), nil
}

// TestVSphereAdoptsOutsideVMByName clones two VMs with govc into the workspace folder, outside the Machine
// API (as the installer makes the control plane's): a Machine named after the powered-on one adopts it by
// name (Running, with its vsphere:// providerID) and leaves its UUIDs, hardware, extraConfig and power state
// as they were; a Machine named after the powered-off one reports VMNameConflict and never changes it, and
// deleting that Machine leaves the VM; deleting the adopting Machine destroys its VM, as OpenShift does.
// Breaks if: the provider found VMs by instance UUID only (the first Machine clones a second VM or fails on
// the duplicate name), reconfigured or powered on a VM it did not clone, or Delete destroyed one it never
// adopted.
func TestVSphereAdoptsOutsideVMByName(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	vc := requireVSphere(ctx, t)
	base, spec := vsphereTemplateMachineSet(ctx, t)
	ws := spec.Workspace
	suffix := rand.String(5)
	running, stopped := "e2e-installer-"+suffix, "e2e-foreign-"+suffix
	for _, vm := range []struct {
		name string
		on   bool
	}{{running, true}, {stopped, false}} {
		govc(ctx, t, "vm.clone", "-vm", spec.Template, "-folder", ws.Folder, "-ds", ws.Datastore, "-pool", ws.ResourcePool,
			fmt.Sprintf("-on=%t", vm.on), vm.name)
		t.Cleanup(func() {
			cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
			defer ccancel()
			if v, err := vfind.NewFinder(vc.Client, true).VirtualMachine(cctx, ws.Folder+"/"+vm.name); err == nil {
				if task, err := v.PowerOff(cctx); err == nil {
					_ = task.Wait(cctx)
				}
				if task, err := v.Destroy(cctx); err == nil {
					_ = task.Wait(cctx)
				}
			}
		})
	}
	before := map[string]string{}
	for _, name := range []string{running, stopped} {
		s, err := outsideVMSnapshot(ctx, vc, ws.Folder+"/"+name)
		if err != nil {
			t.Fatal(err)
		}
		before[name] = s
	}
	unchanged := func(ctx context.Context, name string) error {
		s, err := outsideVMSnapshot(ctx, vc, ws.Folder+"/"+name)
		if err != nil {
			return err
		}
		if s != before[name] {
			return fmt.Errorf("VM %s changed:\nbefore %s\nafter  %s", name, before[name], s)
		}
		return nil
	}
	biosUUID := strings.TrimPrefix(strings.Fields(before[running])[1], "biosUUID=")

	newMachine := func(name string) *machinev1beta1.Machine {
		m := &machinev1beta1.Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: operandNamespace(), Name: name, Labels: map[string]string{}},
			Spec:       *base.Spec.Template.Spec.DeepCopy(),
		}
		for k, v := range base.Spec.Template.Labels {
			if k != setLabel { // not the MachineSet's: it would count it as its own
				m.Labels[k] = v
			}
		}
		if err := cluster.Create(ctx, m); err != nil {
			t.Fatalf("creating machine %s: %v", name, err)
		}
		t.Cleanup(func() { _ = cluster.Delete(context.Background(), m) })
		return m
	}
	get := func(ctx context.Context, m *machinev1beta1.Machine) (*machinev1beta1.Machine, error) {
		got := &machinev1beta1.Machine{}
		return got, cluster.Get(ctx, client.ObjectKeyFromObject(m), got)
	}

	adopting := newMachine(running)
	conflicting := newMachine(stopped)
	want := "vsphere://" + strings.ToLower(biosUUID)
	waitFor(ctx, t, fmt.Sprintf("machine %s Running with the outside VM's providerID %s", running, want), func(ctx context.Context) (bool, error) {
		got, err := get(ctx, adopting)
		if err != nil {
			return false, err
		}
		if ptr.Deref(got.Status.Phase, "") != machinev1beta1.PhaseRunning || ptr.Deref(got.Spec.ProviderID, "") != want {
			return false, fmt.Errorf("phase %q, providerID %q", ptr.Deref(got.Status.Phase, ""), ptr.Deref(got.Spec.ProviderID, ""))
		}
		return true, nil
	})
	waitFor(ctx, t, fmt.Sprintf("machine %s reporting %s", stopped, vsphere.ReasonVMNameConflict), func(ctx context.Context) (bool, error) {
		got, err := get(ctx, conflicting)
		if err != nil || got.Status.ProviderStatus == nil {
			return false, err
		}
		var st machinev1beta1.VSphereMachineProviderStatus
		if err := json.Unmarshal(got.Status.ProviderStatus.Raw, &st); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(st.Conditions, string(machinev1beta1.MachineCreation))
		if c == nil || c.Reason != vsphere.ReasonVMNameConflict {
			return false, fmt.Errorf("MachineCreation %+v (phase %q)", c, ptr.Deref(got.Status.Phase, ""))
		}
		if p := ptr.Deref(got.Status.Phase, ""); p == machinev1beta1.PhaseFailed || got.Spec.ProviderID != nil {
			return false, fmt.Errorf("phase %q, providerID %v: want Provisioning without a providerID", p, got.Spec.ProviderID)
		}
		return true, nil
	})
	for _, name := range []string{running, stopped} {
		if err := unchanged(ctx, name); err != nil {
			t.Error(err)
		}
	}

	if err := cluster.Delete(ctx, conflicting); err != nil {
		t.Fatal(err)
	}
	waitGone(ctx, t, "machine "+stopped, conflicting)
	if err := unchanged(ctx, stopped); err != nil {
		t.Errorf("after its Machine's deletion: %v", err)
	}
	if err := cluster.Delete(ctx, adopting); err != nil {
		t.Fatal(err)
	}
	waitGone(ctx, t, "machine "+running, adopting)
	waitFor(ctx, t, "the adopted VM "+running+" destroyed with its Machine", func(ctx context.Context) (bool, error) {
		_, err := vfind.NewFinder(vc.Client, true).VirtualMachine(ctx, ws.Folder+"/"+running)
		var nf *vfind.NotFoundError
		if err == nil {
			return false, fmt.Errorf("VM %s still there", running)
		}
		if errors.As(err, &nf) {
			return true, nil
		}
		return false, err
	})
}
