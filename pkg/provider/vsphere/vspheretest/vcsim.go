// Package vspheretest starts govmomi's vCenter simulator (vcsim, VPX model, with the REST API for tags) on
// 127.0.0.1 for the vSphere provider's tests, with a powered-off, hardware-15 template "rhcos"; clones keep
// their spec's configuration, as on vCenter (KeepCloneConfig).
package vspheretest

import (
	"context"
	"crypto/tls"
	"net"
	"net/url"
	"slices"
	"testing"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	_ "github.com/vmware/govmomi/vapi/simulator" // the vCenter REST API (tags)
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// Names in the simulated inventory.
const (
	Template     = "rhcos"
	Datacenter   = "DC0"
	Folder       = "/DC0/vm"
	Datastore    = "LocalDS_0"
	ResourcePool = "/DC0/host/DC0_C0/Resources"
	Network      = "DC0_DVPG0"
	Username     = "administrator@vsphere.local"
	Password     = "vcsim-secret"
)

// VCenter is a running simulator and a client that inspects it behind the provider's back.
type VCenter struct {
	// Server (127.0.0.1) and Port are the provider's endpoint: a relay to vcsim that Pause can stop.
	Server, Port string
	// Client talks to vcsim directly, so the test can look while the provider's endpoint is paused.
	Client *govmomi.Client
	Finder *find.Finder
	proxy  *proxy
	t      testing.TB
	ctx    context.Context
}

// Start starts vcsim; hook (optional) changes the model before it is built (delays, more datastores). Everything
// stops when the test ends.
func Start(t testing.TB, hook func(*simulator.Model)) *VCenter {
	t.Helper()
	ctx := context.Background()
	model := simulator.VPX()
	if hook != nil {
		hook(model)
	}
	if err := model.Create(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(model.Remove)
	KeepCloneConfig(model.Map())
	model.Service.Listen = &url.URL{Host: "127.0.0.1:0", User: url.UserPassword(Username, Password)} // loopback only
	model.Service.RegisterEndpoints = true                                                           // REST API
	model.Service.TLS = new(tls.Config)                                                              // https, as vCenter
	srv := model.Service.NewServer()
	t.Cleanup(srv.Close)
	p := startProxy(t, srv.URL.Host)
	host, port, err := net.SplitHostPort(p.ln.Addr().String())
	must(host, err)(t)
	c := must(govmomi.NewClient(ctx, srv.URL, true))(t)
	v := &VCenter{Server: host, Port: port, Client: c, Finder: find.NewFinder(c.Client, true), proxy: p, t: t, ctx: ctx}
	v.Finder.SetDatacenter(must(v.Finder.Datacenter(ctx, Datacenter))(t))
	tpl := v.VM("DC0_C0_RP0_VM0")
	v.Wait(tpl.PowerOff(ctx))
	v.Wait(tpl.UpgradeVM(ctx, "vmx-15")) // OpenShift refuses templates older than hardware 15
	v.Wait(tpl.Rename(ctx, Template))
	return v
}

// must returns a check that fails the test on err and returns val: must(f())(t).
func must[T any](val T, err error) func(testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return val
	}
}

// VM finds a VM by name.
func (v *VCenter) VM(name string) *object.VirtualMachine {
	v.t.Helper()
	return must(v.Finder.VirtualMachine(v.ctx, name))(v.t) // the error names the VM
}

// Wait waits for a task started by the test.
func (v *VCenter) Wait(task *object.Task, err error) {
	v.t.Helper()
	if err == nil {
		err = task.Wait(v.ctx)
	}
	if err != nil {
		v.t.Fatal(err)
	}
}

// VMsNamed counts the datacenter's VMs with that name.
func (v *VCenter) VMsNamed(name string) int {
	v.t.Helper()
	vms := must(v.Finder.VirtualMachineList(v.ctx, "*"))(v.t)
	return len(slices.DeleteFunc(vms, func(vm *object.VirtualMachine) bool { return vm.Name() != name }))
}

// Props reads a VM's properties.
func (v *VCenter) Props(vm *object.VirtualMachine, ps ...string) mo.VirtualMachine {
	v.t.Helper()
	var m mo.VirtualMachine
	if err := vm.Properties(v.ctx, vm.Reference(), ps, &m); err != nil {
		v.t.Fatal(err)
	}
	return m
}

// SetGuestIP makes the VM's guest report ip on its first NIC, as VMware tools would (vcsim's extraConfig key).
func (v *VCenter) SetGuestIP(name, ip string) {
	v.t.Helper()
	v.Wait(v.VM(name).Reconfigure(v.ctx, types.VirtualMachineConfigSpec{
		ExtraConfig: []types.BaseOptionValue{&types.OptionValue{Key: "SET.guest.ipAddress", Value: ip}},
	}))
}
