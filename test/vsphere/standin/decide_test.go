package standin

import (
	"net/netip"
	"reflect"
	"testing"
)

func TestDecide(t *testing.T) {
	const uuidA, uuidB = "4216A0C4-0000-0000-0000-00000000000A", "4216a0c4-0000-0000-0000-00000000000b"
	ipA := GuestIP(uuidA, 0)
	on := func(name, uuid, ip string) VM {
		return VM{Ref: "vm-" + name, Name: name, BIOSUUID: uuid, PoweredOn: true, GuestIP: ip}
	}
	tests := []struct {
		name  string
		vms   []VM
		nodes []Node
		want  Plan
	}{
		{name: "nothing", want: Plan{}},
		{
			name: "a powered-on VM without a guest IP gets one",
			vms:  []VM{on("a", uuidA, "")},
			want: Plan{AssignIPs: []IPAssignment{{VM: on("a", uuidA, ""), IP: ipA}}},
		},
		{
			name: "the candidate IP is taken by another VM: the next one",
			vms:  []VM{on("b", uuidB, ipA.String()), on("a", uuidA, "")},
			want: Plan{
				AssignIPs:   []IPAssignment{{VM: on("a", uuidA, ""), IP: GuestIP(uuidA, 1)}},
				CreateNodes: []VM{on("b", uuidB, ipA.String())},
			},
		},
		{
			name: "a powered-off VM gets nothing",
			vms:  []VM{{Ref: "vm-a", Name: "a", BIOSUUID: uuidA}},
			want: Plan{},
		},
		{
			name:  "a VM with its Node: nothing to do",
			vms:   []VM{on("a", uuidA, "127.99.1.2")},
			nodes: []Node{{Name: "a", ProviderID: "vsphere://4216a0c4-0000-0000-0000-00000000000a"}},
			want:  Plan{},
		},
		{
			name:  "the Node of a powered-off VM is deleted",
			vms:   []VM{{Ref: "vm-a", Name: "a", BIOSUUID: uuidA, GuestIP: "127.99.1.2"}},
			nodes: []Node{{Name: "a", ProviderID: "vsphere://4216a0c4-0000-0000-0000-00000000000a"}},
			want:  Plan{DeleteNodes: []string{"a"}},
		},
		{
			name:  "the Nodes of gone VMs are deleted, sorted",
			nodes: []Node{{Name: "z", ProviderID: "vsphere://1"}, {Name: "b", ProviderID: "vsphere://2"}},
			want:  Plan{DeleteNodes: []string{"b", "z"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Decide(tt.vms, tt.nodes); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Decide() = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestGuestIP(t *testing.T) {
	seen := map[netip.Addr]bool{}
	for attempt := range 300 {
		ip := GuestIP("4216a0c4-0000-0000-0000-00000000000a", attempt)
		if !GuestNetwork.Contains(ip) {
			t.Fatalf("attempt %d: %s is outside %s", attempt, ip, GuestNetwork)
		}
		if last := ip.As4()[3]; last == 0 || last == 255 {
			t.Fatalf("attempt %d: %s ends in .%d", attempt, ip, last)
		}
		seen[ip] = true
	}
	if len(seen) < 290 {
		t.Errorf("300 attempts gave %d distinct IPs, want nearly 300", len(seen))
	}
	if a, b := GuestIP("4216A0C4-0000-0000-0000-00000000000A", 0), GuestIP("4216a0c4-0000-0000-0000-00000000000a", 0); a != b {
		t.Errorf("the IP depends on the UUID's case: %s != %s", a, b)
	}
	if got, want := ProviderID("4216A0C4-AB"), "vsphere://4216a0c4-ab"; got != want {
		t.Errorf("ProviderID = %s, want %s", got, want)
	}
}
