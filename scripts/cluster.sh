#!/bin/bash
# A multi-node lab on one machine: N mokka-supervisors, each in its own
# network and mount namespace, sharing one IB fabric (their mock-ib relays
# find each other by gossip from two seeds).
#
#   scripts/cluster.sh N [DIR] [-- SUPERVISOR-ARGS...]
#
# Node i (0..N-1) is named node<iii>, has 10.79.<i/250>.<i%250+1>/32 on a
# veth routed through a bridge in the lab's own network namespace, its host
# root DIR/node<iii>/root and its log DIR/node<iii>/sup.log; its health
# server listens on 127.0.0.1:9091 inside its namespace.  DIR (default a
# new /tmp/mokka-cluster.XXXXXX) gets "nodes" (one line per node: name,
# address, PID of its namespace holder, supervisor PID) and "ready" once
# every node's /readyz said 200.  Runs until SIGINT/SIGTERM, then stops
# every supervisor (each restores its root) and removes the namespaces.
# Enter a node: nsenter -t <holder PID> -n -m (see DIR/nodes).
# Environment: MOKKA_BUILDDIR (binaries from a build tree; else the
# installed mokka-supervisor), PROFILE (default: the built-in profile),
# READY_TIMEOUT (default 300 s).  Needs root.
set -u
if [ -z "${MOKKA_CLUSTER_INNER:-}" ]; then
	[ "$(id -u)" -eq 0 ] || { echo "cluster.sh: needs root (namespaces)" >&2; exit 1; }
	[ "${1:-}" -gt 0 ] 2>/dev/null || { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
	export MOKKA_CLUSTER_INNER=1
	exec unshare -m -n --propagation private bash "$0" "$@"
fi
N=$1; shift
DIR=
if [ $# -gt 0 ] && [ "$1" != "--" ]; then DIR=$1; shift; fi
[ "${1:-}" = "--" ] && shift
DIR=${DIR:-$(mktemp -d /tmp/mokka-cluster.XXXXXX)}
mkdir -p "$DIR"
if [ -n "${MOKKA_BUILDDIR:-}" ]; then
	SUP=$MOKKA_BUILDDIR/mokka-supervisor
	export MOKKA_LIBEXECDIR=$MOKKA_BUILDDIR
else
	SUP=$(command -v mokka-supervisor) || { echo "cluster.sh: no mokka-supervisor" >&2; exit 1; }
fi
SEEDS=10.79.0.1,10.79.0.2,10.79.0.0/16
declare -A HOLD SPID
ip_of() { echo "10.79.$(($1 / 250)).$(($1 % 250 + 1))"; }
name_of() { printf 'node%03d' "$1"; }

teardown() {
	local i
	trap - EXIT INT TERM
	for i in "${!SPID[@]}"; do kill -TERM "${SPID[$i]}" 2>/dev/null; done
	for i in "${!SPID[@]}"; do wait "${SPID[$i]}" 2>/dev/null; done
	for i in "${!HOLD[@]}"; do kill "${HOLD[$i]}" 2>/dev/null; wait "${HOLD[$i]}" 2>/dev/null; done
	rm -f "$DIR/ready"
	exit 0
}
trap teardown EXIT INT TERM

# The network: a router bridge here, /32 hosts behind it (one ARP entry
# per node: the kernel's ARP table is shared by every namespace).
ip link set lo up
ip link add clbr0 type bridge forward_delay 0 || { echo "cluster.sh: no bridge" >&2; exit 1; }
ip addr add 10.79.255.254/16 dev clbr0
ip link set clbr0 up
sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.send_redirects=0 net.ipv4.conf.clbr0.send_redirects=0
for i in $(seq 0 $((N - 1))); do
	unshare -n sleep infinity &
	HOLD[$i]=$!
done
for i in $(seq 0 $((N - 1))); do
	while [ "$(readlink /proc/${HOLD[$i]}/ns/net)" = "$(readlink /proc/self/ns/net)" ]; do sleep 0.05; done
	echo "link add cv$i type veth peer name eth0 netns ${HOLD[$i]}"
	echo "link set cv$i master clbr0 up"
done > "$DIR/links"
ip -batch "$DIR/links" || exit 1
for i in $(seq 0 $((N - 1))); do
	printf '%s\n' "addr add $(ip_of "$i")/32 dev eth0" "link set eth0 up" "link set lo up" \
		"route add 10.79.255.254 dev eth0" "route add 10.79.0.0/16 via 10.79.255.254 dev eth0" |
		nsenter -t "${HOLD[$i]}" -n ip -batch - || exit 1
done

# The nodes: each supervisor in its node's network namespace and a mount
# namespace of its own (unshare execs: the PID is the supervisor's).
: > "$DIR/nodes"
for i in $(seq 0 $((N - 1))); do
	n=$(name_of "$i")
	mkdir -p "$DIR/$n/root"
	nsenter -t "${HOLD[$i]}" -n unshare -m --propagation private "$SUP" --host-root "$DIR/$n/root" \
		--health-addr 127.0.0.1:9091 --node-name "$n" --ib-listen "$(ip_of "$i")" --ib-peers "$SEEDS" \
		${PROFILE:+--config "$PROFILE"} "$@" > "$DIR/$n/sup.log" 2>&1 &
	SPID[$i]=$!
	echo "$n $(ip_of "$i") ${HOLD[$i]} ${SPID[$i]}" >> "$DIR/nodes"
done
echo "cluster.sh: $N nodes starting in $DIR"
ready() {
	nsenter -t "${HOLD[$1]}" -n curl -s -o /dev/null -w '%{http_code}' --max-time 2 \
		http://127.0.0.1:9091/readyz 2>/dev/null
}
deadline=$((SECONDS + ${READY_TIMEOUT:-300}))
pending=$(seq 0 $((N - 1)))
while [ -n "$pending" ] && [ $SECONDS -lt $deadline ]; do
	left=
	for i in $pending; do
		kill -0 "${SPID[$i]}" 2>/dev/null || { echo "cluster.sh: $(name_of "$i") exited: $(tail -3 "$DIR/$(name_of "$i")/sup.log")" >&2; exit 1; }
		[ "$(ready "$i")" = 200 ] || left="$left $i"
	done
	pending=$left
	[ -n "$pending" ] && sleep 0.5
done
[ -z "$pending" ] || { echo "cluster.sh: not ready after ${READY_TIMEOUT:-300} s:$pending" >&2; exit 1; }
touch "$DIR/ready"
echo "cluster.sh: all $N nodes ready ($DIR/nodes); Ctrl-C stops them"
while :; do sleep 3600 & wait $!; done
