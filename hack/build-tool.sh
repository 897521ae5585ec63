#!/usr/bin/env bash
# build-tool.sh NAME PACKAGE: builds one pinned tool from hack/tools/go.mod into bin/NAME
# (promtool, staticcheck: from hack/tools/<name>/go.mod, modules of their own;
# govc, vcsim: ./govc and ./vcsim of hack/tools/govmomi).
# Only the Go module proxy is used; versions come from the module's go.sum.
set -euo pipefail
name=$1 pkg=$2
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN_DIR:-$root/bin}
mkdir -p "$bin"

k8s_version=v1.36.3
ldflags=""
module=hack/tools
case "$pkg" in
k8s.io/kubernetes/*)
	# Without these the binaries report v0.0.0-master, which kwokctl and
	# kubectl's version-skew checks misread.
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X $p.gitVersion=$k8s_version -X $p.gitMajor=1 -X $p.gitMinor=36"
		ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
	done
	;;
sigs.k8s.io/kwok/*)
	ldflags="-X sigs.k8s.io/kwok/pkg/consts.Version=0.8.0 -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${k8s_version#v}"
	;;
sigs.k8s.io/kustomize/*)
	ldflags="-X sigs.k8s.io/kustomize/api/provenance.version=v5.8.1"
	;;
github.com/prometheus/prometheus/*)
	# github.com/prometheus/prometheus v0.315.0 is Prometheus 3.15.0.
	module=hack/tools/promtool
	ldflags="-X github.com/prometheus/common/version.Version=3.15.0"
	;;
honnef.co/go/tools/*)
	module=hack/tools/staticcheck
	;;
./govc | ./vcsim)
	# Mains of our own on the pinned github.com/vmware/govmomi (hack/tools/govmomi).
	module=hack/tools/govmomi
	;;
esac

start=$(date +%s)
echo "tools: building $name ($pkg)..."
cd "$root/$module"
# -trimpath keeps the binaries independent of this checkout's path.
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$bin/$name.tmp" "$pkg"
mv "$bin/$name.tmp" "$bin/$name"
echo "tools: $name done in $(( $(date +%s) - start ))s"
