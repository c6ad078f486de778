#!/bin/bash
# Four mock-ib nodes form one fabric over the TCP relay, each in its own
# network namespace (10.77.0.N/24 on a bridge), all inside one private
# mount + network namespace of this test.  Per node: a temp root, 2 HCAs,
# a rail-optimised fat tree with 2-port leaves and 2 spines (8 CAs, 4
# leaves, 2 spines).  Checked with tests/ib_client (the shims' wire):
# every node walks the whole fabric, remote SMPs/PMA are answered by the
# owner, vendor pings cross nodes, a stopped or killed peer makes pending
# requests time out with status 110, a killed node's CAs vanish from the
# others' walks within seconds and come back when it restarts, a reload
# (port down) on one node reaches the others.  When the shims and the ib
# worker are built, the unmodified ibnetdiscover and ibping run too:
# every CA and switch with the right links, ping across nodes against a
# real `ibping -S`, a node leaving and coming back.
if [ -z "${MOKKA_IB_FABRIC_INNER:-}" ]; then
	[ "$(id -u)" -eq 0 ] || { echo "SKIP: network namespaces need root"; exit 77; }
	MOKKA_IB_FABRIC_INNER=1 exec unshare -m -n --propagation private bash "$0" "$@"
fi
. "$(dirname "$0")/../lib.sh"

for tool in ip nsenter jq; do
	command -v "$tool" >/dev/null || die "$tool is not installed"
done
C=$B/ib_client
MIB=$B/mock-ib
[ -x "$MIB" ] && [ -x "$C" ] || die "mock-ib or ib_client not built"
NODES="1 2 3 4"
PEERS=10.77.0.1,10.77.0.2,10.77.0.3,10.77.0.4
declare -A HOLD MPID
R_IB=$R/ib

# The network: a bridge here, one namespace per node (held by a sleeping
# process, entered with nsenter: nothing is written outside $T).
ip link set lo up
ip link add br0 type bridge || die "no bridge support"
ip link set br0 up
ns() { local n=$1; shift; nsenter -t "${HOLD[$n]}" -n "$@"; }
for n in $NODES; do
	unshare -n sleep 100000 &
	HOLD[$n]=$!
	wait_for 5 sh -c "[ \"\$(readlink /proc/${HOLD[$n]}/ns/net)\" != \"\$(readlink /proc/self/ns/net)\" ]" ||
		die "namespace of node$n"
	ip link add veth$n type veth peer name eth0 netns "${HOLD[$n]}" || die "veth$n"
	ip link set veth$n master br0 up
	ns $n ip addr add 10.77.0.$n/24 dev eth0
	ns $n ip link set eth0 up
	ns $n ip link set lo up
done

stop_all() {
	for n in $NODES; do
		[ -n "${MPID[$n]:-}" ] && kill -TERM "${MPID[$n]}" 2>/dev/null && wait "${MPID[$n]}"
		MPID[$n]=
	done
	for n in $NODES; do
		[ -n "${HOLD[$n]:-}" ] && kill "${HOLD[$n]}" 2>/dev/null && wait "${HOLD[$n]}" 2>/dev/null
		HOLD[$n]=
	done
	[ -n "${SRV:-}" ] && kill "$SRV" 2>/dev/null
	return 0
}
trap 'stop_all; cleanup' EXIT

# Profile: h100 with 2 HCAs and the fabric shape (infiniband is its last block).
cp "$S/etc/profiles/h100.yaml" "$T/profile.yaml"
[ "$(grep '^[a-z]' "$T/profile.yaml" | tail -1)" = "infiniband:" ] || die "h100.yaml: infiniband is not the last block"
printf '  hca_count: 2\n  fabric:\n    leaf_ports: 2\n    spines: 2\n' >> "$T/profile.yaml"

root() { echo "$T/node$1"; }
sock() { echo "$(root "$1")$R/run/mock-ib.sock"; }
conf() { echo "$(root "$1")/etc/mock-ib.json"; }
for n in $NODES; do
	mkdir -p "$(root $n)/etc"
	"$C" config --profile "$T/profile.yaml" --node node$n --listen 10.77.0.$n --peers $PEERS \
		> "$(conf $n)" || die "config node$n"
done
lid() { printf '0x%x' "$(jq -r ".ib.hcas[$2].lid" "$(conf "$1")")"; }
guid() { printf '0x%016x' "$(jq -r ".ib.hcas[$2].node_guid" "$(conf "$1")")"; }
pguid() { printf '0x%016x' "$(jq -r ".ib.hcas[$2].port_guid" "$(conf "$1")")"; }

