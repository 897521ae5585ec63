#!/usr/bin/env bash
# run.sh: `make run PLATFORM=vsphere`. Like hack/run.sh, on a vSphere
# platform served by the local vSphere: starts the kwok cluster (CLUSTER_NAME,
# default machine-api), vcsim (hack/vsphere/vcsim.sh), deploys the Machine API
# (hack/local/deploy.sh, which declares the kubemark platform first), then
# turns the Infrastructure into a VSphere one (hack/vsphere/cluster.yaml: the
# credentials Secret, openshift-config-managed/kube-cloud-config and
# openshift-config/cloud-provider-config, vcenters and a
# failure domain) with the operand's OpenShift-only RBAC (install/
# 0000_30_machine-api-operator_09_operand-rbac.yaml, as on OpenShift), starts the stand-in kubelet (bin/vsphere-kubelet,
# test/vsphere), waits for the ClusterOperator to become Available and creates
# a worker MachineSet with 2 replicas (hack/vsphere/machineset.yaml).
# `make cluster-down` stops everything (vcsim and the stand-in included).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
name=${CLUSTER_NAME:-machine-api}
export CLUSTER_NAME=$name
kubeconfig=$root/.local/kubeconfig
env_file=$root/.local/vsphere.env
logs=$root/.local/logs
if [ "$name" != machine-api ]; then
	kubeconfig=$root/.local/$name.kubeconfig
	env_file=$root/.local/$name.vsphere.env
	logs=$root/.local/logs/$name
fi
infra=${VSPHERE_INFRA:-machine-api-local}
export VSPHERE_INFRA=$infra
replicas=${VSPHERE_REPLICAS:-2}
ns=openshift-machine-api
kubectl() { "$root/bin/kubectl" --kubeconfig "$kubeconfig" "$@"; }
[ -x bin/vsphere-kubelet ] || { echo "bin/vsphere-kubelet is missing: run make vsphere-tools" >&2; exit 1; }

hack/cluster.sh up
# The operand's pod has a network namespace of its own: the local pod runner
# forwards vcsim's address into it. vcsim starts after deploy.sh, which stops
# the cluster's processes it finds by pid file.
VSPHERE_PORT=$(hack/vsphere/vcsim.sh port "$name")
export VSPHERE_PORT
LOCAL_PODS_ARGS="${LOCAL_PODS_ARGS:-} --forward-host=127.0.0.1:$VSPHERE_PORT" hack/local/deploy.sh "$name"
hack/vsphere/vcsim.sh up "$name"
# shellcheck disable=SC1090
. "$env_file"

echo "vsphere: Infrastructure cluster -> VSphere (vCenter 127.0.0.1:$VSPHERE_PORT, failure domain local-a), credentials, kube-cloud-config, cloud-provider-config"
sed -e "s#@USERNAME@#$GOVC_USERNAME#" -e "s#@PASSWORD@#$GOVC_PASSWORD#" -e "s#@PORT@#$VSPHERE_PORT#g" \
	-e "s#@FOLDER@#$VSPHERE_FOLDER#g" hack/vsphere/cluster.yaml >"$root/.local/vsphere/$name/cluster.yaml"
# deploy.sh applied the kubemark platform (config/): hand spec.platformSpec
# over to this script's field manager, then the status (a subresource).
kubectl patch infrastructure cluster --type=json -p '[{"op":"remove","path":"/spec/platformSpec/external"}]' >/dev/null 2>&1 || true
kubectl apply --server-side --force-conflicts --field-manager=local-vsphere -f "$root/.local/vsphere/$name/cluster.yaml" >/dev/null
# The operand's OpenShift-only RBAC (the root kustomization leaves it out):
# the provider reads the cloud provider config in openshift-config-managed
# (and openshift-config).
kubectl apply --server-side -f install/0000_30_machine-api-operator_09_operand-rbac.yaml >/dev/null
kubectl patch infrastructure cluster --subresource=status --type=merge -p '{
  "status": {
    "infrastructureName": "'"$infra"'",
    "controlPlaneTopology": "SingleReplica",
    "infrastructureTopology": "SingleReplica",
    "platform": "VSphere",
    "platformStatus": {"type": "VSphere", "vsphere": {}}
  }
}' >/dev/null

