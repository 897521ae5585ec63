#!/usr/bin/env bash
# update-crds.sh [--verify]: copies the CRDs this project uses from the
# openshift/api version pinned in go.mod into manifests/crds/. With --verify it
# changes nothing and fails if a copy differs from openshift/api.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
api=$(go mod download -json github.com/openshift/api | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$api" ] || { echo "cannot locate github.com/openshift/api in the module cache" >&2; exit 1; }

# destination-dir source-file (relative to openshift/api)
files=(
	"machine machine/v1beta1/zz_generated.crd-manifests/0000_10_machine-api_01_machines-Default.crd.yaml"
	"machine machine/v1beta1/zz_generated.crd-manifests/0000_10_machine-api_01_machinesets-Default.crd.yaml"
	"machine machine/v1beta1/zz_generated.crd-manifests/0000_10_machine-api_01_machinehealthchecks.crd.yaml"
	"config config/v1/zz_generated.crd-manifests/0000_00_cluster-version-operator_01_clusteroperators.crd.yaml"
	"config config/v1/zz_generated.crd-manifests/0000_00_cluster-version-operator_01_clusterversions-Default.crd.yaml"
	"config config/v1/zz_generated.crd-manifests/0000_03_config-operator_01_proxies.crd.yaml"
	"config config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_featuregates.crd.yaml"
	"config config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_infrastructures-Default.crd.yaml"
)

mode=${1:-update}
status=0
for entry in "${files[@]}"; do
	read -r dir src <<<"$entry"
	dst="manifests/crds/$dir/$(basename "$src")"
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
