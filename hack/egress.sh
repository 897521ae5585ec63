#!/usr/bin/env bash
# egress.sh COMMAND [ARG...]: runs COMMAND under strace, following every
# process it starts (kwokctl's components, the local pod runner and its pods,
# kubectl, the test binaries), and records each connect, sendto, sendmsg and
# sendmmsg to an IPv4 or IPv6 address: a TCP dial, a DNS query (a UDP
# connect or send to port 53) or any other datagram. It then prints those
# destinations by process and exits 1 if any lies outside 127.0.0.0/8, ::1
# and the unspecified addresses, else with COMMAND's status. E.g.
#   flock /tmp/mapi-cluster.lock hack/egress.sh hack/e2e-local.sh
# The trace is kept in .local/egress/trace (EGRESS_TRACE to change it).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARG...]" >&2; exit 2; }
command -v strace >/dev/null || { echo "strace is missing (apt-get install -y strace)" >&2; exit 2; }
trace=${EGRESS_TRACE:-$root/.local/egress/trace}
mkdir -p "$(dirname "$trace")"

# -Y names each line's process (the local pod runner's containers, executed
# through a descriptor, show as its number, e.g. "6"); --seccomp-bpf stops
# only on the traced calls.
strace -f --seccomp-bpf -qq -Y -e signal=none -e trace=connect,sendto,sendmsg,sendmmsg -o "$trace" "$@"
status=$?

# One line per (process, destination): "<comm> <address> <port>". Lines without
# an inet address (AF_UNIX, netlink, a send on a connected socket) name none.
report=$(grep -E 'AF_INET6?,' "$trace" |
	sed -nE 's/^[0-9]+<([^>]*)>.*sin6?_port=htons\(([0-9]+)\).*(inet_addr\("|inet_pton\(AF_INET6, ")([^"]*)".*/\1 \4 \2/p' |
	sort | uniq -c | sort -rn)
echo "egress: destinations by process (count, process, address, port) in $trace:"
echo "${report:-  (none)}"
# 0.0.0.0 and :: as a destination are this machine too (Linux delivers them
# to the local host: etcd dials its own listen address 0.0.0.0 so).
outside=$(awk '$3 !~ /^127\./ && $3 !~ /^::ffff:127\./ && $3 != "::1" && $3 != "0.0.0.0" && $3 != "::"' <<<"$report" | grep . || true)
if [ -n "$outside" ]; then
	echo "egress: FAIL: destinations off this machine (outside 127.0.0.0/8, ::1, 0.0.0.0, ::):" >&2
	echo "$outside" >&2
	exit 1
fi
echo "egress: every destination is on loopback"
exit $status
