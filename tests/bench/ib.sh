#!/bin/bash
# Benchmark (a report, never a pass/fail test) of mock-ib, inside a private
# mount + network namespace (loopback relay):
#  - MAD round trip: COUNT NodeInfo SMPs through the daemon (hop 0, a local
#    LID, a remote LID over the TCP relay), each as a ratio to the floor:
#    a SEQPACKET echo round trip between two processes, same run;
#  - membership at FABRIC_SIZES members (default 16 64 256), each in its
#    own network namespace with one HCA, seeded with two members and the
#    network (tests/ib_fabric_lib.sh): time until every member sees all,
#    control frames and bytes (REGISTER, MEMBERS, DIGEST) a member sent to
#    join (once, until the first count) and per second in a quiet fabric
#    (QUIET_S, default 10 s),
#    beside what the old relay sent (a REGISTER to every member every
#    second, computed from the REGISTER's size);
#  - fabric discovery: the unmodified ibnetdiscover (through the shims, on
#    node 1's staged tree) over rail-optimised 2-level fat trees of
#    MEMBERS x HCAS CAs (default 2 4 8 16 64 members x 32 HCAs: 64 ..
#    2,048 CAs, as the issue asks), median of RUNS, with the MADs it
#    sent (node 1's counter), the time per MAD, and the ratio of the time
#    per MAD to the echo floor; ib_client's own DR walk when the shims or
#    the ib worker are not built.  Beside it, the classic simulator on the
#    very same fabric: ibsim (ibsim-utils) loaded with that ibnetdiscover
#    output, the same ibnetdiscover through its libumad2sim.so (attached
#    at the first switch), median of RUNS; the ratio mock-ib / ibsim and
#    the cost per CA of each (us/CA, mock-ib | ibsim).
# libibumad lists at most 32 CAs and umad0..63 when it picks the default
# port, so members carry 32 HCAs and the fabric grows by members.
# Needs root (namespaces).  Environment: COUNT (5000), RUNS (3), SIZES
# ("2 4 8 16 64" members), HCAS (32), LEAF_PORTS (32), SPINES (2),
# FABRIC_SIZES ("16 64 256"), QUIET_S (10).
if [ -z "${MOKKA_IB_BENCH_INNER:-}" ]; then
	[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for the namespaces"; exit 77; }
	MOKKA_IB_BENCH_INNER=1 exec unshare -m -n --propagation private bash "$0" "$@"
fi
. "$(dirname "$0")/../lib.sh"
COUNT=${COUNT:-5000}
RUNS=${RUNS:-3}
SIZES=${SIZES:-2 4 8 16 64}
HCAS=${HCAS:-32}
LEAF_PORTS=${LEAF_PORTS:-32}
SPINES=${SPINES:-2}
C=$B/ib_client
MIB=$B/mock-ib
LIBS=$B/.libs
[ -x "$MIB" ] && [ -x "$C" ] || die "mock-ib or ib_client not built"
ip link set lo up
declare -A MPID
PIDS=

median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
ms_now() { echo $(( $(date +%s%N) / 1000000 )); }

profile() { # profile HCAS -> $T/pN.yaml
	local f=$T/p$1.yaml
	cp "$S/etc/profiles/h100.yaml" "$f"
	printf '  hca_count: %d\n  fabric:\n    leaf_ports: %d\n    spines: %d\n' "$1" "$LEAF_PORTS" \
		"$SPINES" >> "$f"
	echo "$f"
}
root() { echo "$T/n$1"; }
sock() { echo "$(root "$1")$R/run/mock-ib.sock"; }
# start_nodes COUNT HCAS PORTBASE: COUNT members on 127.0.0.1, full mesh
start_nodes() {
	local m=$1 h=$2 base=$3 p i peers=
	p=$(profile "$h")
	# Two seeds: the members learn each other by gossip (a list of every
	# member would not fit ib.peers at 64 members).
	peers=127.0.0.1:$((base + 1)),127.0.0.1:$((base + 2))
	for i in $(seq "$m"); do
		mkdir -p "$(root $i)/etc"
		"$C" config --profile "$p" --node "node$(printf %03d $i)" --listen 127.0.0.1 \
			--port $((base + i)) --peers "$peers" > "$(root $i)/etc/mock-ib.json" || die "config"
		"$MIB" --config /etc/mock-ib.json --host-root "$(root $i)" > "$T/mib$i.log" 2>&1 &
		MPID[$i]=$!
	done
	for i in $(seq "$m"); do
		wait_for 60 grep -q "fabric: $m member(s)" "$T/mib$i.log" ||
			die "node $i never saw $m members: $(tail -3 "$T/mib$i.log")"
	done
}
stop_nodes() {
	local i
	for i in "${!MPID[@]}"; do
		kill -TERM "${MPID[$i]}" 2>/dev/null && wait "${MPID[$i]}"
	done
	MPID=()
}
trap 'stop_nodes; fab_teardown; cleanup' EXIT
. "$S/tests/ib_fabric_lib.sh"

# ---- MAD round trips ----
start_nodes 2 2 $((10000 + RANDOM % 10000))
L_LOCAL=$(jq -r '.ib.hcas[1].lid' "$(root 1)/etc/mock-ib.json")
L_REMOTE=$(jq -r '.ib.hcas[0].lid' "$(root 2)/etc/mock-ib.json")
"$C" rtt "$(sock 1)" 0 200 > /dev/null	# warm up
floor=$("$C" echo-rtt "$COUNT" | awk '{print $3}')
hop0=$("$C" rtt "$(sock 1)" 0 "$COUNT" | awk '{print $3}')
local_lid=$("$C" rtt "$(sock 1)" 0 "$COUNT" "$L_LOCAL" | awk '{print $3}')
remote=$("$C" rtt "$(sock 1)" 0 "$COUNT" "$L_REMOTE" | awk '{print $3}')
stop_nodes
echo "bench: mock-ib MAD round trips, $COUNT each, medians, $(nproc) CPUs"
awk -v f="$floor" -v a="$hop0" -v b="$local_lid" -v c="$remote" 'BEGIN{ if (f <= 0) f = 1
	printf "bench:   floor (SEQPACKET echo to another process): %.1f us\n", f
	printf "bench:   NodeInfo, directed route hop 0:          %.1f us = %.1f x floor\n", a, a / f
	printf "bench:   NodeInfo, LID-routed, local CA:          %.1f us = %.1f x floor\n", b, b / f
	printf "bench:   NodeInfo, LID-routed, remote CA (relay): %.1f us = %.1f x floor\n", c, c / f }'

