package vsphere

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

// guestInfoNetworkKargs is the guestinfo key whose dracut arguments RHCOS's afterburn applies in the initramfs
// (OpenShift's key): static addresses, gateways and nameservers.
const guestInfoNetworkKargs = "guestinfo.afterburn.initrd.network-kargs"

// hasStaticIPConfiguration reports whether any network device sets addresses, a gateway, nameservers or pools:
// OpenShift then writes the network kargs and keeps the IPAddressClaimed condition.
func hasStaticIPConfiguration(spec *machinev1beta1.VSphereMachineProviderSpec) bool {
	for _, d := range spec.Network.Devices {
		if d.Gateway != "" || len(d.IPAddrs) > 0 || len(d.Nameservers) > 0 || len(d.AddressesFromPools) > 0 {
			return true
		}
	}
	return false
}

// poolAddresses are the addresses a device got from its pools: "<address>/<prefix>" in pool order, and the
// last gateway an address named.
type poolAddresses struct {
	addrs   []string
	gateway string
}

// networkKargs renders the devices' static configuration as OpenShift does, device by device: for each address
// (ipAddrs, then the pools') "ip=<ip>::<gateway>:<netmask>:::none " (IPv6: the address and gateway in brackets,
// the prefix length as netmask; a gateway of the other family is left out), then "nameserver=<ns> " for each
// nameserver (IPv6 in brackets). A pool's gateway overrides the device's. pools[i] belongs to devices[i].
func networkKargs(devices []machinev1beta1.NetworkDeviceSpec, pools []poolAddresses) (string, error) {
	var b strings.Builder
	for i, d := range devices {
		var fromPools poolAddresses
		if i < len(pools) {
			fromPools = pools[i]
		}
		gateway := d.Gateway
		if fromPools.gateway != "" {
			gateway = fromPools.gateway
		}
		var gw netip.Addr
		if gateway != "" {
			var err error
			if gw, err = netip.ParseAddr(gateway); err != nil {
				return "", fmt.Errorf("network.devices[%d]: error parsing gateway address: %w", i, err)
			}
		}
		for _, a := range append(append([]string{}, d.IPAddrs...), fromPools.addrs...) {
			prefix, err := netip.ParsePrefix(a)
			if err != nil {
				return "", fmt.Errorf("network.devices[%d]: error parsing prefix: %w", i, err)
			}
			ip, gwStr, mask := prefix.Addr().String(), "", ""
			if prefix.Addr().Is6() {
				ip, mask = "["+ip+"]", fmt.Sprint(prefix.Bits())
				if gw.Is6() {
					gwStr = "[" + gateway + "]"
				}
			} else {
				mask = net.IP(net.CIDRMask(prefix.Bits(), 32)).String()
				if gw.Is4() {
					gwStr = gateway
				}
			}
			fmt.Fprintf(&b, "ip=%s::%s:%s:::none ", ip, gwStr, mask)
		}
		for _, ns := range d.Nameservers {
			if ip := net.ParseIP(ns); ip == nil || ip.To4() == nil {
				ns = "[" + ns + "]"
			}
			fmt.Fprintf(&b, "nameserver=%s ", ns)
		}
	}
	return b.String(), nil
}
