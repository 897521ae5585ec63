#!/usr/bin/env bash
# vcsim.sh up|down|status|port [CLUSTER_NAME]: the local vSphere of the local
# cluster CLUSTER_NAME (default machine-api). `up` starts bin/vcsim on
# 127.0.0.1 (never another address; port $VSPHERE_PORT or the first free one
# from 18443) and shapes its inventory like
# a small OpenShift-on-vSphere site with govc: datacenter DC0, cluster DC0_C0
# (resource pool /DC0/host/DC0_C0/Resources), datastore LocalDS_0, port group
# DC0_DVPG0, a powered-off RHCOS-like template VM "rhcos" (hardware vmx-15, as
# OpenShift requires; guest rhel9_64Guest, 4 CPUs, 16 GiB) and the cluster's
# VM folder /DC0/vm/$VSPHERE_INFRA (default machine-api-local) with the
# installer's cluster ID tag (category openshift-$VSPHERE_INFRA). vcsim's other
# sample VMs are destroyed, so every other VM is one the provider cloned.
# Writes .local/vsphere.env (GOVC_URL, GOVC_USERNAME, GOVC_PASSWORD,
# GOVC_INSECURE=1, GOVC_DATACENTER, VSPHERE_FOLDER, VSPHERE_PORT):
# `. .local/vsphere.env; bin/govc ls` (.local/CLUSTER_NAME.vsphere.env for
# another cluster). Its pid file .local/CLUSTER_NAME.vcsim.pid makes
# `make cluster-down` (hack/local/stop-processes.sh) stop it with the cluster.
# vcsim keeps its inventory in memory: stopping it loses every VM.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$root/bin
name=${2:-${CLUSTER_NAME:-machine-api}}
state=$root/.local/vsphere/$name
env_file=$root/.local/vsphere.env
log=$root/.local/logs/vcsim.log
if [ "$name" != machine-api ]; then
	env_file=$root/.local/$name.vsphere.env
	log=$root/.local/logs/$name/vcsim.log
fi
infra=${VSPHERE_INFRA:-machine-api-local}
pid_file=$root/.local/$name.vcsim.pid

port_free() { ! ss -Htln "sport = :$1" | grep -q .; }

# free_port prints $VSPHERE_PORT, else the first free port from 18443.
free_port() {
	local port
	for port in ${VSPHERE_PORT:-$(seq 18443 18542)}; do
		port_free "$port" && { echo "$port"; return 0; }
	done
	echo "no free port in 18443-18542" >&2
	return 1
}

running() { [ -f "$pid_file" ] && kill -0 "$(cat "$pid_file")" 2>/dev/null; }

up() {
	for b in vcsim govc; do
		[ -x "$bin/$b" ] || { echo "bin/$b is missing: run make vsphere-tools" >&2; exit 1; }
	done
	if running; then
		echo "vcsim is running (pid $(cat "$pid_file")); environment in $env_file"
		return 0
	fi
	mkdir -p "$state" "$(dirname "$log")"
	rm -f "$state/url"
	local password
	password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
	# A port the Infrastructure accepts (vcenters[].port is at most 32767):
	# $VSPHERE_PORT, else the first free one from 18443. setsid: vcsim
	# outlives this script (and make); down stops it by its pid.
	local port
	for port in ${VSPHERE_PORT:-$(seq 18443 18542)}; do
		port_free "$port" || continue
		setsid "$bin/vcsim" -l "127.0.0.1:$port" -username administrator@vsphere.local -password "$password" \
			-url-file "$state/url" >"$log" 2>&1 </dev/null &
		echo $! >"$pid_file"
		for _ in $(seq 1 100); do
			[ -s "$state/url" ] && break
			running || break
			sleep 0.1
		done
		[ -s "$state/url" ] && break
		running && kill "$(cat "$pid_file")"
	done
	[ -s "$state/url" ] || { echo "vcsim did not start serving; log: $log" >&2; tail -n 5 "$log" >&2; exit 1; }
	umask 077
	cat >"$env_file.tmp" <<ENV
export GOVC_URL=$(cat "$state/url")
export GOVC_USERNAME=administrator@vsphere.local
export GOVC_PASSWORD=$password
export GOVC_INSECURE=1
export GOVC_DATACENTER=DC0
export VSPHERE_FOLDER=/DC0/vm/$infra
export VSPHERE_PORT=$port
ENV
	mv "$env_file.tmp" "$env_file"
	# shellcheck disable=SC1090
	. "$env_file"
	local govc=$bin/govc
	"$govc" vm.power -off -force DC0_C0_RP0_VM0 >/dev/null
	"$govc" vm.upgrade -version=15 -vm DC0_C0_RP0_VM0
	"$govc" vm.change -vm DC0_C0_RP0_VM0 -g rhel9_64Guest -c 4 -m 16384
	"$govc" object.rename /DC0/vm/DC0_C0_RP0_VM0 rhcos >/dev/null
	"$govc" vm.destroy DC0_H0_VM0 DC0_H0_VM1 DC0_C0_RP0_VM1
	"$govc" folder.create "/DC0/vm/$infra" >/dev/null
	# The installer's cluster ID tag: the provider attaches it to each VM,
	# and the orphan collection lists only VMs that carry it.
	"$govc" tags.category.create -t VirtualMachine "openshift-$infra" >/dev/null
	"$govc" tags.create -c "openshift-$infra" "$infra" >/dev/null
	echo "vcsim serving $GOVC_URL (pid $(cat "$pid_file")); template /DC0/vm/rhcos, folder /DC0/vm/$infra, tag openshift-$infra/$infra"
	echo "  . $env_file && bin/govc ls /DC0/vm"
}

down() {
	if running; then
		local pid
		pid=$(cat "$pid_file")
		kill "$pid"
		for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		echo "vcsim (pid $pid) stopped"
	fi
	rm -f "$pid_file" "$state/url" "$env_file"
}

case "${1:-}" in
up) up ;;
down) down ;;
port) free_port ;;
status) running && echo "vcsim running (pid $(cat "$pid_file")): $(cat "$state/url")" ;;
*) echo "usage: $0 up|down|status|port [CLUSTER_NAME]" >&2; exit 2 ;;
esac
