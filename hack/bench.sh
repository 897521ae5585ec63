#!/usr/bin/env bash
# bench.sh: the MachineSet scale benchmark (make bench). Brings up a dedicated
# local cluster, deploys the Machine API as make run does, stops the operator
# and the health controllers (so only the machine, nodelink and machineset
# controllers and the kubemark provider act; MHC=1 keeps the health
# controllers and adds a MachineHealthCheck covering the benchmark's
# Machines), runs test/bench/scale (0→REPLICAS→0, default 500) and tears
# everything down. PROFILE=1 also records 20 s CPU profiles of the three
# operands during the scale-up and prints their top functions; the profiles
# stay in .local/bench/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export CLUSTER_NAME=${CLUSTER_NAME:-machine-api-bench}
export KWOK_WORKDIR=$root/.local/kwok
kubeconfig=$root/.local/$CLUSTER_NAME.kubeconfig
out=$root/.local/bench
replicas=${REPLICAS:-500}
profile=${PROFILE:-0}
mkdir -p "$out"

teardown() {
	local code=$?
	hack/cluster.sh down >/dev/null || true
	[ $code -eq 0 ] || echo "bench failed; operand logs are in .local/logs/$CLUSTER_NAME-*.log" >&2
	exit $code
}
trap teardown EXIT

hack/cluster.sh up >/dev/null
PPROF=$profile WEBHOOK_PORT=${WEBHOOK_PORT:-8453} hack/local/deploy.sh "$CLUSTER_NAME"
# The operator installed everything; stop it so the benchmark measures the
# operands alone.
for _ in $(seq 1 240); do
	"$root/bin/kubectl" --kubeconfig "$kubeconfig" -n openshift-machine-api get deployment machine-api-controllers >/dev/null 2>&1 && break
	sleep 0.5
done
stop=(operator)
[ "${MHC:-0}" = 1 ] || stop+=(machine-healthcheck)
for process in "${stop[@]}"; do
	kill "$(cat ".local/$CLUSTER_NAME.$process.pid" 2>/dev/null)" 2>/dev/null || true
done
if [ "${MHC:-0}" = 1 ]; then
	# A MachineHealthCheck covering the benchmark's Machines (timeouts long
	# enough that nothing is remediated): the health controller's cost.
	"$root/bin/kubectl" --kubeconfig "$kubeconfig" apply --server-side -f - >/dev/null <<MHC
apiVersion: machine.openshift.io/v1beta1
kind: MachineHealthCheck
metadata: {name: bench, namespace: openshift-machine-api}
spec:
  selector: {matchLabels: {machine.openshift.io/cluster-api-machineset: bench}}
  unhealthyConditions:
  - {type: Ready, status: "False", timeout: 300s}
  - {type: Ready, status: Unknown, timeout: 300s}
  maxUnhealthy: 40%
MHC
fi

go build -o "$out/scale" ./test/bench/scale
if [ "$profile" = 1 ]; then
	for port in 6060 6061 6062; do
		# Starts with the scale-up (the benchmark first waits for leftovers).
		(sleep 2; curl -sf -o "$out/cpu-$port.pprof" "http://127.0.0.1:$port/debug/pprof/profile?seconds=20") &
	done
	(sleep 2; "$root/bin/kubectl" --kubeconfig "$kubeconfig" get --raw "/debug/pprof/profile?seconds=20" >"$out/kube-apiserver.cpu.pprof") &
fi
# cpu_seconds: CPU seconds (user+system) each cluster component and operand
# has used so far.
cpu_seconds() {
	local tck pid comm
	tck=$(getconf CLK_TCK)
	for pid in $(pgrep -f "$KWOK_WORKDIR/clusters/$CLUSTER_NAME|bin/(machine-controller-manager|nodelink-controller|machineset-controller|machine-healthcheck) .*$CLUSTER_NAME"); do
		comm=$(cat "/proc/$pid/comm" 2>/dev/null) || continue
		awk -v c="$comm" -v t="$tck" '{ printf "%s %.1f\n", c, ($14+$15)/t }' "/proc/$pid/stat"
	done | sort
}
cpu_seconds >"$out/cpu-before.txt"
"$out/scale" --kubeconfig "$kubeconfig" --replicas "$replicas" | tee "$out/result.txt"
cpu_seconds >"$out/cpu-after.txt"
echo "  CPU seconds used during the run, by process:" | tee -a "$out/result.txt"
join "$out/cpu-before.txt" "$out/cpu-after.txt" | awk '{ printf "    %-28s %6.1f\n", $1, $3-$2 }' | sort -k2 -nr | tee -a "$out/result.txt"
echo "  peak resident memory (VmHWM), by operand:" | tee -a "$out/result.txt"
for operand in machine-controller-manager nodelink-controller machineset-controller machine-healthcheck; do
	pid=$(cat ".local/$CLUSTER_NAME.$operand.pid" 2>/dev/null) || continue
	awk -v o="$operand" '/^VmHWM/ { printf "    %-28s %6.0f MiB\n", o, $2/1024 }' "/proc/$pid/status" 2>/dev/null | tee -a "$out/result.txt"
done
if [ "$profile" = 1 ]; then
	wait
	for pair in 6060:machine-controller-manager 6061:nodelink-controller 6062:machineset-controller; do
		port=${pair%%:*} name=${pair#*:}
		[ -s "$out/cpu-$port.pprof" ] || continue
		mv "$out/cpu-$port.pprof" "$out/$name.cpu.pprof"
		echo "== $name: top CPU (20 s during the scale-up)"
		go tool pprof -top -nodecount=15 "bin/$name" "$out/$name.cpu.pprof" 2>/dev/null | sed -n '1,22p'
	done
	echo "== kube-apiserver: top CPU, cumulative (20 s during the scale-up)"
	go tool pprof -top -cum -nodecount=40 bin/kube-apiserver "$out/kube-apiserver.cpu.pprof" 2>/dev/null | sed -n '1,46p'
fi
