#!/usr/bin/env bash
# run.sh: the main job on the local cluster. Starts the kwok cluster
# "machine-api" and installs the Machine API CRDs (and the config.openshift.io
# CRDs the operator reads) on it. Later steps add the operator and operands.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
kubectl="$root/bin/kubectl --kubeconfig $root/.local/kubeconfig"

hack/cluster.sh up
echo "installing the Machine API CRDs"
$kubectl apply --server-side -f manifests/crds/config -f manifests/crds/machine
$kubectl wait --for condition=Established --timeout=60s -f manifests/crds/config -f manifests/crds/machine
cat <<MSG

The local cluster is up with the Machine API CRDs installed. Try:
  export KUBECONFIG=$root/.local/kubeconfig
  bin/kubectl get crds
  bin/kubectl api-resources --api-group=machine.openshift.io
Stop it with: make cluster-down
MSG
