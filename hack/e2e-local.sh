#!/usr/bin/env bash
# e2e-local.sh: brings up a dedicated local cluster, runs the e2e suite
# against it and tears it down, keeping the component logs in .local/logs/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export CLUSTER_NAME=${CLUSTER_NAME:-machine-api-e2e}
export KWOK_WORKDIR=$root/.local/kwok
logs=$root/.local/logs
kubeconfig=$root/.local/$CLUSTER_NAME.kubeconfig

teardown() {
	local code=$?
	mkdir -p "$logs"
	if [ -d "$KWOK_WORKDIR/clusters/$CLUSTER_NAME/logs" ]; then
		if mkdir -p "$logs/$CLUSTER_NAME"; then
			cp -r "$KWOK_WORKDIR/clusters/$CLUSTER_NAME/logs/." "$logs/$CLUSTER_NAME/" || true
		fi
	fi
	hack/cluster.sh down || true
	[ $code -eq 0 ] || echo "e2e failed; component logs are in $logs" >&2
	exit $code
}
trap teardown EXIT

export RELEASE_VERSION=${RELEASE_VERSION:-0.0.1-e2e}
hack/cluster.sh up
hack/local/deploy.sh "$CLUSTER_NAME"
KUBECONFIG=$kubeconfig make --no-print-directory test-e2e
