#!/usr/bin/env bash
# measure-operator.sh: black-box figures for docs/performance.md on the local
# cluster. Restarts the operator with -v=6 (client-go logs every API request)
# against a cluster where nothing of the operand exists yet, then reports:
#  - time from process start to the first complete sync (ClusterOperator Available),
#  - API requests made until then, by verb,
#  - write requests during a following steady-state window (default 60s).
# Requires `make run` to have set up the cluster.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
window=${WINDOW:-60}
kubeconfig=.local/kubeconfig
ns=openshift-machine-api
log=.local/logs/operator-measure.log
kubectl() { bin/kubectl --kubeconfig "$kubeconfig" "$@"; }

hack/local/stop-processes.sh machine-api
# Start from nothing: no operand, no ClusterOperator, no certificates.
kubectl delete clusteroperator machine-api --ignore-not-found >/dev/null
kubectl -n "$ns" delete deployment,service,secret,serviceaccount,role,rolebinding -l app.kubernetes.io/managed-by=machine-api-operator --ignore-not-found >/dev/null
kubectl delete validatingwebhookconfiguration,mutatingwebhookconfiguration,clusterrole,clusterrolebinding -l app.kubernetes.io/managed-by=machine-api-operator --ignore-not-found >/dev/null

start=$(date +%s.%N)
RELEASE_VERSION=0.0.1-local bin/machine-api-operator start --kubeconfig "$kubeconfig" --images-json .local/machine-api-images.json \
	--namespace "$ns" --operand-stable-duration 0s --metrics-bind-address 0 --health-probe-bind-address 0 -v=6 >"$log" 2>&1 &
echo $! >.local/machine-api.operator.pid
until [ "$(kubectl get clusteroperator machine-api -o jsonpath='{.status.conditions[?(@.type=="Available")].status}' 2>/dev/null)" = True ]; do sleep 0.05; done
end=$(date +%s.%N)
requests() { grep -oE '"Response".* verb="[A-Z]+"' "$log" | sed 's/.*verb="//; s/"//' | sort | uniq -c | tr '\n' ' '; }
echo "first complete sync: $(echo "$end - $start" | bc) s (process start to Available=True, including leader election)"
echo "requests until then: $(requests)"
before=$(grep -cE '"Response".* verb="(POST|PUT|PATCH|DELETE)"' "$log" || true)
sleep 5 # let the status write's own watch event settle
before=$(grep -cE '"Response".* verb="(POST|PUT|PATCH|DELETE)"' "$log" || true)
before_all=$(grep -c '"Response".* verb=' "$log" || true)
sleep "$window"
after=$(grep -cE '"Response".* verb="(POST|PUT|PATCH|DELETE)"' "$log" || true)
after_all=$(grep -c '"Response".* verb=' "$log" || true)
window_writes=$(grep -E '"Response".* verb="(POST|PUT|PATCH|DELETE)"' "$log" | tail -n +$((before + 1)) || true)
lease=$(grep -c '/leases/' <<<"$window_writes" || true)
echo "steady state, ${window}s: $((after_all - before_all)) requests, $((after - before)) writes, of which $lease leader-election lease renewals"
grep -v '/leases/' <<<"$window_writes" | grep -oE 'url="[^"]+"' | sort | uniq -c || true