# ---- fabric discovery ----
use_tools=
if [ -f "$LIBS/libibmockumad.so" ] && [ -f "$LIBS/libibmocksys.so" ] && [ -f "$LIBS/libibmockverbs.so" ] &&
	[ -x "$B/mokka-worker-ib" ] && command -v ibnetdiscover > /dev/null; then
	use_tools=1
	MOKKA_PKGLIBDIR=$LIBS "$B/mokka-worker-ib" --host-root "$(root 1)" --config "$(profile "$HCAS")" \
		--node-name node001 stage > "$T/stage.log" 2>&1 || die "stage: $(tail -3 "$T/stage.log")"
fi
discover() { # one walk from node 1; prints the CA count
	if [ -n "$use_tools" ]; then
		MOCK_IB=full MOCK_IB_ROOT="$(root 1)$R/ib" MOCK_IB_SOCKET="$(sock 1)" \
			LD_PRELOAD="$LIBS/libibmockumad.so:$LIBS/libibmockverbs.so:$LIBS/libibmocksys.so" \
			ibnetdiscover > "$T/disc.out" 2> "$T/disc.err" || return 1
		grep -c '^Ca' "$T/disc.out"
	else
		"$C" discover "$(sock 1)" 0 | awk '{print $2}'
	fi
}
# ibsim_discover CAS: ibsim on the fabric mock-ib just printed ($T/disc.out;
# ibsim parses no NDR, so the links read QDR), then ibnetdiscover through
# libumad2sim.so, RUNS times; prints the median ms.
ibsim_discover() {
	local sp times=$T/sim.times
	sed 's/4xNDR/4xQDR/' "$T/disc.out" > "$T/sim.net"
	ibsim -s -n -N 65536 -S 8192 -P 262144 "$T/sim.net" > "$T/ibsim.log" 2>&1 &
	sp=$!
	wait_for 60 grep -q 'simulator ready' "$T/ibsim.log" || die "ibsim: $(tail -3 "$T/ibsim.log")"
	: > "$times"
	for _ in $(seq "$RUNS"); do
		a=$(ms_now)
		LD_PRELOAD=$SIMSO ibnetdiscover > "$T/sim.out" 2> "$T/sim.err" || die "ibsim ibnetdiscover: $(head -3 "$T/sim.err")"
		echo $(( $(ms_now) - a )) >> "$times"
		[ "$(grep -c '^Ca' "$T/sim.out")" = "$1" ] || die "ibsim: ibnetdiscover found $(grep -c '^Ca' "$T/sim.out") CAs, want $1"
	done
	kill "$sp" 2>/dev/null; wait "$sp" 2>/dev/null
	median < "$times"
}
echo "bench: fabric discovery with $([ -n "$use_tools" ] && echo "ibnetdiscover (shims)" || echo "ib_client discover (no shims/worker built)"), median of $RUNS, leaf_ports $LEAF_PORTS, $SPINES spines"
SIMSO=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
use_ibsim=
[ -n "$use_tools" ] && command -v ibsim > /dev/null && [ -f "$SIMSO" ] && use_ibsim=1
printf 'bench:   %7s %5s %5s %9s %8s %9s %16s %9s %9s %12s\n' members CAs sws "time ms" MADs "us/MAD" \
	"per MAD vs floor" "ibsim ms" "mock/sim" "us/CA m|s"