start() { # nsenter execs mock-ib (no fork for a network namespace): $! is its PID
	nsenter -t "${HOLD[$1]}" -n "$MIB" --config /etc/mock-ib.json --host-root "$(root "$1")" \
		--log-level debug >> "$T/mib$1.log" 2>&1 &
	MPID[$1]=$!
}
walk() { "$C" discover "$(sock "$1")" "${2:-0}" 2>&1 | sed 's/ links.*//'; }
all_see() { # all_see WANT NODES... : every listed node's walk prints WANT
	local want=$1 n; shift
	for n in "$@"; do [ "$(walk "$n")" = "$want" ] || return 1; done
}

for n in $NODES; do start $n; done
for n in $NODES; do
	wait_for 10 test -S "$(sock $n)" || die "node$n: no socket; $(tail -5 "$T/mib$n.log")"
done
FULL="cas 8 switches 6"
wait_for 20 all_see "$FULL" $NODES || fail "not every node sees 8 CAs and 6 switches"
for n in $NODES; do
	check "node$n walks the whole fabric from mlx5_1 ($(walk $n 1))" [ "$(walk $n 1)" = "$FULL" ]
done
check "node1 logged three members joining" [ "$(grep -c 'joined the fabric' "$T/mib1.log")" -ge 3 ]
check "each node found itself in the peers list" grep -q 'is this instance' "$T/mib2.log"

# Garbage on the relay port (from node2's namespace): a zero length, an
# oversize length, a REGISTER that is not JSON, a MAD before any REGISTER,
# half a frame.  node1 closes those connections and keeps its fabric.
relay_send() { # relay_send PRINTF-FORMAT [ZEROS]: one connection to node1's relay
	{ printf "$1"; head -c "${2:-0}" /dev/zero; } > "$T/relay.bin"
	ns 2 bash -c 'exec 3<>/dev/tcp/10.77.0.1/18515 && cat "$1" >&3 && sleep 0.3' _ "$T/relay.bin"
}
relay_send '\0\0\0\0'
relay_send '\x7f\xff\xff\xff\x01'
relay_send '\0\0\0\x06\x01hello'
relay_send '\0\0\0\x7d\x02' 124
relay_send '\0\0\x10\0\x01abc'
check "node1 closed a zero/oversize frame length" \
	[ "$(grep -c 'frame length 0 or over' "$T/mib1.log")" = 2 ]
check "node1 refused a bad REGISTER" grep -q 'bad REGISTER: ib config: not valid JSON' "$T/mib1.log"
check "node1 dropped a MAD before REGISTER" grep -q 'MAD before REGISTER; dropped' "$T/mib1.log"
check "node1 still sees the whole fabric after relay garbage" all_see "$FULL" 1 2

# Remote answers come from the owner.
out=$("$C" nodeinfo "$(sock 1)" 0 "$(lid 3 1)")
check "node1 reads node3/mlx5_1's NodeInfo by LID ($out)" \
	[ "$out" = "type 1 ports 1 node_guid $(guid 3 1) port_guid $(pguid 3 1) local_port 1" ]
out=$("$C" portinfo "$(sock 4)" 1 "$(lid 2 0)" 1)
check "node4 reads node2/mlx5_0's PortInfo ($out)" [ "$out" = "lid $(lid 2 0) sm_lid 0x1 state 4 phys 5" ]
# node1 is member 0: rail 0's leaf g0 port 1; node3 (member 2) sits on leaf g1
# port 1, so node1's directed route is CA -> leaf g0 -> spine -> leaf g1 -> CA.
out=$("$C" nodeinfo "$(sock 1)" 0 dr:1,3,2,1)
check "node1 reaches node3/mlx5_0 by directed route over a spine ($out)" \
	[ "$(echo "$out" | cut -d' ' -f6)" = "$(guid 3 0)" ]

# A vendor-class server on node4, a client on node2.
"$C" serve "$(sock 4)" 0 node4-srv > "$T/serve.out" 2>&1 &
SRV=$!
wait_for 5 grep -qs serving "$T/serve.out" || fail "server did not start"
out=$("$C" ping "$(sock 2)" 1 "$(lid 4 0)" 3 2>&1)
check "node2 pings node4's server agent 3 times ($out)" \
	[ "$(echo "$out" | grep -c "^pong lid $(lid 4 0) from node4-srv$")" = 3 ]
out=$("$C" ping "$(sock 2)" 1 "$(lid 3 0)" 1 2>&1)
check "a remote CA without a server answers 'unsupported' ($out)" \
	[ "$out" = "ib_client: ping 0 to lid $(lid 3 0): MAD status 0xc" ]

