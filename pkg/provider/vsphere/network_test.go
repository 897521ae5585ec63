package vsphere

import (
	"slices"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider/vsphere/vspheretest"
)

// TestNetworkKargs: the dracut arguments in OpenShift's format (what its constructKargsFromNetworkConfig
// writes, trailing space included). Breaks if: the netmask were the prefix length for IPv4, IPv6 lost its
// brackets, a gateway of the other family were written, or a pool's gateway did not override the device's.
func TestNetworkKargs(t *testing.T) {
	cases := []struct {
		name    string
		devices []machinev1beta1.NetworkDeviceSpec
		pools   []poolAddresses
		want    string
		wantErr bool
	}{
		{name: "none", devices: []machinev1beta1.NetworkDeviceSpec{{NetworkName: "n"}}, want: ""},
		{name: "IPv4 with gateway and nameservers",
			devices: []machinev1beta1.NetworkDeviceSpec{{IPAddrs: []string{"192.168.1.10/24"}, Gateway: "192.168.1.1", Nameservers: []string{"192.168.1.2", "fd00::53"}}},
			want:    "ip=192.168.1.10::192.168.1.1:255.255.255.0:::none nameserver=192.168.1.2 nameserver=[fd00::53] "},
		{name: "IPv6",
			devices: []machinev1beta1.NetworkDeviceSpec{{IPAddrs: []string{"fd00::10/64"}, Gateway: "fd00::1"}},
			want:    "ip=[fd00::10]::[fd00::1]:64:::none "},
		{name: "dual stack: each address gets the gateway of its family only",
			devices: []machinev1beta1.NetworkDeviceSpec{{IPAddrs: []string{"10.0.0.5/16", "fd00::5/64"}, Gateway: "10.0.0.1"}},
			want:    "ip=10.0.0.5::10.0.0.1:255.255.0.0:::none ip=[fd00::5]:::64:::none "},
		{name: "two devices, pool addresses after ipAddrs, the pool's gateway wins",
			devices: []machinev1beta1.NetworkDeviceSpec{
				{IPAddrs: []string{"10.0.0.5/24"}, Gateway: "10.0.0.1", Nameservers: []string{"10.0.0.53"}},
				{Gateway: "172.16.0.1"},
			},
			pools: []poolAddresses{{}, {addrs: []string{"172.16.0.7/20"}, gateway: "172.16.0.254"}},
			want:  "ip=10.0.0.5::10.0.0.1:255.255.255.0:::none nameserver=10.0.0.53 ip=172.16.0.7::172.16.0.254:255.255.240.0:::none "},
		{name: "an address without prefix", devices: []machinev1beta1.NetworkDeviceSpec{{IPAddrs: []string{"10.0.0.5"}}}, wantErr: true},
		{name: "a bad gateway", devices: []machinev1beta1.NetworkDeviceSpec{{IPAddrs: []string{"10.0.0.5/24"}, Gateway: "gw"}}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := networkKargs(tc.devices, tc.pools)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("kargs\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestHasStaticIPConfiguration: any address, gateway, nameserver or pool counts, on any device.
func TestHasStaticIPConfiguration(t *testing.T) {
	for _, d := range []machinev1beta1.NetworkDeviceSpec{
		{IPAddrs: []string{"10.0.0.5/24"}}, {Gateway: "10.0.0.1"}, {Nameservers: []string{"10.0.0.53"}},
		{AddressesFromPools: []machinev1beta1.AddressesFromPool{{Name: "p"}}},
	} {
		spec := &machinev1beta1.VSphereMachineProviderSpec{Network: machinev1beta1.NetworkSpec{Devices: []machinev1beta1.NetworkDeviceSpec{{NetworkName: "a"}, d}}}
		if !hasStaticIPConfiguration(spec) {
			t.Errorf("%+v: not static", d)
		}
	}
	if hasStaticIPConfiguration(&machinev1beta1.VSphereMachineProviderSpec{Network: machinev1beta1.NetworkSpec{Devices: []machinev1beta1.NetworkDeviceSpec{{NetworkName: "a"}}}}) {
		t.Error("a device with a network name only counts as static")
	}
}

// secondNetwork gives vcsim a second distributed port group, DC0_DVPG1.
func secondNetwork(m *simulator.Model) { m.Portgroup = 2 }

// nicNetworks lists the VM's NICs' port group names, in device order.
func (e *simEnv) nicNetworks(vm *object.VirtualMachine) []string {
	e.t.Helper()
	var out []string
	p := e.props(vm, "config.hardware.device")
	for _, nic := range object.VirtualDeviceList(p.Config.Hardware.Device).SelectByType((*types.VirtualEthernetCard)(nil)) {
		b, ok := nic.GetVirtualDevice().Backing.(*types.VirtualEthernetCardDistributedVirtualPortBackingInfo)
		if !ok {
			out = append(out, "not a port group")
			continue
		}
		var pg mo.DistributedVirtualPortgroup
		ref := types.ManagedObjectReference{Type: "DistributedVirtualPortgroup", Value: b.Port.PortgroupKey}
		if err := e.Client.RetrieveOne(e.ctx, ref, []string{"name"}, &pg); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, pg.Name)
	}
	return out
}

// extraConfig reads one extraConfig value of the VM ("" when unset).
func (e *simEnv) extraConfig(vm *object.VirtualMachine, key string) string {
	e.t.Helper()
	for _, o := range e.props(vm, "config.extraConfig").Config.ExtraConfig {
		if ov := o.GetOptionValue(); ov.Key == key {
			s, _ := ov.Value.(string)
			return s
		}
	}
	return ""
}

// A Machine with two network devices gets one vmxnet3 NIC per device, on each device's port group, in the
// devices' order, and its static addresses, gateway and nameservers reach the guest in OpenShift's guestinfo
// key; Update reports both NICs. Breaks if: only the first device got a NIC, the NICs were added in another
// order, or the kargs were left out of the clone's extraConfig.
func TestCreateWithTwoNetworksAndStaticIPs(t *testing.T) {
	e := newSimEnvWith(t, secondNetwork, Options{})
	m := e.newMachine("worker-0", func(s *machinev1beta1.VSphereMachineProviderSpec) {
		s.Network.Devices = []machinev1beta1.NetworkDeviceSpec{
			{NetworkName: "DC0_DVPG1", IPAddrs: []string{"192.168.10.20/24"}, Gateway: "192.168.10.1", Nameservers: []string{"192.168.10.2"}},
			{NetworkName: vspheretest.Network, IPAddrs: []string{"fd00:10::20/64"}},
		}
	})
	if err := e.until(m, e.a.Create, true); err != nil {
		t.Fatal(err)
	}
	vm := e.vm("worker-0")
	if got, want := e.nicNetworks(vm), []string{"DC0_DVPG1", vspheretest.Network}; !slices.Equal(got, want) {
		t.Errorf("NICs on %v, want %v", got, want)
	}
	for _, nic := range object.VirtualDeviceList(e.props(vm, "config.hardware.device").Config.Hardware.Device).SelectByType((*types.VirtualEthernetCard)(nil)) {
		if _, ok := nic.(*types.VirtualVmxnet3); !ok {
			t.Errorf("NIC %T, want vmxnet3", nic)
		}
	}
	want := "ip=192.168.10.20::192.168.10.1:255.255.255.0:::none nameserver=192.168.10.2 ip=[fd00:10::20]:::64:::none "
	if got := e.extraConfig(vm, guestInfoNetworkKargs); got != want {
		t.Errorf("%s = %q, want %q", guestInfoNetworkKargs, got, want)
	}
	if err := call(m, e.a.Update, true); err != nil {
		t.Fatalf("Update with two NICs: %v", err)
	}
}
