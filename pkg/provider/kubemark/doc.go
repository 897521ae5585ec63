// Package kubemark is the built-in kubemark provider: a machine.Actuator whose
// "instance" is a Node registered in the cluster itself, which the cluster's
// kwok controller keeps Ready and whose pods it "runs". A Machine's
// providerSpec.value is a kubemark.machine-api-operator.io/v1alpha1
// KubemarkMachineProviderSpec (package pkg/apis/kubemark/v1alpha1). The
// provider serves that API group only (machine.ProviderSpecServer): the
// machine controller leaves a Machine whose providerSpec is of another group
// (another provider's) untouched and never calls the provider for it.
//
// # What the provider writes
//
// On the Machine (in memory; the machine controller persists these three):
//   - spec.providerID: kubemark://<namespace>/<name> (not while booting);
//   - status.addresses: the Node's InternalIP and Hostname (not while
//     booting);
//   - status.providerStatus: a KubemarkMachineProviderStatus with nodeName,
//     registeredAt (the Node's creationTimestamp), state (Booting, Running,
//     Unhealthy) and nextHealthTransition.
//
// Nodes (Create registers, Delete deletes; only a Node whose
// spec.providerID is the Machine's is ever changed or deleted):
//   - name: the Machine's name; spec.providerID as above;
//   - labels: the Machine's spec.metadata.labels, then
//     kubernetes.io/hostname=<name>, kubernetes.io/os=linux,
//     kubernetes.io/arch=amd64, node.kubernetes.io/instance-type=kubemark;
//   - annotation kwok.x-k8s.io/node=fake;
//   - status: capacity = allocatable = {cpu, memory, pods} from the
//     providerSpec; addresses InternalIP (NodeIP: stable per Machine, unique
//     among Nodes, in 127.128.0.0/9) and Hostname=<name>; nodeInfo
//     operatingSystem=linux, architecture=amd64; conditions as a ready
//     kubelet registers (Ready=True/KubeletReady, MemoryPressure,
//     DiskPressure and PIDPressure False) unless the health simulation
//     keeps the node unhealthy from the start (then none). kwok keeps it
//     Ready from then on (its Lease, its stages).
//
// # Health simulation (Update)
//
// The providerSpec's health policy gives a schedule (HealthAt) counted from
// the Node's creationTimestamp, so it survives restarts. While the schedule
// says unhealthy, Update:
//  1. takes over the Node's Lease kube-node-lease/<name> (holderIdentity
//     machine-api-kubemark-provider, renewTime unchanged, duration up to the
//     end of the spell): kwok neither renews a Lease held by someone else nor
//     touches that Node any more, and the node lifecycle controller sees no
//     heartbeat. This works whether kwok manages all nodes (kwokctl's binary
//     runtime) or only annotated ones;
//  2. removes the kwok.x-k8s.io/node annotation and adds
//     kubemark.machine-api-operator.io/simulated-unhealthy-since=<RFC 3339>;
//  3. sets the Node's Ready condition to Unknown (reason
//     KubemarkSimulatedUnhealthy, lastTransitionTime = start of the spell),
//     through the nodes/status subresource.
//
// It asks to be called again when the spell ends or after at most
// Options.ReassertInterval, and reasserts all three: kwok may still play one
// heartbeat it had scheduled before the failure.
//
// When the schedule says healthy again (Periodic mode), Update deletes that
// Lease (kwok creates its own and sets the Node Ready), restores the kwok
// annotation and removes the simulated-unhealthy annotation. It touches only
// Nodes that carry that annotation.
//
// RBAC: nodes get/list/watch/create/delete/patch, nodes/status
// update/patch, and coordination.k8s.io leases get/list/watch/create/update/
// delete (in kube-node-lease).
package kubemark