# Below the ephemeral range (32768+): 64 members dial thousands of links.
port=$((20000 + RANDOM % 10000))
for m in $SIZES; do
	port=$((port + 100))
	start_nodes "$m" "$HCAS" "$port"
	: > "$T/times"
	for _ in $(seq "$RUNS"); do
		a=$(ms_now)
		n=$(discover) || die "discovery failed: $(head -3 "$T/disc.err")"
		echo $(( $(ms_now) - a )) >> "$T/times"
		[ "$n" = $((m * HCAS)) ] || die "walk found $n CAs, want $((m * HCAS))"
	done
	sws=$([ -n "$use_tools" ] && grep -c '^Switch' "$T/disc.out" || echo "?")
	stop_nodes
	mads=$(grep -o 'stopped: [0-9]* MADs in' "$T/mib1.log" | awk '{print $2}')
	t=$(median < "$T/times")
	st=0
	[ -n "$use_ibsim" ] && st=$(ibsim_discover "$((m * HCAS))")
	awk -v m="$m" -v n=$((m * HCAS)) -v s="$sws" -v t="$t" -v k="${mads:-0}" -v r="$RUNS" -v f="$floor" \
		-v st="$st" 'BEGIN{
		per = k / r; us = per > 0 ? t * 1000 / per : 0
		printf "bench:   %7d %5d %5s %9d %8d %9.1f %14.1f x", m, n, s, t, per, us, us / (f > 0 ? f : 1)
		if (st > 0) printf " %9d %8.2f x %5.0f|%-5.0f", st, t / st, t * 1000 / n, st * 1000 / n
		printf "\n" }'
done
# ---- membership: convergence and control traffic per member ----
FABRIC_SIZES=${FABRIC_SIZES:-16 64 256}
QUIET_S=${QUIET_S:-10}
cp "$S/etc/profiles/h100.yaml" "$T/fab1.yaml"
printf '  hca_count: 1\n  fabric:\n    leaf_ports: 16\n    spines: 2\n' >> "$T/fab1.yaml"
echo "bench: fabric membership (gossip), 1 HCA per member, seeds $FAB_SEEDS, quiet window ${QUIET_S} s"
printf 'bench:   %7s %9s %22s %24s %26s\n' members "conv ms" "to join: frames bytes" \
	"quiet: frames/s bytes/s" "old relay: frames/s bytes/s"
for m in $FABRIC_SIZES; do
	fab_net "$m"
	for i in $(seq 0 $((m - 1))); do fab_config "$i" "$T/fab1.yaml"; done
	reg=$(jq -c . "$(fab_root 0)/etc/mock-ib.json" | wc -c)
	t0=$(date +%s%N)
	for i in $(seq 0 $((m - 1))); do fab_start "$i"; done
	wait_for 300 fab_all_see "$m" || die "$m members did not converge"
	conv=$(( ($(date +%s%N) - t0) / 1000000 ))
	fab_counters > "$T/fc1"
	sleep "$QUIET_S"
	fab_counters > "$T/fc2"
	paste "$T/fc1" "$T/fc2" | awk -v m="$m" -v c="$conv" -v reg="$reg" '
		{ jf += $1; jb += $2; qf += $6 - $1; qb += $7 - $2; qms += $10 - $5 }
		END { printf "bench:   %7d %9d %10.0f %11.0f %11.2f %12.1f %12d %13d\n", m, c,
			jf / m, jb / m, qf * 1000 / qms, qb * 1000 / qms, m - 1, (m - 1) * (reg + 5) }'
	fab_teardown
done
finish
