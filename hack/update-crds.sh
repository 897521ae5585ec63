#!/usr/bin/env bash
# update-crds.sh [--verify]: copies the CRDs this project uses from the
# openshift/api version pinned in go.mod into manifests/crds/ (embedded into
# the operator) and into install/ (the release payload, under the cluster
# version operator's file names). With --verify it changes nothing and fails if
# a copy differs from openshift/api.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
api=$(go mod download -json github.com/openshift/api | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$api" ] || { echo "cannot locate github.com/openshift/api in the module cache" >&2; exit 1; }

machine=machine/v1beta1/zz_generated.crd-manifests
config=config/v1/zz_generated.crd-manifests

# destination-file source-file (relative to openshift/api)
files=(
	"manifests/crds/machine/0000_10_machine-api_01_machines-Default.crd.yaml $machine/0000_10_machine-api_01_machines-Default.crd.yaml"
	"manifests/crds/machine/0000_10_machine-api_01_machinesets-Default.crd.yaml $machine/0000_10_machine-api_01_machinesets-Default.crd.yaml"
	"manifests/crds/machine/0000_10_machine-api_01_machinehealthchecks.crd.yaml $machine/0000_10_machine-api_01_machinehealthchecks.crd.yaml"
	"manifests/crds/config/0000_00_cluster-version-operator_01_clusteroperators.crd.yaml $config/0000_00_cluster-version-operator_01_clusteroperators.crd.yaml"
	"manifests/crds/config/0000_00_cluster-version-operator_01_clusterversions-Default.crd.yaml $config/0000_00_cluster-version-operator_01_clusterversions-Default.crd.yaml"
	"manifests/crds/config/0000_03_config-operator_01_proxies.crd.yaml $config/0000_03_config-operator_01_proxies.crd.yaml"
	"manifests/crds/config/0000_10_config-operator_01_featuregates.crd.yaml $config/0000_10_config-operator_01_featuregates.crd.yaml"
	"manifests/crds/config/0000_10_config-operator_01_infrastructures-Default.crd.yaml $config/0000_10_config-operator_01_infrastructures-Default.crd.yaml"
)
# The release payload ships every feature-set variant of the Machine and
# MachineSet CRDs (the cluster version operator picks the one matching the
# cluster's feature set) and the MachineHealthCheck CRD.
for fs in Default CustomNoUpgrade DevPreviewNoUpgrade OKD TechPreviewNoUpgrade; do
	files+=("install/0000_30_machine-api-operator_02_machine.$fs.crd.yaml $machine/0000_10_machine-api_01_machines-$fs.crd.yaml")
	files+=("install/0000_30_machine-api-operator_03_machineset.$fs.crd.yaml $machine/0000_10_machine-api_01_machinesets-$fs.crd.yaml")
done
files+=("install/0000_30_machine-api-operator_07_machinehealthcheck.crd.yaml $machine/0000_10_machine-api_01_machinehealthchecks.crd.yaml")

mode=${1:-update}
status=0
for entry in "${files[@]}"; do
	read -r dst src <<<"$entry"
	if [ "$mode" = "--verify" ]; then
		if ! cmp -s "$api/$src" "$dst"; then
			echo "$dst differs from github.com/openshift/api/$src: run make update-crds" >&2
			status=1
		fi
	else
		mkdir -p "$(dirname "$dst")"
		install -m 0644 "$api/$src" "$dst"
	fi
done
exit $status
