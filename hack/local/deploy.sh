#!/usr/bin/env bash
# deploy.sh CLUSTER_NAME: deploys the Machine API on a local kwok cluster the
# way a user does on vanilla Kubernetes (the README's kustomize commands), then
# runs the operator as a local process under its own ServiceAccount's identity
# (a token from the TokenRequest API), so missing RBAC fails just as in a
# cluster. kwok pods run no containers: the operator Deployment from the
# manifests is scheduled and "Running" but inert; the local process does the work.
#
# Writes .local/$CLUSTER_NAME-images.json, .local/$CLUSTER_NAME-operator.kubeconfig,
# the pid file .local/$CLUSTER_NAME.operator.pid and .local/logs/$CLUSTER_NAME-operator.log.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
name=${1:?usage: deploy.sh CLUSTER_NAME}
local_dir=$root/.local
admin=$local_dir/kubeconfig
[ "$name" = machine-api ] || admin=$local_dir/$name.kubeconfig
ns=openshift-machine-api
release=${RELEASE_VERSION:-0.0.1-local}
export KUBECONFIG=$admin
kubectl() { "$root/bin/kubectl" "$@"; }
mkdir -p "$local_dir/logs"

echo "deploy: bin/kustomize build . | bin/kubectl apply --server-side -f -"
bin/kustomize build . | kubectl apply --server-side -f - >/dev/null
kubectl wait --for condition=Established --timeout=60s crd --all >/dev/null
echo "deploy: bin/kustomize build config | bin/kubectl apply --server-side -f -; make kubemark-infra"
bin/kustomize build config | kubectl apply --server-side -f - >/dev/null
KUBECTL="$root/bin/kubectl" hack/kubemark-infra.sh >/dev/null
echo "deploy: a simulated control-plane node for the operand pods"
kubectl apply --server-side -f hack/local/node.yaml >/dev/null

# images.json exactly as the operator's pod would see it.
kubectl -n "$ns" get configmap machine-api-operator-images -o jsonpath='{.data.images\.json}' >"$local_dir/$name-images.json"

# A kubeconfig with a token of the operator's ServiceAccount.
token=$(kubectl -n "$ns" create token machine-api-operator --duration=24h)
server=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
ca=$(kubectl config view --minify --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
cat >"$local_dir/$name-operator.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: $name
  cluster:
    server: $server
    certificate-authority-data: $ca
users:
- name: machine-api-operator
  user:
    token: $token
contexts:
- name: machine-api-operator
  context: {cluster: $name, user: machine-api-operator, namespace: $ns}
current-context: machine-api-operator
KC

hack/local/stop-processes.sh "$name"
RELEASE_VERSION=$release nohup bin/machine-api-operator start \
	--kubeconfig "$local_dir/$name-operator.kubeconfig" \
	--images-json "$local_dir/$name-images.json" \
	--namespace "$ns" \
	--operand-stable-duration 0s \
	--metrics-bind-address 0 \
	--health-probe-bind-address 0 \
	--v=2 >"$local_dir/logs/$name-operator.log" 2>&1 &
echo $! >"$local_dir/$name.operator.pid"
echo "deploy: operator running as system:serviceaccount:$ns:machine-api-operator (pid $!, log .local/logs/$name-operator.log)"
