#!/usr/bin/env bash
# bench.sh: the MachineSet scale benchmark (make bench). Brings up a dedicated
# local cluster, deploys the Machine API as make run does (the operand pod is
# run from its rendered spec by the local pod runner), then scales the
# operator to 0 and removes the health controller container from the operand
# Deployment (so only the machine, nodelink and machineset controllers and the
# kubemark provider act; MHC=1 keeps the health controllers and adds a
# MachineHealthCheck covering the benchmark's Machines), runs
# test/bench/scale (0→REPLICAS→0, default 500) and tears everything down.
# SCENARIO=rollout instead rolls a MachineDeployment of REPLICAS (default
# 100) Machines to a new template (RollingUpdate, MAX_SURGE 10 and
# MAX_UNAVAILABLE 0 by default) and reports the API requests per replaced
# Machine by resource and verb and by component and verb.
# PROFILE=1 also adds --pprof-bind-address to the three operands, records
# 20 s CPU profiles during the scale-up and prints their top functions; the
# profiles stay in .local/bench/. (With the operator stopped, these edits of
# the operand Deployment stay; the operator would revert them.)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export CLUSTER_NAME=${CLUSTER_NAME:-machine-api-bench}
export KWOK_WORKDIR=$root/.local/kwok
kubeconfig=$root/.local/$CLUSTER_NAME.kubeconfig
out=$root/.local/bench
scenario=${SCENARIO:-scale}
replicas=${REPLICAS:-500}
[ "$scenario" = scale ] || replicas=${REPLICAS:-100}
profile=${PROFILE:-0}
mkdir -p "$out"

teardown() {
	local code=$?
	hack/cluster.sh down >/dev/null || true
	[ $code -eq 0 ] || echo "bench failed; operand logs are in .local/logs/machine-api-controllers-*/" >&2
	exit $code
}
trap teardown EXIT

hack/cluster.sh up >/dev/null
hack/local/deploy.sh "$CLUSTER_NAME"
kubectl() { "$root/bin/kubectl" --kubeconfig "$kubeconfig" -n openshift-machine-api "$@"; }
# The operator installed everything; stop it so the benchmark measures the
# operands alone.
for _ in $(seq 1 240); do
	kubectl get deployment machine-api-controllers >/dev/null 2>&1 && break
	sleep 0.5
done
kubectl scale deployment machine-api-operator --replicas=0 >/dev/null
kubectl wait --for=delete pod -l k8s-app=machine-api-operator --timeout=60s >/dev/null
# container_index NAME: the index of a container of the operand pod template.
container_index() {
	kubectl get deployment machine-api-controllers -o jsonpath='{range .spec.template.spec.containers[*]}{.name}{"\n"}{end}' | grep -nx "$1" | cut -d: -f1 | awk '{print $1-1}'
}
patches=()
[ "${MHC:-0}" = 1 ] || patches+=("{\"op\":\"remove\",\"path\":\"/spec/template/spec/containers/$(container_index machine-healthcheck-controller)\"}")
if [ "$profile" = 1 ]; then
	for pair in machine-controller:6060 nodelink-controller:6061 machineset-controller:6062; do
		i=$(container_index "${pair%%:*}") port=${pair#*:}
		patches+=("{\"op\":\"add\",\"path\":\"/spec/template/spec/containers/$i/args/-\",\"value\":\"--pprof-bind-address=:$port\"}")
		patches+=("{\"op\":\"add\",\"path\":\"/spec/template/spec/containers/$i/ports/-\",\"value\":{\"name\":\"pprof-$port\",\"containerPort\":$port}}")
	done
fi
if [ ${#patches[@]} -gt 0 ]; then
	kubectl patch deployment machine-api-controllers --type=json -p "[$(IFS=,; echo "${patches[*]}")]" >/dev/null
	kubectl rollout status deployment machine-api-controllers --timeout=120s >/dev/null
fi
# The rollout can report complete before the new pod runs: wait for it.
pod_ip=
for _ in $(seq 1 120); do
	pod_ip=$(kubectl get pods -l k8s-app=controller --field-selector=status.phase=Running -o jsonpath='{.items[*].status.podIP}' 2>/dev/null | awk '{print $1}')
	[ -n "$pod_ip" ] && break
	sleep 0.5
done
[ -n "$pod_ip" ] || { echo "no running operand pod after 60 s" >&2; exit 1; }
if [ "${MHC:-0}" = 1 ]; then
	# A MachineHealthCheck covering the benchmark's Machines (timeouts long
	# enough that nothing is remediated): the health controller's cost.
	kubectl apply --server-side -f - >/dev/null <<MHC
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
		(sleep 2; curl -sf -o "$out/cpu-$port.pprof" "http://$pod_ip:$port/debug/pprof/profile?seconds=20") &
	done
	(sleep 2; "$root/bin/kubectl" --kubeconfig "$kubeconfig" get --raw "/debug/pprof/profile?seconds=20" >"$out/kube-apiserver.cpu.pprof") &
fi
# cpu_seconds: CPU seconds (user+system) each cluster component and operand
# has used so far.
# The operands are the children of this cluster's local pod runner (other
# local clusters run processes of the same names), named by their argv[0]
# (their comm is the runner's exec file descriptor).
operand_pids() { pgrep -P "$(cat "$root/.local/$CLUSTER_NAME.local-pods.pid")"; }
proc_name() { local a; a=$(tr '\0' '\n' <"/proc/$1/cmdline" | head -1) && echo "${a##*/}"; }
cpu_seconds() {
	local tck pid name
	tck=$(getconf CLK_TCK)
	for pid in $(pgrep -f "$KWOK_WORKDIR/clusters/$CLUSTER_NAME/") $(operand_pids); do
		name=$(proc_name "$pid" 2>/dev/null) || continue
		awk -v c="$name" -v t="$tck" '{ printf "%s %.1f\n", c, ($14+$15)/t }' "/proc/$pid/stat" 2>/dev/null
	done | sort
}
cpu_seconds >"$out/cpu-before.txt"
"$out/scale" --kubeconfig "$kubeconfig" --replicas "$replicas" --scenario "$scenario" \
	--max-surge "${MAX_SURGE:-10}" --max-unavailable "${MAX_UNAVAILABLE:-0}" | tee "$out/result.txt"
cpu_seconds >"$out/cpu-after.txt"
echo "  CPU seconds used during the run, by process:" | tee -a "$out/result.txt"
join "$out/cpu-before.txt" "$out/cpu-after.txt" | awk '{ printf "    %-28s %6.1f\n", $1, $3-$2 }' | sort -k2 -nr | tee -a "$out/result.txt"
echo "  peak resident memory (VmHWM), by operand:" | tee -a "$out/result.txt"
for pid in $(operand_pids); do
	operand=$(proc_name "$pid" 2>/dev/null) || continue
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
