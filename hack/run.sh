#!/usr/bin/env bash
# run.sh: the main job on the local cluster. Starts the kwok cluster
# "machine-api", deploys the Machine API the way users do on vanilla Kubernetes
# (kustomize build | kubectl apply, then config/ for kubemark), runs the
# operator as a local process under its ServiceAccount's identity, and waits
# for the ClusterOperator machine-api to become Available.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
kubeconfig=$root/.local/kubeconfig
ns=openshift-machine-api
kubectl() { "$root/bin/kubectl" --kubeconfig "$kubeconfig" "$@"; }

hack/cluster.sh up
hack/local/deploy.sh machine-api

echo "waiting for clusteroperator/machine-api to become Available"
available() {
	[ "$(kubectl get clusteroperator machine-api -o jsonpath='{.status.conditions[?(@.type=="Available")].status}' 2>/dev/null)" = True ]
}
for _ in $(seq 1 240); do available && break; sleep 0.5; done
if ! available; then
	echo "the ClusterOperator did not become Available; last operator log lines:" >&2
	tail -n 30 .local/logs/machine-api-operator.log >&2
	exit 1
fi
kubectl get clusteroperator machine-api
echo
kubectl -n "$ns" get deployments,pods
cat <<MSG

The Machine API operator is running against the local cluster. Try:
  export KUBECONFIG=$kubeconfig
  bin/kubectl get clusteroperator machine-api -o yaml
  bin/kubectl -n $ns edit deployment machine-api-controllers   # the operator reverts the edit
  bin/kubectl patch infrastructure cluster --subresource=status --type=merge -p '{"status":{"platformStatus":{"type":"None"}}}'   # NoOp: operand pruned
  tail -f .local/logs/machine-api-operator.log
Stop everything with: make cluster-down
MSG