# A stopped peer never answers: the request times out with status 110.
kill -STOP "${MPID[3]}"
out=$("$C" timeout "$(sock 1)" 0 "$(lid 3 0)" 400 1 2>&1)
check "a request to a stopped node times out with 110 ($out)" [ "${out% after*}" = "timeout status 110" ]
kill -CONT "${MPID[3]}"
wait_for 15 all_see "$FULL" 1 2 4 3 || fail "the fabric did not recover after SIGCONT"

# kill -9 mid-request (node3 stopped first, so the request is surely still
# in flight): the pending request times out; the others drop node3.
kill -STOP "${MPID[3]}"
"$C" timeout "$(sock 1)" 1 "$(lid 3 1)" 1500 0 > "$T/mid.out" 2>&1 &
TPID=$!
sleep 0.3
kill -KILL "${MPID[3]}"; wait "${MPID[3]}" 2>/dev/null; MPID[3]=
wait "$TPID"
check "a request in flight to a killed node times out with 110 ($(cat "$T/mid.out"))" \
	grep -q '^timeout status 110' "$T/mid.out"
LESS="cas 6 switches 6"
t0=$(date +%s)
wait_for 10 all_see "$LESS" 1 2 4 || fail "node3's CAs did not vanish"
check "node3's CAs vanished everywhere within $(( $(date +%s) - t0 )) s" all_see "$LESS" 1 2 4

start 3
wait_for 20 all_see "$FULL" $NODES || fail "node3 did not rejoin"
check "node3 rejoined: every node sees 8 CAs again" all_see "$FULL" $NODES

# Reload on node2: its mlx5_0 goes down; the others see it through REGISTER.
"$C" config --profile "$T/profile.yaml" --node node2 --listen 10.77.0.2 --peers $PEERS --down 0 \
	> "$(conf 2).new" && mv "$(conf 2).new" "$(conf 2)"
kill -HUP "${MPID[2]}"
wait_for 10 all_see "cas 7 switches 6" 1 3 4 || fail "node2's port-down did not propagate"
check "node2's reload reached nodes 1, 3, 4" all_see "cas 7 switches 6" 1 3 4
"$C" config --profile "$T/profile.yaml" --node node2 --listen 10.77.0.2 --peers $PEERS \
	> "$(conf 2).new" && mv "$(conf 2).new" "$(conf 2)"
kill -HUP "${MPID[2]}"
wait_for 10 all_see "$FULL" $NODES || fail "node2's port did not come back"
kill "$SRV" 2>/dev/null; wait "$SRV" 2>/dev/null; SRV=

