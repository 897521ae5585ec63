#!/usr/bin/env bash
# run.sh: the main job on the local cluster. Starts the kwok cluster
# "machine-api", installs the config.openshift.io CRDs the operator reads, an
# Infrastructure for External/kubemark and a simulated node, then runs the
# operator as a local process (log: .local/logs/operator.log) and waits for the
# ClusterOperator machine-api to become Available.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
local_dir=$root/.local
kubeconfig=$local_dir/kubeconfig
ns=openshift-machine-api
kubectl() { "$root/bin/kubectl" --kubeconfig "$kubeconfig" "$@"; }

hack/cluster.sh up
mkdir -p "$local_dir/logs"

echo "installing the config.openshift.io CRDs, namespace $ns, Infrastructure (External/kubemark) and a kwok node"
kubectl apply --server-side -f manifests/crds/config >/dev/null
kubectl wait --for condition=Established --timeout=60s -f manifests/crds/config >/dev/null
kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply --server-side -f - >/dev/null
kubectl apply --server-side -f hack/local/infrastructure-kubemark.yaml >/dev/null
kubectl patch infrastructure cluster --subresource=status --type=merge \
	-p '{"status":{"infrastructureName":"kubemark","controlPlaneTopology":"SingleReplica","infrastructureTopology":"SingleReplica","platformStatus":{"type":"External"}}}' >/dev/null
kubectl apply --server-side -f hack/local/node.yaml >/dev/null

# (Re)start the operator.
hack/local/stop-processes.sh
cp hack/local/images.json "$local_dir/images.json"
RELEASE_VERSION=${RELEASE_VERSION:-0.0.1-local} nohup bin/machine-api-operator start \
	--kubeconfig "$kubeconfig" \
	--images-json "$local_dir/images.json" \
	--namespace "$ns" \
	--operand-stable-duration 0s \
	--metrics-bind-address 127.0.0.1:8085 \
	--health-probe-bind-address 127.0.0.1:9445 \
	--v=2 >"$local_dir/logs/operator.log" 2>&1 &
echo $! >"$local_dir/operator.pid"
echo "operator started (pid $(cat "$local_dir/operator.pid"), log .local/logs/operator.log)"

echo "waiting for clusteroperator/machine-api to become Available"
available() {
	[ "$(kubectl get clusteroperator machine-api -o jsonpath='{.status.conditions[?(@.type=="Available")].status}' 2>/dev/null)" = True ]
}
for _ in $(seq 1 240); do available && break; sleep 0.5; done
if ! available; then
	echo "the ClusterOperator did not become Available; last operator log lines:" >&2
	tail -n 30 "$local_dir/logs/operator.log" >&2
	exit 1
fi
kubectl get clusteroperator machine-api
echo
kubectl -n "$ns" get deployment,pods -o wide
cat <<MSG

The Machine API operator is running against the local cluster. Try:
  export KUBECONFIG=$kubeconfig
  bin/kubectl get clusteroperator machine-api -o yaml
  bin/kubectl -n $ns edit deployment machine-api-controllers   # the operator reverts the edit
  bin/kubectl patch infrastructure cluster --subresource=status --type=merge -p '{"status":{"platformStatus":{"type":"None"}}}'   # NoOp: operand pruned
  tail -f .local/logs/operator.log
Stop everything with: make cluster-down
MSG
