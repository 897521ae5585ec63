#!/usr/bin/env bash
# stop-processes.sh CLUSTER_NAME: stops the local processes deploy.sh started
# for that cluster (pid files .local/CLUSTER_NAME.*.pid).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
name=${1:?usage: stop-processes.sh CLUSTER_NAME}
for pidfile in "$root/.local/$name".*.pid; do
	[ -e "$pidfile" ] || continue
	pid=$(cat "$pidfile")
	if kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$pidfile"
done
# The local pod runner pins the pods' network namespaces under
# .local/pods/CLUSTER_NAME; a runner that was killed leaves them mounted.
for ns in "$root/.local/pods/$name"/*/netns; do
	if [ -e "$ns" ]; then
		umount -l "$ns" 2>/dev/null || true
	fi
done
rm -rf "$root/.local/pods/$name"
