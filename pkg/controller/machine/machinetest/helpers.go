package machinetest

import (
	corev1 "k8s.io/api/core/v1"
)

func nodeAddress(ip string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip}
}
