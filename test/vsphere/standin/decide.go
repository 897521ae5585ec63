// Package standin plays the part of the kubelet (and of VMware Tools) for the
// VMs of a local vSphere (vcsim): the vSphere provider only creates VMs, and
// on a real cluster each VM boots RHCOS, whose kubelet registers a Node. Here,
// for each powered-on VM of the cluster's folder, the stand-in
//  1. gives the guest an IP address in 127.99.0.0/16 through the VM's
//     extraConfig key SET.guest.ipAddress (vcsim's way to fake VMware Tools),
//  2. once vCenter reports that IP, registers a Node named after the VM with
//     providerID vsphere://<BIOS UUID> and that InternalIP, marked for kwok
//     (annotation kwok.x-k8s.io/node=fake), which keeps it Ready,
//  3. deletes the Node when the VM is powered off or gone.
//
// It changes only Nodes it created (label StandInLabel). It is test
// machinery, kept outside the provider: the provider itself never creates
// Nodes.
package standin

import (
	"encoding/binary"
	"hash/fnv"
	"net/netip"
	"sort"
	"strings"
)

// GuestNetwork is where guest IPs are drawn from: loopback, so nothing leaves
// the machine, and away from the local cluster's Services (127.96.0.0/16),
// pods (127.97.0.0/16), local pods (127.98.0.0/16) and kubemark Nodes
// (127.128.0.0/9).
var GuestNetwork = netip.MustParsePrefix("127.99.0.0/16")

// VM is what the stand-in reads of a VM in the cluster's folder.
type VM struct {
	// Ref is the VM's managed object ID (vm-42).
	Ref       string
	Name      string
	BIOSUUID  string
	PoweredOn bool
	// GuestIP is the IP address vCenter reports for the guest ("" before
	// "VMware Tools" reported one).
	GuestIP   string
	CPUs      int32
	MemoryMiB int32
}

// Node is what the stand-in reads of a Node it registered.
type Node struct {
	Name       string
	ProviderID string
}

// IPAssignment asks to make a VM's guest report IP.
type IPAssignment struct {
	VM VM
	IP netip.Addr
}

// Plan is what one pass does.
type Plan struct {
	AssignIPs   []IPAssignment
	CreateNodes []VM
	DeleteNodes []string
}

// Empty reports whether the plan does nothing.
func (p Plan) Empty() bool {
	return len(p.AssignIPs) == 0 && len(p.CreateNodes) == 0 && len(p.DeleteNodes) == 0
}

// ProviderID is the providerID of the VM's Node, as the vSphere provider
// sets it on the Machine: vsphere://<BIOS UUID, lower case>.
func ProviderID(biosUUID string) string {
	return "vsphere://" + strings.ToLower(biosUUID)
}

// NodeName is the Node name of a VM: its name in lower case (the guest's
// hostname; OpenShift names VMs after their Machines).
func NodeName(vmName string) string {
	return strings.ToLower(vmName)
}

// Decide compares the VMs with the Nodes the stand-in registered: a powered-on
// VM without a guest IP gets one (a stable function of its BIOS UUID, unique
// among the VMs); a powered-on VM with a guest IP and no Node gets a Node; a
// Node whose VM is powered off or gone is deleted.
func Decide(vms []VM, nodes []Node) Plan {
	var plan Plan
	used := map[netip.Addr]bool{}
	for _, vm := range vms {
		if ip, err := netip.ParseAddr(vm.GuestIP); err == nil {
			used[ip] = true
		}
	}
	running := map[string]bool{} // providerIDs of powered-on VMs
	registered := map[string]bool{}
	for _, n := range nodes {
		registered[n.ProviderID] = true
	}
	for _, vm := range vms {
		if !vm.PoweredOn || vm.BIOSUUID == "" {
			continue
		}
		id := ProviderID(vm.BIOSUUID)
		running[id] = true
		switch {
		case vm.GuestIP == "":
			ip := freeIP(vm.BIOSUUID, used)
			used[ip] = true
			plan.AssignIPs = append(plan.AssignIPs, IPAssignment{VM: vm, IP: ip})
		case !registered[id]:
			plan.CreateNodes = append(plan.CreateNodes, vm)
		}
	}
	for _, n := range nodes {
		if !running[n.ProviderID] {
			plan.DeleteNodes = append(plan.DeleteNodes, n.Name)
		}
	}
	sort.Strings(plan.DeleteNodes)
	return plan
}

// freeIP returns the first candidate guest IP of the VM that is not used.
func freeIP(biosUUID string, used map[netip.Addr]bool) netip.Addr {
	for attempt := 0; ; attempt++ {
		if ip := GuestIP(biosUUID, attempt); !used[ip] {
			return ip
		}
	}
}

// GuestIP returns the attempt-th candidate guest IP of a VM: a stable function
// of its BIOS UUID inside GuestNetwork, never ending in .0 or .255.
func GuestIP(biosUUID string, attempt int) netip.Addr {
	h := fnv.New64a()
	h.Write([]byte(strings.ToLower(biosUUID)))
	h.Write([]byte{byte(attempt), byte(attempt >> 8), byte(attempt >> 16)})
	sum := h.Sum64()
	block := uint32(sum % 256)        // the third octet
	host := uint32((sum/256)%254) + 1 // 1..254
	base := GuestNetwork.Addr().As4()
	ip := binary.BigEndian.Uint32(base[:]) + block<<8 + host
	var out [4]byte
	binary.BigEndian.PutUint32(out[:], ip)
	return netip.AddrFrom4(out)
}
