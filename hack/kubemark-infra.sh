#!/usr/bin/env bash
# kubemark-infra.sh: sets the status of the Infrastructure "cluster" to the
# External platform (kubemark is its spec.platformSpec.external.platformName).
# Status is a subresource that `kubectl apply` cannot set.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kubectl=${KUBECTL:-$root/bin/kubectl}
"$kubectl" patch infrastructure cluster --subresource=status --type=merge -p '{
  "status": {
    "infrastructureName": "kubemark",
    "controlPlaneTopology": "SingleReplica",
    "infrastructureTopology": "SingleReplica",
    "platformStatus": {"type": "External"}
  }
}'
