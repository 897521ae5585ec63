#!/usr/bin/env bash
# build-tool.sh NAME PACKAGE [NAME PACKAGE ...]: builds pinned tools from
# hack/tools/go.mod into bin/NAME (promtool, golangci-lint: from
# hack/tools/<name>/go.mod, modules of their own; govulncheck and x/vulndb's
# indexdb: hack/tools/vuln; govc, vcsim: ./govc and ./vcsim of
# hack/tools/govmomi). Tools of one module given together are built
# by one `go build`: their shared packages (most of k8s.io/kubernetes for the
# local cluster's binaries) are compiled once, and one binary's link overlaps
# the next one's compiling, so both cores stay busy.
# Only the Go module proxy is used; versions come from the module's go.sum.
set -euo pipefail
if [ $# -lt 2 ] || [ $(($# % 2)) -ne 0 ]; then
	echo "usage: $0 NAME PACKAGE [NAME PACKAGE ...]" >&2
	exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN_DIR:-$root/bin}
mkdir -p "$bin"

k8s_version=v1.36.3

# moduleof PACKAGE: the directory (under the repository root) of the module
# that pins PACKAGE.
moduleof() {
	case "$1" in
	github.com/prometheus/prometheus/*) echo hack/tools/promtool ;;
	github.com/golangci/golangci-lint/*) echo hack/tools/golangci-lint ;;
	golang.org/x/vuln/* | golang.org/x/vulndb/*) echo hack/tools/vuln ;;
	# Mains of our own on the pinned github.com/vmware/govmomi.
	./govc | ./vcsim) echo hack/tools/govmomi ;;
	*) echo hack/tools ;;
	esac
}

# ldflagsof PACKAGE: the -X flags that give PACKAGE's binary its version. The
# linker ignores -X for packages a binary does not link, so the flags of tools
# built together are simply joined.
ldflagsof() {
	case "$1" in
	k8s.io/kubernetes/*)
		# Without these the binaries report v0.0.0-master, which kwokctl and
		# kubectl's version-skew checks misread.
		local p
		for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
			printf ' %s' "-X $p.gitVersion=$k8s_version -X $p.gitMajor=1 -X $p.gitMinor=36" \
				"-X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
		done
		;;
	sigs.k8s.io/kwok/*)
		printf ' %s' "-X sigs.k8s.io/kwok/pkg/consts.Version=0.8.0 -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${k8s_version#v}"
		;;
	sigs.k8s.io/kustomize/*)
		printf ' %s' "-X sigs.k8s.io/kustomize/api/provenance.version=v5.8.1"
		;;
	github.com/prometheus/prometheus/*)
		# github.com/prometheus/prometheus v0.315.0 is Prometheus 3.15.0.
		printf ' %s' "-X github.com/prometheus/common/version.Version=3.15.0"
		;;
	esac
}

# tagsof PACKAGE: build tags.
tagsof() {
	case "$1" in
	github.com/prometheus/prometheus/*)
		# promtool is used for `check rules` and `test rules` only: without
		# the service discovery plugins (the AWS, Azure, GCP, ... SDKs) its
		# cold build takes about a third of the time.
		echo remove_all_sd
		;;
	esac
}

# exename PACKAGE: the file name `go build -o DIR/` gives PACKAGE's binary
# (its last path element, or the one before a major version suffix).
exename() {
	local p=${1%/}
	local last=${p##*/}
	if [[ $last =~ ^v[0-9]+$ ]]; then
		p=${p%/*}
		last=${p##*/}
	fi
	echo "$last"
}

names=() pkgs=() module="" ldflags="" tags=""
while [ $# -gt 0 ]; do
	names+=("$1") pkgs+=("$2")
	m=$(moduleof "$2")
	[ -z "$module" ] || [ "$module" = "$m" ] || { echo "build-tool.sh: $2 is pinned by $m, not $module: build it separately" >&2; exit 2; }
	module=$m
	ldflags+=$(ldflagsof "$2")
	t=$(tagsof "$2")
	[ -z "$t" ] || tags=$t
	shift 2
done

start=$(date +%s)
echo "tools: building ${names[*]} (${pkgs[*]})..."
cd "$root/$module"
out=$(mktemp -d "$bin/.build-tool.XXXXXX")
trap 'rm -rf "$out"' EXIT
# -trimpath keeps the binaries independent of this checkout's path.
CGO_ENABLED=0 go build -tags "$tags" -trimpath -ldflags "-s -w$ldflags" -o "$out/" "${pkgs[@]}"
for i in "${!names[@]}"; do
	mv "$out/$(exename "${pkgs[$i]}")" "$bin/${names[$i]}"
done
echo "tools: ${names[*]} done in $(($(date +%s) - start))s"
