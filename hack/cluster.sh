#!/usr/bin/env bash
# cluster.sh up|down|status: the local kwok cluster "machine-api".
# Every component (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kwok-controller) is a local process built by `make tools`.
# Its state lives in .local/kwok; the kubeconfig is written to .local/kubeconfig
# (.local/$CLUSTER_NAME.kubeconfig for another CLUSTER_NAME).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/bin
local_dir=$root/.local
name=${CLUSTER_NAME:-machine-api}
kubeconfig=$local_dir/kubeconfig
[ "$name" = machine-api ] || kubeconfig=$local_dir/$name.kubeconfig
export KWOK_WORKDIR=$local_dir/kwok
config=$KWOK_WORKDIR/kwok.yaml
kwokctl=$bin/kwokctl

# free_port FROM: the first port from FROM on which nothing listens on
# loopback (kwok's kubelet server, hack/kwokctl.yaml's @KUBELET_PORT@).
free_port() {
	local p
	for p in $(seq "$1" $(($1 + 100))); do
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
	done
	echo "no free port in $1..$(($1 + 100))" >&2
	return 1
}

# The API server's webhook client identity (docs/openshift.md, "The webhook server
# serves only the API server"): a CA and a client certificate it signs, which the
# kube-apiserver presents to the machine-api webhooks (admission.yaml, named in
# hack/kwokctl.yaml). hack/local/deploy.sh puts the CA into the ConfigMap
# machine-api-webhook-client-ca, so the machineset-controller serves only it.
webhook_client=$KWOK_WORKDIR/webhook-client
webhook_client_pki() {
	local d=$webhook_client
	[ -s "$d/admission.yaml" ] && return 0
	mkdir -p "$d"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
		-subj /CN=machine-api-local-webhook-client-ca -keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=kube-apiserver-webhook-client \
		-keyout "$d/client.key" -out "$d/client.csr" 2>/dev/null
	printf 'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature\n' >"$d/client.ext"
	openssl x509 -req -in "$d/client.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 3650 \
		-extfile "$d/client.ext" -out "$d/client.crt" 2>/dev/null
	cat >"$d/kubeconfig" <<KC
apiVersion: v1
kind: Config
users:
- name: '*.openshift-machine-api.svc'
  user:
    client-certificate: $d/client.crt
    client-key: $d/client.key
KC
	cat >"$d/admission.yaml.tmp" <<AC
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration: {apiVersion: apiserver.config.k8s.io/v1, kind: WebhookAdmissionConfiguration, kubeConfigFile: $d/kubeconfig}
- name: MutatingAdmissionWebhook
  configuration: {apiVersion: apiserver.config.k8s.io/v1, kind: WebhookAdmissionConfiguration, kubeConfigFile: $d/kubeconfig}
AC
	mv "$d/admission.yaml.tmp" "$d/admission.yaml"
}

cluster_exists() {
	"$kwokctl" get clusters 2>/dev/null | grep -qx "$name"
}

up() {
	for b in kwokctl kwok etcd kube-apiserver kube-controller-manager kube-scheduler kubectl; do
		[ -x "$bin/$b" ] || { echo "bin/$b is missing: run make tools" >&2; exit 1; }
	done
	mkdir -p "$KWOK_WORKDIR"
	kubelet_port=$(free_port 10250)
	webhook_client_pki
	sed -e "s#@BIN@#$bin#g" -e "s#@ROOT@#$root#g" -e "s#@KUBELET_PORT@#$kubelet_port#g" \
		-e "s#@WEBHOOK_CLIENT@#$webhook_client#g" "$root/hack/kwokctl.yaml" >"$config"
	if cluster_exists; then
		echo "cluster $name exists; making sure it is running"
		"$kwokctl" start cluster --name "$name" --wait 60s
	else
		"$kwokctl" create cluster --name "$name" --config "$config" --wait 60s
	fi
	"$kwokctl" get kubeconfig --name "$name" >"$kubeconfig.tmp"
	mv "$kubeconfig.tmp" "$kubeconfig"
	# --wait covers the components; also wait for the API to answer /readyz.
	for _ in $(seq 1 60); do
		if [ "$("$bin/kubectl" --kubeconfig "$kubeconfig" get --raw /readyz 2>/dev/null)" = ok ]; then
			echo "cluster $name is ready; kubeconfig: $kubeconfig"
			echo "  export KUBECONFIG=$kubeconfig"
			return 0
		fi
		sleep 1
	done
	echo "cluster $name did not become ready; logs: $KWOK_WORKDIR/clusters/$name/logs" >&2
	exit 1
}

down() {
	"$root/hack/local/stop-processes.sh" "$name"
	if [ -x "$kwokctl" ] && cluster_exists; then
		"$kwokctl" delete cluster --name "$name"
	fi
	rm -f "$kubeconfig"
	# kwokctl tracks its processes by pid files; make sure none outlived it.
	local pids
	mapfile -t pids < <(pgrep -f "$KWOK_WORKDIR/clusters/$name" || true)
	if [ ${#pids[@]} -gt 0 ]; then
		echo "stopping leftover processes: ${pids[*]}"
		kill "${pids[@]}" 2>/dev/null || true
		for _ in $(seq 1 20); do
			pgrep -f "$KWOK_WORKDIR/clusters/$name" >/dev/null || break
			sleep 0.5
		done
		kill -9 $(pgrep -f "$KWOK_WORKDIR/clusters/$name") 2>/dev/null || true
	fi
	# kwokctl detaches the components, so their exit status goes to PID 1;
	# give it a moment to reap them so no zombie entry is left behind.
	for _ in $(seq 1 30); do
		ps -eo stat=,comm= | awk '$1 ~ /^Z/ && $2 ~ /^(etcd|kube-apiserver|kube-controller|kube-scheduler|kwok-controller)$/ {found=1} END {exit !found}' || break
		sleep 0.5
	done
	echo "cluster $name is down"
}

case "${1:-}" in
up) up ;;
down) down ;;
status) cluster_exists && "$bin/kubectl" --kubeconfig "$kubeconfig" get --raw /readyz ;;
*) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
