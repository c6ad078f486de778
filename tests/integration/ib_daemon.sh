#!/bin/bash
# mock-ib standalone on one node, through tests/ib_client (the shims' wire):
# socket mode, SMPs by directed route and LID, a fabric walk, NETLINK_RDMA,
# kernel-style timeouts, a vendor-class server and client (ibping -S and
# ibping), garbage/oversize/mid-request disconnects/a client that never
# reads, SIGHUP reload (port down, sessions kept), kill -9 and restart over
# the stale socket, SIGTERM, bad configurations.
. "$(dirname "$0")/../lib.sh"

C=$B/ib_client
MIB=$B/mock-ib
[ -x "$MIB" ] && [ -x "$C" ] || die "mock-ib or ib_client not built"
P=$S/etc/profiles/h100.yaml
SOCK=$ROOT/run/ib/mock-ib.sock
MPID=

config() { # config ARGS... -> $ROOT/mock-ib.json
	"$C" config --profile "$P" --node node-a --hcas 2 --leaf-ports 4 --spines 2 \
		--socket /run/ib/mock-ib.sock "$@" > "$ROOT/mock-ib.json" || die "ib_client config"
}
jget() { jq -r "$1" "$ROOT/mock-ib.json"; }
hexguid() { printf '0x%016x' "$1"; }
start() {
	"$MIB" --config /mock-ib.json --host-root "$ROOT" --log-level debug >> "$T/mib.log" 2>&1 &
	MPID=$!
	wait_for 10 test -S "$SOCK" || die "mock-ib did not create $SOCK"
}
stop() {
	[ -n "$MPID" ] && kill -TERM "$MPID" 2>/dev/null && wait "$MPID"
	local rc=$?
	MPID=
	return $rc
}
trap 'stop; cleanup' EXIT

config
start
check "socket is mode 0660 (root and --socket-group only)" [ "$(stat -c %a "$SOCK")" = 660 ]
G0=$(hexguid "$(jget '.ib.hcas[0].node_guid')")
G1=$(hexguid "$(jget '.ib.hcas[1].node_guid')")
L0=$(printf '0x%x' "$(jget '.ib.hcas[0].lid')")
L1=$(printf '0x%x' "$(jget '.ib.hcas[1].lid')")

# --- SMPs
out=$("$C" nodeinfo "$SOCK" 0)
check "NodeInfo at hop 0 is mlx5_0 itself ($out)" \
	[ "$out" = "type 1 ports 1 node_guid $G0 port_guid ${G0%?}1 local_port 1" ]
out=$("$C" nodeinfo "$SOCK" 1 "$L0")
check "LID-routed NodeInfo from mlx5_1 to mlx5_0's LID ($out)" \
	[ "$out" = "type 1 ports 1 node_guid $G0 port_guid ${G0%?}1 local_port 1" ]
out=$("$C" nodeinfo "$SOCK" 0 dr:1)
check "one hop out is a 6-port leaf entered on port 1 ($out)" \
	[ "$(echo "$out" | cut -d' ' -f1-4) ${out##* }" = "type 2 ports 6 1" ]
out=$("$C" portinfo "$SOCK" 0 "$L1" 1)
check "PortInfo of mlx5_1 by LID ($out)" [ "$out" = "lid $L1 sm_lid 0x1 state 4 phys 5" ]
out=$("$C" discover "$SOCK" 1)
check "the DR walk finds 2 CAs and 4 switches (2 rail leaves, 2 spines) ($out)" \
	[ "${out% links*}" = "cas 2 switches 4" ]

# --- NETLINK_RDMA
"$C" netlink "$SOCK" > "$T/nl" 2>&1
cat > "$T/nl.want" <<EOF
dev 0 mlx5_0 node_guid $G0
dev 1 mlx5_1 node_guid $G1
chardev 0 uverbs0 231:192
chardev 1 uverbs1 231:193
EOF
check "NLDEV dump and GET_CHARDEV" diff -u "$T/nl.want" "$T/nl"

# --- timeouts: nobody at LID 0xbfff; 100 ms x (2 retries + 1)
out=$("$C" timeout "$SOCK" 0 0xbfff 100 2 2>&1)
check "unanswered request returns with status 110 after ~300 ms ($out)" \
	[ "${out% after*}" = "timeout status 110" ]

