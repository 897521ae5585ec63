#!/usr/bin/env bash
# verify.sh: fails when a generated file or a go.mod is not current: `make generate` would change
# pkg/apis or manifests/crds, the CRD copies differ from the pinned openshift/api, or `go mod tidy`
# would change a module's go.mod or go.sum (this project's and each tool module's in hack/tools).
# It compares the files before and after generating, so uncommitted edits are not taken for drift.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
generated=(pkg/apis manifests/crds)
snapshot() { git ls-files -co --exclude-standard -- "${generated[@]}" | LC_ALL=C sort | xargs -r sha256sum; }
status=0
before=$(snapshot)
make --no-print-directory generate >/dev/null
if ! diff <(echo "$before") <(snapshot) >/tmp/verify-generate.$$; then
	echo "verify: make generate changed generated files; run it and commit the result:" >&2
	cat /tmp/verify-generate.$$ >&2
	status=1
fi
rm -f /tmp/verify-generate.$$
hack/update-crds.sh --verify || status=1
for mod in . hack/tools hack/tools/*/; do
	[ -f "$mod/go.mod" ] || continue
	if ! out=$(cd "$mod" && go mod tidy -diff 2>&1); then
		echo "verify: go mod tidy would change $mod/go.mod or go.sum; run (cd $mod && go mod tidy) and commit:" >&2
		echo "$out" >&2
		status=1
	fi
done
[ $status -ne 0 ] || echo "verify: generated code, CRD copies and go.mod files are current"
exit $status
