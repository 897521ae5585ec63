package vspheretest

import (
	"testing"

	"github.com/vmware/govmomi/vim25/types"
)

// A clone has its spec's instance UUID, extraConfig, annotation, CPUs and memory when its task succeeds, as on
// vCenter. Breaks if: KeepCloneConfig is not installed, or reconfigures the clone after the task succeeded.
func TestCloneKeepsItsConfig(t *testing.T) {
	v := Start(t, nil)
	ctx := t.Context()
	folder, err := v.Finder.Folder(ctx, Folder)
	if err != nil {
		t.Fatal(err)
	}
	const uuid = "3f1c2e3a-0000-4000-8000-00000000c10e"
	task, err := v.VM(Template).Clone(ctx, folder, "clone-0", types.VirtualMachineCloneSpec{Config: &types.VirtualMachineConfigSpec{
		InstanceUuid: uuid, Annotation: "clone-0", NumCPUs: 3, MemoryMB: 3072,
		ExtraConfig: []types.BaseOptionValue{&types.OptionValue{Key: "test.mark", Value: "ns/clone-0/uid"}},
	}})
	v.Wait(task, err)
	p := v.Props(v.VM("clone-0"), "config")
	extra := map[string]any{}
	for _, o := range p.Config.ExtraConfig {
		extra[o.GetOptionValue().Key] = o.GetOptionValue().Value
	}
	if p.Config.InstanceUuid != uuid || p.Config.Annotation != "clone-0" || extra["test.mark"] != "ns/clone-0/uid" ||
		p.Config.Hardware.NumCPU != 3 || p.Config.Hardware.MemoryMB != 3072 {
		t.Errorf("clone: instance UUID %s, annotation %q, test.mark %v, %d CPUs, %d MiB; want the clone spec's",
			p.Config.InstanceUuid, p.Config.Annotation, extra["test.mark"], p.Config.Hardware.NumCPU, p.Config.Hardware.MemoryMB)
	}
}