# ---- the unmodified tools through the shims, over the worker's trees ----
LIBS=$B/.libs
if [ -f "$LIBS/libibmockumad.so" ] && [ -f "$LIBS/libibmockverbs.so" ] && [ -f "$LIBS/libibmocksys.so" ] &&
	[ -x "$B/mokka-worker-ib" ] && command -v ibnetdiscover >/dev/null && command -v ibping >/dev/null; then
	for n in $NODES; do
		MOKKA_PKGLIBDIR=$LIBS "$B/mokka-worker-ib" --host-root "$(root $n)" --config "$T/profile.yaml" --node-name node$n \
			stage > "$T/stage$n.out" 2>&1 || die "stage node$n: $(tail -3 "$T/stage$n.out")"
		same=$(jq -S .ib.hcas "$(root $n)$R_IB/mock-ib.json" | cmp - <(jq -S .ib.hcas "$(conf $n)") && echo y)
		check "node$n: the worker's identities match the daemon's" [ "$same" = y ]
	done
	tool() { # tool NODE CMD... : a tool on NODE with the shims
		local n=$1; shift
		ns "$n" env MOCK_IB=full MOCK_IB_ROOT="$(root "$n")$R_IB" MOCK_IB_SOCKET="$(sock "$n")" \
			LD_PRELOAD="$LIBS/libibmockumad.so:$LIBS/libibmockverbs.so:$LIBS/libibmocksys.so" \
			timeout 60 "$@"
	}
	# Expected CA lines: "desc leaf-r<R>-g<G> port" for member m (sorted
	# node1..node4 = 0..3), rail R = HCA index, G = m / 2, port m % 2 + 1.
	for m in 0 1 2 3; do for r in 0 1; do
		echo "node$((m + 1)) mlx5_$r leaf-r$r-g$((m / 2)) $((m % 2 + 1))"
	done; done | sort > "$T/ca.want"
	cas_of() { # the CA blocks of an ibnetdiscover output as "desc leaf port"
		awk '/^Ca/ { split($0, q, "\""); desc = q[4] }
		     /^\[1\]/ && desc != "" { split($0, q, "\""); match($0, /"S-[0-9a-f]+"\[[0-9]+\]/);
			p = substr($0, RSTART, RLENGTH); sub(/.*\[/, "", p); sub(/\]/, "", p);
			sw = q[4]; sub(/^MF0;/, "", sw); sub(/:.*/, "", sw);
			print desc, sw, p; desc = "" }' "$1" | sort
	}
	links_of() { # switch-to-switch lines as "from port to"
		awk '/^Switch/ { split($0, q, "\""); sw = q[4]; sub(/^MF0;/, "", sw); sub(/:.*/, "", sw) }
		     /^$/ { sw = "" }
		     /^\[[0-9]+\][ \t]+"S-/ && sw != "" { split($0, q, "\""); to = q[4]; sub(/^MF0;/, "", to);
			sub(/:.*/, "", to); p = $1; gsub(/[][]/, "", p); print sw, p, to }' "$1" | sort
	}
	for r in 0 1; do for g in 0 1; do
		echo "leaf-r$r-g$g 3 spine-0"; echo "leaf-r$r-g$g 4 spine-1"
	done; done | sort > "$T/sw.want"
	disc_ok() { # disc_ok NODE WANT-CAS
		tool "$1" ibnetdiscover > "$T/disc$1" 2>"$T/disc$1.err" &&
			[ "$(grep -c '^Ca' "$T/disc$1")" = "$2" ] && [ "$(grep -c '^Switch' "$T/disc$1")" = 6 ]
	}
	for n in $NODES; do
		wait_for 20 disc_ok $n 8 || fail "node$n: ibnetdiscover: $(head -3 "$T/disc$n.err")"
		cas_of "$T/disc$n" > "$T/ca$n"
		check "node$n: ibnetdiscover lists 8 CAs on the right leaf ports" diff -u "$T/ca.want" "$T/ca$n"
		# Leaf uplinks: port 3 to spine-0, port 4 to spine-1, on every leaf;
		# each spine lists the 4 leaves.
		links_of "$T/disc$n" > "$T/sw$n"
		check "node$n: every leaf's ports 3 and 4 go to spine-0 and spine-1" \
			diff -u "$T/sw.want" <(grep '^leaf' "$T/sw$n")
		check "node$n: each spine lists 4 leaves" \
			[ "$(grep -c '^spine-0 [1-4] leaf-r[01]-g[01]$' "$T/sw$n") $(grep -c '^spine-1 [1-4] leaf-r[01]-g[01]$' "$T/sw$n")" = "4 4" ]
	done
	# ibping across nodes against a real `ibping -S`.
	tool 4 ibping -S -C mlx5_1 > "$T/ibping-S.out" 2>&1 &
	IBS=$!
	sleep 0.5
	tool 1 ibping -C mlx5_0 -c 3 "$(( $(lid 4 1) ))" > "$T/ibping.out" 2>&1
	check "ibping node1 -> node4 against ibping -S ($(tail -2 "$T/ibping.out" | head -1))" \
		grep -q '^3 packets transmitted, 3 received, 0% packet loss' "$T/ibping.out"
	check "three pongs from LID $(( $(lid 4 1) ))" \
		[ "$(grep -c "^Pong from .* (Lid $(( $(lid 4 1) ))): time" "$T/ibping.out")" = 3 ]
	tool 2 ibping -C mlx5_1 -c 2 -G "$(pguid 4 1)" \
		> "$T/ibpingG.out" 2>&1
	check "ibping by port GUID (PathRecord) node2 -> node4" \
		grep -q '^2 packets transmitted, 2 received, 0% packet loss' "$T/ibpingG.out"
	kill "$IBS" 2>/dev/null; wait "$IBS" 2>/dev/null
	# A node leaving and coming back, as ibnetdiscover sees it.
	kill -TERM "${MPID[4]}"; wait "${MPID[4]}"; MPID[4]=
	wait_for 15 disc_ok 1 6 || fail "node4's CAs are still in node1's ibnetdiscover"
	check "node4 gone: node1's ibnetdiscover lists 6 CAs" [ "$(grep -c '^Ca' "$T/disc1")" = 6 ]
	check "...none of them node4's" sh -c "! grep -q '\"node4 mlx5_' '$T/disc1'"
	start 4
	wait_for 20 disc_ok 1 8 || fail "node4 did not come back in node1's ibnetdiscover"
	check "node4 back: node1's ibnetdiscover lists 8 CAs" [ "$(grep -c '^Ca' "$T/disc1")" = 8 ]
else
	note "shims, mokka-worker-ib or infiniband-diags missing: tool checks skipped"
	[ -n "${CI:-}" ] && fail "CI must run the tool checks"
fi
for n in $NODES; do
	check "node$n's mock-ib still running" kill -0 "${MPID[$n]}"
done
finish
