# Sourced by tests/integration/ib_fabric_64.sh and tests/bench/ib.sh (after
# tests/lib.sh): N mock-ib members, each in its own network namespace on
# one bridge (10.78.0.0/16), all inside the private network namespace of
# the caller.  Members are seeded with two of them plus the network, so
# they learn the others by gossip.  Functions:
#   fab_net N            the bridge and N namespaces (held by sleepers)
#   fab_ip I             member I's address
#   fab_config I PROFILE its mock-ib.json
#   fab_start I [ARGS]   start member I (PID in FPID[I], log $T/fab/I.log)
#   fab_stop I           SIGTERM member I and wait for it
#   fab_members I        members in member I's last fabric line
#   fab_all_see N        every running member's fabric has N members
#   fab_counters         SIGUSR1 to all; each one's control traffic so far
#   fab_teardown         stop all members and namespaces
declare -A FHOLD FPID
FAB_N=0
FAB_SEEDS="10.78.0.1,10.78.0.2,10.78.0.0/16"

fab_ip() { echo "10.78.$(($1 / 250)).$(($1 % 250 + 1))"; }
fab_root() { echo "$T/fab/n$1"; }
fab_sock() { echo "$(fab_root "$1")$R/run/mock-ib.sock"; }
fab_ns() { local i=$1; shift; nsenter -t "${FHOLD[$i]}" -n "$@"; }

# The kernel's ARP table is one for all namespaces (gc_thresh3, 1024 by
# default, counts every namespace's neighbours): members that all talk to
# all on one L2 segment overflow it at about 32 ("neighbor table overflow",
# SYNs never leave).  So the bridge is a router here (10.78.255.254, in this
# test's own namespace) and each member a /32 host routed through it: one
# neighbour per member, one per member at the router.
fab_net() {
	local i
	FAB_N=$1
	rm -rf "$T/fab"
	mkdir -p "$T/fab"
	ip link set lo up
	# No STP delay: ports forward at once (the default holds them 15 s).
	ip link add fabbr0 type bridge forward_delay 0 || die "no bridge support"
	ip addr add 10.78.255.254/16 dev fabbr0
	ip link set fabbr0 up
	sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.send_redirects=0 \
		net.ipv4.conf.fabbr0.send_redirects=0 || die "cannot route in the test namespace"
	for i in $(seq 0 $((FAB_N - 1))); do
		unshare -n sleep 100000 &
		FHOLD[$i]=$!
	done
	# One ip for every link here, one per member inside (hundreds of
	# process starts otherwise).
	for i in $(seq 0 $((FAB_N - 1))); do
		wait_for 10 sh -c "[ \"\$(readlink /proc/${FHOLD[$i]}/ns/net)\" != \"\$(readlink /proc/self/ns/net)\" ]" ||
			die "namespace of member $i"
		echo "link add fv$i type veth peer name eth0 netns ${FHOLD[$i]}"
		echo "link set fv$i master fabbr0 up"
	done > "$T/fab/links"
	ip -batch "$T/fab/links" || die "veths: ip -batch failed"
	for i in $(seq 0 $((FAB_N - 1))); do
		printf '%s\n' "addr add $(fab_ip "$i")/32 dev eth0" "link set eth0 up" "link set lo up" \
			"route add 10.78.255.254 dev eth0" "route add 10.78.0.0/16 via 10.78.255.254 dev eth0" |
			fab_ns "$i" ip -batch - || die "address of member $i"
	done
}

fab_config() {
	mkdir -p "$(fab_root "$1")/etc"
	"$B/ib_client" config --profile "$2" --node "node$(printf %03d "$1")" --listen "$(fab_ip "$1")" \
		--peers "$FAB_SEEDS" > "$(fab_root "$1")/etc/mock-ib.json" 2>> "$T/fab/config.err" ||
		die "config of member $1: $(tail -2 "$T/fab/config.err")"
}

fab_start() { # nsenter execs mock-ib (no fork for a network namespace): $! is its PID
	local i=$1; shift
	nsenter -t "${FHOLD[$i]}" -n "$B/mock-ib" --config /etc/mock-ib.json --host-root "$(fab_root "$i")" \
		"$@" >> "$T/fab/$i.log" 2>&1 &
	FPID[$i]=$!
}

fab_stop() {
	[ -n "${FPID[$1]:-}" ] || return 0
	kill -TERM "${FPID[$1]}" 2>/dev/null && wait "${FPID[$1]}" 2>/dev/null
	FPID[$1]=
}

fab_members() {
	grep -o 'fabric: [0-9]* member' "$T/fab/$1.log" 2>/dev/null | tail -1 | awk '{print $2}'
}

# One awk over every running member's log (polled: no process per member).
fab_all_see() {
	local i files=
	for i in "${!FPID[@]}"; do
		[ -n "${FPID[$i]}" ] && files="$files $T/fab/$i.log"
	done
	# shellcheck disable=SC2086
	awk -v want="$1" '/fabric: [0-9]+ member/ { sub(/.*fabric: /, ""); n[FILENAME] = $1 + 0 }
		END { for (f in ARGV) if (f > 0 && n[ARGV[f]] != want) exit 1 }' $files
}

# fab_counters: one line per running member, after a fresh SIGUSR1:
# "ctl_frames_out ctl_bytes_out ctl_frames_in ctl_bytes_in up_ms".
fab_counters() {
	local i files=
	for i in "${!FPID[@]}"; do
		[ -n "${FPID[$i]}" ] || continue
		echo "$(grep -c 'relay: counters' "$T/fab/$i.log") $T/fab/$i.log"
		files="$files $T/fab/$i.log"
		kill -USR1 "${FPID[$i]}"
	done > "$T/fab/counters.before"
	# shellcheck disable=SC2086
	wait_for 30 awk 'FNR == NR { want[$2] = $1 + 1; next }
		/relay: counters/ { got[FILENAME]++ }
		END { for (f in want) if (got[f] < want[f]) exit 1 }' "$T/fab/counters.before" $files ||
		die "a member logged no counters"
	for f in $files; do
		grep 'relay: counters' "$f" | tail -1 |
			sed 's/.*counters: \([0-9]*\) ms up.*control out \([0-9]*\) frames \([0-9]*\) bytes, in \([0-9]*\) frames \([0-9]*\) bytes.*/\2 \3 \4 \5 \1/'
	done
}

fab_teardown() {
	local i
	for i in "${!FPID[@]}"; do
		[ -n "${FPID[$i]}" ] && kill -TERM "${FPID[$i]}" 2>/dev/null
	done
	for i in "${!FPID[@]}"; do
		[ -n "${FPID[$i]}" ] && wait "${FPID[$i]}" 2>/dev/null
		FPID[$i]=
	done
	for i in "${!FHOLD[@]}"; do
		kill "${FHOLD[$i]}" 2>/dev/null && wait "${FHOLD[$i]}" 2>/dev/null
	done
	FHOLD=()
	FPID=()
	ip link del fabbr0 2>/dev/null
	return 0
}
