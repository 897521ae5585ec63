#!/usr/bin/env bash
# deploy.sh CLUSTER_NAME: deploys the Machine API on a local kwok cluster the
# way a user does on vanilla Kubernetes (the README's kustomize commands), then
# runs the operator as a local process under its own ServiceAccount's identity
# (a token from the TokenRequest API), so missing RBAC fails just as in a
# cluster. kwok pods run no containers: the operator Deployment from the
# manifests is scheduled and "Running" but inert; the local process does the work.
#
# Then runs the operands (machine-controller-manager, nodelink-controller,
# machineset-controller, machine-healthcheck) the same way under the machine-api-controllers
# ServiceAccount.
#
# OPERAND_ARGS adds flags to every operand (experiments: make bench).
# PPROF=1 serves the operands' Go pprof endpoints (see hack/bench.sh).
#
# Writes .local/$CLUSTER_NAME-images.json, .local/$CLUSTER_NAME-{operator,controllers}.kubeconfig,
# pid files .local/$CLUSTER_NAME.<process>.pid and logs .local/logs/$CLUSTER_NAME-<process>.log.
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

# sa_kubeconfig SA FILE: a kubeconfig with a token of the ServiceAccount SA.
sa_kubeconfig() {
	local sa=$1 file=$2 token server ca
	token=$(kubectl -n "$ns" create token "$sa" --duration=24h)
	server=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
	ca=$(kubectl config view --minify --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
	cat >"$file" <<KC
apiVersion: v1
kind: Config
clusters:
- name: $name
  cluster:
    server: $server
    certificate-authority-data: $ca
users:
- name: $sa
  user:
    token: $token
contexts:
- name: $sa
  context: {cluster: $name, user: $sa, namespace: $ns}
current-context: $sa
KC
}
sa_kubeconfig machine-api-operator "$local_dir/$name-operator.kubeconfig"

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

# The operands run as local processes too, under the ServiceAccount the
# operator renders for them (machine-api-controllers), once it exists.
for _ in $(seq 1 120); do
	kubectl -n "$ns" get serviceaccount machine-api-controllers >/dev/null 2>&1 && break
	sleep 0.5
done
sa_kubeconfig machine-api-controllers "$local_dir/$name-controllers.kubeconfig"

# The machineset-controller serves the admission webhooks with the serving
# certificate the operator issued into the Secret its container mounts.
certs=$local_dir/$name-webhook-certs
mkdir -p "$certs"
for _ in $(seq 1 120); do
	kubectl -n "$ns" get secret machine-api-operator-webhook-cert >/dev/null 2>&1 && break
	sleep 0.5
done
for key in tls.crt tls.key; do
	kubectl -n "$ns" get secret machine-api-operator-webhook-cert -o "go-template={{index .data \"$key\"}}" | base64 -d >"$certs/$key"
done

for operand in machine-controller-manager nodelink-controller machineset-controller machine-healthcheck; do
	[ -x "bin/$operand" ] || continue
	extra=()
	if [ "$operand" = machineset-controller ]; then
		extra=(--webhook-host 127.0.0.1 --webhook-port "${WEBHOOK_PORT:-8443}" --webhook-cert-dir "$certs")
	fi
	# PPROF=1 (make bench PROFILE=1): Go pprof endpoints on 127.0.0.1:6060-6062.
	if [ "${PPROF:-0}" = 1 ]; then
		case $operand in
		machine-controller-manager) extra+=(--pprof-bind-address 127.0.0.1:6060) ;;
		nodelink-controller) extra+=(--pprof-bind-address 127.0.0.1:6061) ;;
		machineset-controller) extra+=(--pprof-bind-address 127.0.0.1:6062) ;;
		machine-healthcheck) extra+=(--pprof-bind-address 127.0.0.1:6063) ;;
		esac
	fi
	nohup "bin/$operand" \
		--kubeconfig "$local_dir/$name-controllers.kubeconfig" \
		--namespace "$ns" \
		--metrics-bind-address 0 \
		--health-probe-bind-address 0 \
		"${extra[@]}" ${OPERAND_ARGS:-} \
		--v=2 >"$local_dir/logs/$name-$operand.log" 2>&1 &
	echo $! >"$local_dir/$name.$operand.pid"
	echo "deploy: $operand running as system:serviceaccount:$ns:machine-api-controllers (pid $!, log .local/logs/$name-$operand.log)"
done
