#!/bin/bash
# Benchmark (a report, never a pass/fail test): many simulated nodes on one
# machine (scripts/cluster.sh), each a mokka-supervisor in its own network
# and mount namespaces, all sharing one IB fabric.  For NODES (default
# "8 16 32") nodes: the time until every node's /readyz is 200, the PSS of
# each node's process tree (supervisor, workers, daemons; mean and max, the
# goal is <= 8 MiB), and the unmodified ibnetdiscover through the shims from
# node000 across the whole fabric (CAs found / expected, time).
# Environment: NODES, SIMULATORS (default all; e.g. "pcibus,ib"), PROFILE.
# Needs root.
. "$(dirname "$0")/../lib.sh"
NODES=${NODES:-8 16 32}
LIBS=$B/.libs
[ -x "$B/mokka-supervisor" ] || die "mokka-supervisor not built"
CL=

tree_pids() { # PID and its descendants
	local c
	echo "$1"
	for c in $(ps -o pid= --ppid "$1"); do tree_pids "$c"; done
}
pss_tree() { # KiB of PSS of PID's tree
	local p total=0
	for p in $(tree_pids "$1"); do
		total=$((total + $(awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0)))
	done
	echo "$total"
}
stop_cluster() {
	[ -n "$CL" ] && kill -TERM "$CL" 2>/dev/null && wait "$CL" 2>/dev/null
	CL=
}
trap 'stop_cluster; cleanup' EXIT

echo "bench: density, simulators ${SIMULATORS:-all}, $(nproc) CPUs"
printf 'bench:   %5s %9s %14s %14s %14s %10s\n' nodes "ready ms" "PSS/node KiB" "max PSS KiB" "ibnetdisc CAs" "disc ms"
for n in $NODES; do
	D=$T/cluster$n
	t0=$(date +%s%N)
	MOKKA_BUILDDIR=$B PROFILE=${PROFILE:-} READY_TIMEOUT=600 "$S/scripts/cluster.sh" "$n" "$D" -- \
		${SIMULATORS:+--simulators "$SIMULATORS"} > "$T/cluster$n.log" 2>&1 &
	CL=$!
	wait_for 620 test -f "$D/ready" || die "$n nodes not ready: $(tail -3 "$T/cluster$n.log")"
	ready=$(( ($(date +%s%N) - t0) / 1000000 ))
	tot=0 max=0
	while read -r _ _ _ sp; do
		k=$(pss_tree "$sp")
		tot=$((tot + k)); [ "$k" -gt "$max" ] && max=$k
	done < "$D/nodes"
	cas=- want=- dms=-
	r0=$D/node000/root$R
	if [ -f "$LIBS/libibmockumad.so" ] && [ -f "$r0/ib/mock-ib.json" ] && command -v ibnetdiscover > /dev/null; then
		want=$((n * $(jq '.ib.hcas | length' "$r0/ib/mock-ib.json")))
		# Every member must have heard of every other before the walk.
		wait_for 120 sh -c "[ \"\$(grep -o 'fabric: [0-9]* member' '$D/node000/sup.log' | tail -1 | awk '{print \$2}')\" = $n ]"
		a=$(date +%s%N)
		MOCK_IB=full MOCK_IB_ROOT=$r0/ib MOCK_IB_SOCKET=$r0/run/mock-ib.sock \
			LD_PRELOAD="$LIBS/libibmockumad.so:$LIBS/libibmockverbs.so:$LIBS/libibmocksys.so" \
			timeout 120 ibnetdiscover > "$T/disc$n" 2> "$T/disc$n.err"
		dms=$(( ($(date +%s%N) - a) / 1000000 ))
		cas=$(grep -c '^Ca' "$T/disc$n")
	fi
	printf 'bench:   %5d %9d %14d %14d %14s %10s\n' "$n" "$ready" $((tot / n)) "$max" "$cas/$want" "$dms"
	stop_cluster
done
finish
