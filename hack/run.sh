#!/usr/bin/env bash
# run.sh: the main job on the local cluster. Starts the kwok cluster
# "machine-api", deploys the Machine API the way users do on vanilla Kubernetes
# (kustomize build | kubectl apply, then config/ for kubemark), and runs the
# operator's pod from the payload's Deployment and the operand's pod from the
# Deployment the operator renders as local processes (the local pod runner,
# test/localpods). Waits for the ClusterOperator machine-api to become
# Available and creates the sample kubemark Machine, MachineSet (3 replicas),
# MachineDeployment (3 replicas) and MachineHealthCheck.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
kubeconfig=$root/.local/kubeconfig
ns=openshift-machine-api
kubectl() { "$root/bin/kubectl" --kubeconfig "$kubeconfig" "$@"; }

hack/cluster.sh up
hack/local/deploy.sh machine-api

echo "waiting for clusteroperator/machine-api to become Available"
available() {
	[ "$(kubectl get clusteroperator machine-api -o jsonpath='{.status.conditions[?(@.type=="Available")].status}' 2>/dev/null)" = True ]
}
for _ in $(seq 1 240); do available && break; sleep 0.5; done
if ! available; then
	echo "the ClusterOperator did not become Available; last operator log lines:" >&2
	tail -n 30 .local/logs/machine-api-operator-*/machine-api-operator.log >&2
	exit 1
fi
kubectl get clusteroperator machine-api
echo
echo "creating the sample kubemark Machine (config/samples/machine.yaml)"
kubectl apply --server-side -f config/samples/machine.yaml >/dev/null
for _ in $(seq 1 120); do
	[ "$(kubectl -n "$ns" get machine kubemark-sample -o jsonpath='{.status.phase}' 2>/dev/null)" = Running ] && break
	sleep 0.5
done
echo "creating the sample kubemark MachineSet with 3 replicas (config/samples/machineset.yaml)"
kubectl apply --server-side -f config/samples/machineset.yaml >/dev/null
for _ in $(seq 1 240); do
	[ "$(kubectl -n "$ns" get machineset kubemark-workers -o jsonpath='{.status.readyReplicas}' 2>/dev/null)" = 3 ] && break
	sleep 0.5
done
kubectl -n "$ns" get machinesets
echo
echo "creating the sample kubemark MachineDeployment with 3 replicas (config/samples/machinedeployment.yaml)"
kubectl apply --server-side -f config/samples/machinedeployment.yaml >/dev/null
for _ in $(seq 1 240); do
	[ "$(kubectl -n "$ns" get machinedeployment kubemark-rolling -o jsonpath='{.status.availableReplicas}' 2>/dev/null)" = 3 ] && break
	sleep 0.5
done
kubectl -n "$ns" get machinedeployments
echo
echo "creating the sample MachineHealthCheck (config/samples/machinehealthcheck.yaml)"
kubectl apply --server-side -f config/samples/machinehealthcheck.yaml >/dev/null
echo
kubectl -n "$ns" get machines
echo
kubectl get nodes
cat <<MSG

The Machine API operator is running against the local cluster. Try:
  export KUBECONFIG=$kubeconfig
  bin/kubectl get clusteroperator machine-api -o yaml
  bin/kubectl -n $ns get machines,nodes
  bin/kubectl -n $ns scale machineset kubemark-workers --replicas=10   # 7 more Machines and Nodes
  bin/kubectl -n $ns scale machineset kubemark-workers --replicas=1    # back down (deletePolicy Random)
  bin/kubectl -n $ns annotate machine NAME machine.openshift.io/delete-machine=true   # delete this one first
  bin/kubectl -n $ns edit machinedeployment kubemark-rolling   # change spec.template (e.g. providerSpec cpu "8"): a rolling update
  bin/kubectl -n $ns patch machinedeployment kubemark-rolling --type=merge -p '{"spec":{"template":{"spec":{"providerSpec":{"value":{"cpu":"8"}}}}}}'   # the same, in one line
  bin/kubectl -n $ns get machinesets -w                        # a new set grows one Machine at a time, the old one shrinks (maxSurge 1, maxUnavailable 0)
  bin/kubectl -n $ns patch machinedeployment kubemark-rolling --type=merge -p '{"spec":{"template":{"spec":{"providerSpec":{"value":{"cpu":"4"}}}}}}'   # roll back: the old set is reused
  bin/kubectl -n $ns get machinehealthchecks                   # remediates kubemark-workers Machines whose node is not Ready for 2m
  bin/kubectl create -f - <<<'{"apiVersion":"nodemaintenance.medik8s.io/v1beta1","kind":"NodeMaintenance","metadata":{"name":"m1"},"spec":{"nodeName":"kubemark-sample","reason":"try it"}}'
  bin/kubectl get nodemaintenances; bin/kubectl delete nodemaintenance m1   # cordon + drain, then undo
  bin/kubectl -n $ns delete machine kubemark-sample           # drains and removes its node
  bin/kubectl apply -f config/samples/machine.yaml            # and back
  bin/kubectl -n $ns edit deployment machine-api-controllers   # the operator reverts the edit
  bin/kubectl patch infrastructure cluster --subresource=status --type=merge -p '{"status":{"platformStatus":{"type":"None"}}}'   # NoOp: operand pruned
  bin/kubectl -n $ns get pods -o wide                          # the operator's and operand's pods, run as local processes
  tail -f .local/logs/machine-api-controllers-*/machine-controller.log   # a container's log: .local/logs/<pod>/<container>.log
Stop everything with: make cluster-down
MSG
