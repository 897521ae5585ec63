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

cluster_exists() {
	"$kwokctl" get clusters 2>/dev/null | grep -qx "$name"
}

up() {
	for b in kwokctl kwok etcd kube-apiserver kube-controller-manager kube-scheduler kubectl; do
		[ -x "$bin/$b" ] || { echo "bin/$b is missing: run make tools" >&2; exit 1; }
	done
	mkdir -p "$KWOK_WORKDIR"
	kubelet_port=$(free_port 10250)
	sed -e "s#@BIN@#$bin#g" -e "s#@ROOT@#$root#g" -e "s#@KUBELET_PORT@#$kubelet_port#g" "$root/hack/kwokctl.yaml" >"$config"
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
	pids=$(pgrep -f "$KWOK_WORKDIR/clusters/$name" || true)
	if [ -n "$pids" ]; then
		echo "stopping leftover processes: $pids"
		kill $pids 2>/dev/null || true
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
