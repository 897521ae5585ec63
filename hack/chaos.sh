#!/usr/bin/env bash
# chaos.sh: the chaos suite (make chaos). Brings up a dedicated local cluster,
# deploys the Machine API as make run does (the operator's and the operand's
# pods run from their spec by the local pod runner), runs test/chaos and
# tears everything down. CHAOS_KILLS (default 5) SIGKILLs per process and
# scenario, CHAOS_SEED (default 1) seeds every random choice,
# CHAOS_REPLICAS/CHAOS_DOWN (200/50) size the MachineSet scenarios,
# CHAOS_RUN selects scenarios (a go test -run regexp). Figures are printed as
# lines starting with FIGURE and kept in .local/chaos/result.txt.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export CLUSTER_NAME=${CLUSTER_NAME:-machine-api-chaos}
export KWOK_WORKDIR=$root/.local/kwok
kubeconfig=$root/.local/$CLUSTER_NAME.kubeconfig
out=$root/.local/chaos
mkdir -p "$out"

# Called by the EXIT trap below, which shellcheck cannot see.
# shellcheck disable=SC2317
teardown() {
	local code=$?
	if [ -d "$KWOK_WORKDIR/clusters/$CLUSTER_NAME/logs" ]; then
		# Best effort: a failed copy must not hide the suite's exit code.
		if mkdir -p ".local/logs/$CLUSTER_NAME"; then
			cp -r "$KWOK_WORKDIR/clusters/$CLUSTER_NAME/logs/." ".local/logs/$CLUSTER_NAME/" || true
		fi
	fi
	hack/cluster.sh down >/dev/null || true
	[ "$code" -eq 0 ] || echo "chaos failed; logs are in .local/logs/$CLUSTER_NAME/" >&2
	exit "$code"
}
trap teardown EXIT

rm -rf ".local/logs/$CLUSTER_NAME"
hack/cluster.sh up >/dev/null
RELEASE_VERSION=${RELEASE_VERSION:-0.0.1-chaos} hack/local/deploy.sh "$CLUSTER_NAME"
for _ in $(seq 1 240); do
	[ "$(bin/kubectl --kubeconfig "$kubeconfig" get clusteroperator machine-api -o jsonpath='{.status.conditions[?(@.type=="Available")].status}' 2>/dev/null)" = True ] && break
	sleep 0.5
done
KUBECONFIG=$kubeconfig go test -tags chaos -count=1 -timeout 90m -v ./test/chaos/ ${CHAOS_RUN:+-run "$CHAOS_RUN"} -args \
	-chaos.seed="${CHAOS_SEED:-1}" -chaos.kills="${CHAOS_KILLS:-5}" \
	-chaos.replicas="${CHAOS_REPLICAS:-200}" -chaos.down="${CHAOS_DOWN:-50}" \
	-chaos.kwok-cluster-dir="$KWOK_WORKDIR/clusters/$CLUSTER_NAME" \
	-chaos.bin-dir="$root/bin" -chaos.log-dir="$root/.local/logs/$CLUSTER_NAME" 2>&1 | tee "$out/output.txt"
code=${PIPESTATUS[0]}
grep "FIGURE" "$out/output.txt" | sed 's/^ *[a-z_]*\.go:[0-9]*: FIGURE /  /' >"$out/result.txt" || true
echo "== figures (seed ${CHAOS_SEED:-1}, ${CHAOS_KILLS:-5} kills per process)"
cat "$out/result.txt"
exit "$code"