# --- a vendor-class server on mlx5_1, a client on mlx5_0
"$C" serve "$SOCK" 1 srv-a.example > "$T/serve.out" 2>&1 &
SRV=$!
wait_for 5 grep -qs serving "$T/serve.out" || fail "server did not start"
out=$("$C" ping "$SOCK" 0 "$L1" 3 2>&1)
check "three pings answered by the server agent ($out)" \
	[ "$(echo "$out" | grep -c "^pong lid $L1 from srv-a.example$")" = 3 ]
out=$("$C" ping "$SOCK" 1 "$L0" 1 2>&1)
check "a ping nobody serves gets the kernel's 'unsupported' status ($out)" \
	[ "$out" = "ib_client: ping 0 to lid $L0: MAD status 0xc" ]

# --- an empty frame, an oversize one and a hang-up, all queued before the
# daemon reads: it reads the oversize frame before it sees the hang-up
kill -STOP "$MPID"
out=$("$C" hangup "$SOCK" 0 2>&1)
kill -CONT "$MPID"
check "frames behind an empty one from a gone peer are still read ($out)" \
	wait_for 5 grep -q 'frame larger than 65536 bytes; dropped' "$T/mib.log"

# --- abuse, then it still answers with the same PID
out=$("$C" abuse "$SOCK" 0 2>&1)
check "garbage, oversize, malformed MADs, disconnects, a non-reader ($out)" \
	[ "$out" = "abuse survived" ]
check "same daemon still running" kill -0 "$MPID"
check "oversize frames were dropped with a log line" grep -q 'frame larger than 65536 bytes; dropped' "$T/mib.log"
check "a non-reading client lost frames, logged" grep -q 'output queue full' "$T/mib.log"
check "bad hellos were logged" grep -q 'first frame is not a hello' "$T/mib.log"

# --- SIGHUP: mlx5_1 goes down; the server's session survives the reload
config --down 1
kill -HUP "$MPID"
wait_for 5 grep -q 'reloaded: node node-a' "$T/mib.log" || fail "no reload logged"
out=$("$C" discover "$SOCK" 0)
check "after the reload the walk finds only mlx5_0 ($out)" [ "${out% links*}" = "cas 1 switches 4" ]
out=$("$C" portinfo "$SOCK" 0 "$L1" 1 2>&1)
check "mlx5_1's LID is unreachable while it is down ($out)" \
	[ "$out" = "ib_client: PortInfo: status 110" ]
config
kill -HUP "$MPID"
wait_for 5 sh -c "[ \$(grep -c 'reloaded: node node-a' '$T/mib.log') -ge 2 ]" || fail "second reload"
out=$("$C" ping "$SOCK" 0 "$L1" 1 2>&1)
check "the server session opened before two reloads still answers ($out)" \
	[ "$out" = "pong lid $L1 from srv-a.example" ]
kill "$SRV" 2>/dev/null; wait "$SRV" 2>/dev/null

# --- kill -9 leaves a stale socket; a new daemon replaces it
kill -KILL "$MPID"; wait "$MPID" 2>/dev/null; MPID=
check "kill -9 leaves the socket behind" test -S "$SOCK"
start
# The stale socket file is there before the new daemon listens on its own.
wait_for 10 sh -c "\"$C\" nodeinfo \"$SOCK\" 0 >/dev/null 2>&1"
out=$("$C" nodeinfo "$SOCK" 0)
check "restarted over the stale socket ($out)" [ "${out%% ports*}" = "type 1" ]

# --- SIGTERM: exit 0 and the socket is gone
stop; rc=$?
check "SIGTERM exits 0 (got $rc)" [ "$rc" = 0 ]
check "socket removed on exit" [ ! -e "$SOCK" ]

# --- bad command lines and configurations
"$MIB" --config /nope.json --host-root "$ROOT" > "$T/bad.log" 2>&1; rc=$?
check "missing config: exit 1 (got $rc)" [ "$rc" = 1 ]
check "the error names the file" grep -q "$ROOT/nope.json: cannot read: No such file" "$T/bad.log"
echo '{"node_name": "x", "ib": 7}' > "$ROOT/bad.json"
"$MIB" --config /bad.json --host-root "$ROOT" > "$T/bad.log" 2>&1; rc=$?
check "invalid config: exit 1 (got $rc)" [ "$rc" = 1 ]
"$MIB" --bogus > /dev/null 2>&1; rc=$?
check "unknown option: exit 2 (got $rc)" [ "$rc" = 2 ]
"$MIB" --help | grep -q 'Usage: mock-ib --config FILE'
check "--help prints the usage" [ $? = 0 ]
finish
