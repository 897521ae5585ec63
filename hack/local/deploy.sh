#!/usr/bin/env bash
# deploy.sh CLUSTER_NAME: deploys the Machine API on a local kwok cluster the
# way a user does on vanilla Kubernetes (the README's kustomize commands,
# through the local overlay hack/local/overlay, see below), then starts the
# local pod runner (bin/local-pods, test/localpods): the operator's pod from
# the payload's Deployment, and then the operand's pod from the Deployment the
# operator renders, run as local processes of bin/ with exactly their pods'
# command, args, env, volumes and ServiceAccount tokens.
#
# The overlay changes two things of the payload's operator Deployment, both
# for a local cluster only: RELEASE_VERSION (release tooling sets it on a real
# payload) and --operand-stable-duration=0s (Available as soon as the operand
# is, instead of after 3 minutes).
#
# Writes .local/$CLUSTER_NAME.local-pods.pid, the runner's log
# .local/logs/$CLUSTER_NAME-local-pods.log and the containers' logs (see below).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
name=${1:?usage: deploy.sh CLUSTER_NAME}
local_dir=$root/.local
admin=$local_dir/kubeconfig
[ "$name" = machine-api ] || admin=$local_dir/$name.kubeconfig
release=${RELEASE_VERSION:-0.0.1-local}
# Container logs: .local/logs/<pod>/<container>.log for make run's cluster,
# .local/logs/$CLUSTER_NAME/<pod>/<container>.log for the others.
logs=$local_dir/logs
[ "$name" = machine-api ] || logs=$local_dir/logs/$name
export KUBECONFIG=$admin
kubectl() { "$root/bin/kubectl" "$@"; }
mkdir -p "$local_dir/logs"
[ -x bin/local-pods ] || { echo "bin/local-pods is missing: run make build" >&2; exit 1; }

# Outside the repository: kustomize refuses an overlay inside its base.
overlay=$(mktemp -d)
trap 'rm -rf "$overlay"' EXIT
sed "s#@RELEASE_VERSION@#$release#" hack/local/overlay/kustomization.yaml >"$overlay/kustomization.yaml"
cat >>"$overlay/kustomization.yaml" <<KZ
resources:
- $(realpath --relative-to="$overlay" "$root")
KZ
echo "deploy: bin/kustomize build . (local overlay: RELEASE_VERSION=$release, --operand-stable-duration=0s) | bin/kubectl apply --server-side -f -"
bin/kustomize build "$overlay" | kubectl apply --server-side -f - >/dev/null
kubectl wait --for condition=Established --timeout=60s crd --all >/dev/null
echo "deploy: bin/kustomize build config | bin/kubectl apply --server-side -f -; make kubemark-infra"
bin/kustomize build config | kubectl apply --server-side -f - >/dev/null
KUBECTL="$root/bin/kubectl" hack/kubemark-infra.sh >/dev/null
# The CA of the API server's webhook client certificate (hack/cluster.sh): the
# machineset-controller then serves only the API server.
client_ca=$local_dir/kwok/webhook-client/ca.crt
if [ -s "$client_ca" ]; then
	echo "deploy: ConfigMap machine-api-webhook-client-ca (the webhooks serve only the API server)"
	kubectl create configmap machine-api-webhook-client-ca -n openshift-machine-api --from-file=ca.crt="$client_ca" \
		--dry-run=client -o yaml | kubectl apply --server-side -f - >/dev/null
fi
echo "deploy: a simulated control-plane node for the operator's and operand's pods"
kubectl apply --server-side -f hack/local/node.yaml >/dev/null

hack/local/stop-processes.sh "$name"
# LOCAL_PODS_ARGS: more runner flags (hack/vsphere/run.sh: --forward-host).
# shellcheck disable=SC2086
nohup bin/local-pods \
	--kubeconfig "$admin" \
	--state-dir "$local_dir/pods/$name" \
	--log-dir "$logs" \
	--v=2 ${LOCAL_PODS_ARGS:-} >"$local_dir/logs/$name-local-pods.log" 2>&1 &
echo $! >"$local_dir/$name.local-pods.pid"
echo "deploy: local pod runner running (pid $!, log .local/logs/$name-local-pods.log); containers log to ${logs#"$root"/}/<pod>/<container>.log"
