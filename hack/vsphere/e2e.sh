#!/usr/bin/env bash
# e2e.sh: `make test-e2e-vsphere`. Like hack/e2e-local.sh, on the local
# vSphere: brings up a dedicated PLATFORM=vsphere cluster (hack/vsphere/run.sh
# under CLUSTER_NAME, default machine-api-vsphere-e2e: its own kubeconfig,
# vcsim, env file and logs), runs the e2e suite's TestVSphere* tests against
# it with vCenter's GOVC_* and vcsim's pid (TestVSpherePausedVCenter pauses
# it), then stops everything (cluster, vcsim, stand-in kubelet, local pod
# runner), keeping the logs in .local/logs/CLUSTER_NAME/.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export CLUSTER_NAME=${CLUSTER_NAME:-machine-api-vsphere-e2e}
name=$CLUSTER_NAME
[ "$name" != machine-api ] || { echo "CLUSTER_NAME=machine-api is make run's cluster: pick another name" >&2; exit 2; }
export KWOK_WORKDIR=$root/.local/kwok
logs=$root/.local/logs/$name
kubeconfig=$root/.local/$name.kubeconfig
env_file=$root/.local/$name.vsphere.env
# Pod IPs of their own (the local pod runner's default, 127.98.0.0/16, is
# every other local cluster's), so this cluster can run next to make run's.
export LOCAL_PODS_ARGS=${LOCAL_PODS_ARGS:---pod-cidr=127.94.0.0/16}

teardown() {
	local code=$?
	mkdir -p "$logs"
	if [ -d "$KWOK_WORKDIR/clusters/$name/logs" ]; then
		cp -r "$KWOK_WORKDIR/clusters/$name/logs/." "$logs/" || true
	fi
	if [ -f "$root/.local/logs/$name-local-pods.log" ]; then
		cp "$root/.local/logs/$name-local-pods.log" "$logs/local-pods.log" || true
	fi
	# cluster.sh down stops the processes of the cluster's pid files
	# (local pod runner, vcsim, stand-in kubelet) and the kwok cluster.
	hack/vsphere/vcsim.sh down "$name" || true
	hack/cluster.sh down || true
	rm -rf "$root/.local/vsphere/$name"
	[ $code -eq 0 ] || echo "vSphere e2e failed; logs are in ${logs#"$root"/}/" >&2
	exit $code
}
trap teardown EXIT

export RELEASE_VERSION=${RELEASE_VERSION:-0.0.1-e2e}
hack/vsphere/run.sh
# shellcheck disable=SC1090
. "$env_file"
VCSIM_PID=$(cat "$root/.local/$name.vcsim.pid")
export VCSIM_PID
KUBECONFIG=$kubeconfig go test -tags e2e -count=1 -timeout 30m -v ./test/e2e/ -run TestVSphere
