#!/bin/bash
# mock-ib's least exposure (issue 19), in a private network namespace:
#  - its umad/netlink socket is mode 0660, owner root, group --socket-group
#    (or $MOCK_IB_SOCKET_GROUP), like /dev/infiniband/umad*: a non-root user
#    outside the group cannot connect, one in the group can;
#  - the relay listens on the address it is given only, and a connection
#    from a host not in ib.peers is closed before a frame is read (its
#    REGISTER never makes a member), while a listed peer's is taken;
#  - under the supervisor, $MOCK_IB_SOCKET_GROUP in its environment makes
#    the socket root:<group> 0660, and mock-ib holds CAP_CHOWN only until
#    it has set that group (then CapPrm = CapEff = NET_BIND_SERVICE).
if [ -z "${MOKKA_IB_EXPOSURE_INNER:-}" ]; then
	[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (namespaces, setpriv)"; exit 77; }
	MOKKA_IB_EXPOSURE_INNER=1 exec unshare -n bash "$0" "$@"
fi
. "$(dirname "$0")/../lib.sh"

C=$B/ib_client
MIB=$B/mock-ib
[ -x "$MIB" ] && [ -x "$C" ] || die "mock-ib or ib_client not built"
for tool in setpriv ss python3; do
	command -v "$tool" >/dev/null || die "$tool is not installed"
done
P=$S/etc/profiles/h100.yaml
SOCK=$ROOT/run/ib/mock-ib.sock
RPORT=18599
MPID=
ip link set lo up

config() { # config NODE ARGS...: the JSON on stdout
	local n=$1; shift
	"$C" config --profile "$P" --node "$n" --hcas 2 --leaf-ports 4 --spines 2 \
		--socket /run/ib/mock-ib.sock "$@" || die "ib_client config $n"
}
start() { # start ARGS...: mock-ib on $ROOT/mock-ib.json
	"$MIB" --config /mock-ib.json --host-root "$ROOT" --log-level debug "$@" >> "$T/mib.log" 2>&1 &
	MPID=$!
	wait_for 10 test -S "$SOCK" || die "mock-ib did not create $SOCK; $(tail -5 "$T/mib.log")"
}
stop() {
	[ -n "$MPID" ] && kill -TERM "$MPID" 2>/dev/null && wait "$MPID"
	MPID=
}
trap 'stop; cleanup' EXIT
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
as_member() { setpriv --reuid=65534 --regid=65534 --groups=4242 "$@"; }

# --- the socket
config node-a --listen 127.0.0.1 --port $RPORT --peers 127.0.0.2 > "$ROOT/mock-ib.json"
chmod 0755 "$T" "$ROOT"		# only the socket's own mode may stop them
start
check "socket is mode 0660 ($(stat -c %a "$SOCK"))" [ "$(stat -c %a "$SOCK")" = 660 ]
check "socket is owned by root:root ($(stat -c %u:%g "$SOCK"))" [ "$(stat -c %u:%g "$SOCK")" = 0:0 ]
check "root walks the fabric" bash -c "'$C' discover '$SOCK' 0 | grep -q '^cas 2 switches 4'"
out=$(as_nobody "$C" nodeinfo "$SOCK" 0 2>&1)
check "a non-root user cannot connect ($out)" bash -c '! grep -q "^type " <<<"$1"' _ "$out"
check "... it is refused for permission ($out)" grep -qi 'permission denied' <<<"$out"
stop

start --socket-group 4242
check "--socket-group: socket is root:4242 ($(stat -c %u:%g "$SOCK"))" \
	[ "$(stat -c %u:%g "$SOCK")" = 0:4242 ]
out=$(as_member "$C" nodeinfo "$SOCK" 0 2>&1)
check "a member of the group connects ($out)" grep -q '^type 1 ports 1' <<<"$out"
out=$(as_nobody "$C" nodeinfo "$SOCK" 0 2>&1)
check "a non-member still cannot ($out)" grep -qi 'permission denied' <<<"$out"
stop

MOCK_IB_SOCKET_GROUP=4243 start
check "\$MOCK_IB_SOCKET_GROUP: socket is root:4243" [ "$(stat -c %u:%g "$SOCK")" = 0:4243 ]
stop
"$MIB" --config /mock-ib.json --host-root "$ROOT" --socket-group no-such-group-xyz \
	>> "$T/mib.log" 2>&1
check "an unknown group is a usage error" [ $? -eq 2 ]

# --- the relay
start
wait_for 5 sh -c "ss -ltnH | grep -q ':$RPORT '" || die "relay did not listen"
binds=$(ss -ltnH "sport = :$RPORT" | awk '{print $4}' | sort -u | tr '\n' ' ')
check "the relay listens on 127.0.0.1:$RPORT only ($binds)" [ "$binds" = "127.0.0.1:$RPORT " ]
config node-b > "$T/b.json"
config node-c > "$T/c.json"
register() { # register SOURCE-ADDR JSON: connect from SOURCE-ADDR, send REGISTER, print what happened
	python3 - "$1" "$RPORT" "$2" <<'EOF'
import socket, struct, sys
src, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
body = open(path, 'rb').read()
s = socket.socket()
s.bind((src, 0))
s.settimeout(5)
s.connect(('127.0.0.1', port))
try:
    s.sendall(struct.pack('>IB', len(body) + 1, 1) + body)
    data = s.recv(65536)   # a peer gets our REGISTER back; a stranger EOF
    print('answered' if data else 'closed')
except (ConnectionResetError, BrokenPipeError):
    print('closed')
EOF
}
out=$(register 127.0.0.3 "$T/c.json")
check "a host not in ib.peers is cut off ($out)" [ "$out" = closed ]
wait_for 5 grep -q 'connection from 127.0.0.3:.*not a host in ib.peers; refused' "$T/mib.log"
check "... and the refusal is logged" grep -q 'not a host in ib.peers; refused' "$T/mib.log"
sleep 0.3
check "... its REGISTER made no member" bash -c "! grep -q 'member node-c joined' '$T/mib.log'"
out=$(register 127.0.0.2 "$T/b.json")
check "a listed peer is answered ($out)" [ "$out" = answered ]
check "... and joins the fabric" wait_for 5 grep -q 'member node-b joined the fabric' "$T/mib.log"
stop

# --- under the supervisor: the group comes from its environment (daemons
# inherit it), CAP_CHOWN sets the socket's group and is gone right after.
SSOCK=$ROOT$R/run/mock-ib.sock
MOCK_IB_SOCKET_GROUP=4245 start_supervisor --simulators pcibus,ib --config "$P" --node-name node-s
wait_for 60 test -S "$SSOCK" || die "no mock-ib socket under the supervisor: $(tail -5 "$T/sup.log")"
MP=$(pgrep -P "$SUP_PID" -x mock-ib | head -1)
[ -n "$MP" ] || die "no mock-ib child of the supervisor"
wait_for 10 sh -c "[ \"\$(stat -c %u:%g '$SSOCK')\" = 0:4245 ]"
check "supervised: socket is 0660 root:4245 ($(stat -c %a:%u:%g "$SSOCK"))" \
	[ "$(stat -c %a:%u:%g "$SSOCK")" = 660:0:4245 ]
out=$(setpriv --reuid=65534 --regid=65534 --groups=4245 "$C" nodeinfo "$SSOCK" 0 2>&1)
check "supervised: a member of the group connects ($out)" grep -q '^type 1 ports 1' <<<"$out"
out=$(as_nobody "$C" nodeinfo "$SSOCK" 0 2>&1)
check "supervised: a non-member cannot ($out)" grep -qi 'permission denied' <<<"$out"
caps=$(awk '/^Cap(Prm|Eff|Bnd)/ { printf "%s %s ", $1, $2 }' "/proc/$MP/status")
check "supervised: mock-ib keeps only NET_BIND_SERVICE, CHOWN dropped ($caps)" \
	[ "$caps" = "CapPrm: 0000000000000400 CapEff: 0000000000000400 CapBnd: 0000000000000401 " ]
stop_supervisor
[ $FAILS -eq 0 ] || { tail -30 "$T/mib.log"; exit 1; }
echo "ok: ib_exposure"
