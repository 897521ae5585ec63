// Package localpods runs the pods of the operator's and the operand's
// Deployments on the local (kwok) cluster as local processes, from their
// spec, the way a kubelet would: it is test and development tooling, not
// part of the image.
//
// kwok is told to leave these pods alone (hack/kwokctl.yaml,
// --disregard-status-with-label-selector); the Runner owns them instead:
//
//   - every pod gets a sandbox: its own network namespace (only a loopback
//     interface, which also answers the pod IP, drawn from 127.98.0.0/16) and
//     UTS namespace (hostname = pod name); each container gets its own mount
//     namespace where the pod's volumes (Secrets, ConfigMaps, the projected
//     ServiceAccount token, downward API, emptyDir) are bind-mounted at the
//     container's mount paths, the root filesystem is read-only when the
//     container asks for it, and the process runs as the container's user
//     (runAsUser, else the image's USER 65532), executing its binary through
//     a descriptor opened as root, so the checkout may sit in a directory
//     that user cannot enter (mktemp -d);
//   - a container whose image is this project's (ImageIsOurs) runs the
//     matching binary of bin/ (its command's base name, e.g.
//     /machineset-controller → bin/machineset-controller) with exactly the
//     container's command, args and env (valueFrom and $(VAR) resolved, the
//     kubernetes Service variables injected); containers of other images are
//     reported as not run (waiting, reason NotRunLocally);
//   - readiness and liveness follow the container's probes; a process that
//     exits is restarted with back-off and its restart count, last state and
//     termination message show on the pod; a deleted pod's processes get
//     SIGTERM, then SIGKILL after the grace period, and the pod is removed;
//   - logs go to <log dir>/<pod>/<container>.log.
//
// Networking stays on 127.0.0.0/8: Endpoints and EndpointSlices refuse
// loopback addresses, so the Runner also plays kube-proxy for the Services
// that select its pods (it listens on their ClusterIP:port on the host and
// forwards to the IP and target port of a pod whose containers that run are
// Ready, NotRunLocally ones left out: the API server calls the
// admission webhooks this way), forwards each pod IP's declared container
// ports into the pod's namespace, and inside each pod forwards the
// kubernetes Service's ClusterIP to the API server of its kubeconfig, and
// each --forward-host address to the same address on the host (the local
// vSphere's vcsim).
//
// It needs root (namespaces and mounts).
package localpods
