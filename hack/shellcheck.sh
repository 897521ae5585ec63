#!/usr/bin/env bash
# Usage: hack/shellcheck.sh install OUT puts Debian's shellcheck, at the version pinned
# here, at OUT without installing it on the system: the package is fetched
# with apt-get download (no root needed) and unpacked in a temporary
# directory. As root the package lists are refreshed first if they lack the
# version, and if the unpacked binary does not run (a library missing) the
# package is installed, which brings its libraries.
# hack/shellcheck.sh check SHELLCHECK runs SHELLCHECK on every tracked shell
# script: *.sh and extension-less files with a sh or bash shebang (.ci/run).
set -euo pipefail
version=0.9.0-1
root=$(cd "$(dirname "$0")/.." && pwd)

install_shellcheck() {
	local out=$1
	tmp=$(mktemp -d) # global: the EXIT trap reads it
	trap 'rm -rf "$tmp"' EXIT
	if ! (cd "$tmp" && apt-get download "shellcheck=$version" 2>/dev/null); then
		[ "$(id -u)" -eq 0 ] || { echo "shellcheck.sh: apt-get download shellcheck=$version failed; run apt-get update as root" >&2; exit 1; }
		apt-get update -qq
		(cd "$tmp" && apt-get download "shellcheck=$version")
	fi
	dpkg-deb -x "$tmp"/shellcheck_*.deb "$tmp/x"
	if ! "$tmp/x/usr/bin/shellcheck" --version >/dev/null 2>&1; then
		[ "$(id -u)" -eq 0 ] || { echo "shellcheck.sh: the unpacked shellcheck does not run (ldd $tmp/x/usr/bin/shellcheck) and installing its libraries needs root" >&2; exit 1; }
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "shellcheck=$version"
	fi
	mkdir -p "$(dirname "$out")"
	install -m 0755 "$tmp/x/usr/bin/shellcheck" "$out"
	echo "tools: shellcheck $("$out" --version | sed -n 's/^version: //p') in $out"
}

# scripts lists the tracked shell scripts that exist in the working tree.
scripts() {
	cd "$root"
	git ls-files -co --exclude-standard | while read -r f; do
		[ -f "$f" ] || continue
		case "${f##*/}" in
		*.sh) echo "$f" ;;
		*.*) ;;
		*)
			if head -n1 "$f" | grep -qE '^#!.*(/|env )(ba)?sh\b'; then
				echo "$f"
			fi
			;;
		esac
	done
}

case "${1:-}" in
install) install_shellcheck "${2:?usage: $0 install OUT}" ;;
check)
	mapfile -t files < <(scripts)
	echo "shellcheck: ${#files[@]} scripts"
	cd "$root" && "${2:?usage: $0 check SHELLCHECK}" "${files[@]}"
	;;
*) echo "usage: $0 install OUT | check SHELLCHECK" >&2; exit 2 ;;
esac