echo "vsphere: the stand-in kubelet (bin/vsphere-kubelet, log ${logs#"$root"/}/vsphere-kubelet.log) registers a Node for each powered-on VM in $VSPHERE_FOLDER"
mkdir -p "$logs"
# The pid file makes hack/local/stop-processes.sh (make cluster-down) stop it.
setsid bin/vsphere-kubelet -kubeconfig "$kubeconfig" -folder "$VSPHERE_FOLDER" >"$logs/vsphere-kubelet.log" 2>&1 </dev/null &
echo $! >"$root/.local/$name.vsphere-kubelet.pid"

echo "waiting for clusteroperator/machine-api to become Available"
available() {
	[ "$(kubectl get clusteroperator machine-api -o jsonpath='{.status.conditions[?(@.type=="Available")].status}' 2>/dev/null)" = True ]
}
# Available must hold for 5 s in a row, with the operand Deployment rolled
# out: right after the Infrastructure switch to VSphere the ClusterOperator
# can still say Available for the kubemark operand, then turn False while
# the operator rolls the vSphere one out.
rolled_out() {
	[ "$(kubectl -n "$ns" get deployment machine-api-controllers -o jsonpath='{.metadata.generation}={.status.observedGeneration} {.spec.replicas}={.status.updatedReplicas}={.status.availableReplicas}' 2>/dev/null)" = "$(kubectl -n "$ns" get deployment machine-api-controllers -o jsonpath='{.metadata.generation}={.metadata.generation} {.spec.replicas}={.spec.replicas}={.spec.replicas}' 2>/dev/null)" ]
}
steady=0
for _ in $(seq 1 360); do
	if available && rolled_out; then steady=$((steady + 1)); else steady=0; fi
	[ "$steady" -ge 10 ] && break
	sleep 0.5
done
if [ "$steady" -lt 10 ]; then
	echo "the ClusterOperator did not become Available:" >&2
	kubectl get clusteroperator machine-api -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}' >&2 || true
	exit 1
fi
kubectl get clusteroperator machine-api
echo
echo "creating the worker MachineSet $infra-worker-0 with $replicas replicas (hack/vsphere/machineset.yaml)"
sed "s#@INFRA@#$infra#g" hack/vsphere/machineset.yaml | kubectl apply --server-side -f - >/dev/null
kubectl -n "$ns" scale machineset "$infra-worker-0" --replicas="$replicas" >/dev/null
for _ in $(seq 1 360); do
	[ "$(kubectl -n "$ns" get machineset "$infra-worker-0" -o jsonpath='{.status.readyReplicas}' 2>/dev/null)" = "$replicas" ] && break
	sleep 0.5
done
kubectl -n "$ns" get machinesets,machines
echo
kubectl get nodes -l vsphere.machine-api-operator.io/stand-in-kubelet -o wide
echo
"$root/bin/govc" ls "$VSPHERE_FOLDER"
if [ "$(kubectl -n "$ns" get machineset "$infra-worker-0" -o jsonpath='{.status.readyReplicas}')" != "$replicas" ]; then
	echo "the MachineSet did not reach $replicas ready replicas; logs: ${logs#"$root"/}/machine-api-controllers-*/machine-controller.log" >&2
	exit 1
fi
cat <<MSG

The Machine API runs on a VSphere platform served by vcsim. Try:
  export KUBECONFIG=$kubeconfig
  . $env_file        # GOVC_URL, GOVC_USERNAME, GOVC_PASSWORD, GOVC_INSECURE=1
  bin/govc ls $VSPHERE_FOLDER                      # the Machines' VMs
  bin/govc vm.info -r $VSPHERE_FOLDER/*             # power state, IP, UUID
  bin/kubectl -n $ns scale machineset $infra-worker-0 --replicas=5
  bin/kubectl -n $ns get machines -o wide
Stop everything with: make cluster-down${CLUSTER_NAME:+ (CLUSTER_NAME=$name)}
MSG
