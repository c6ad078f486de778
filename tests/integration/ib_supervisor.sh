#!/bin/bash
# The ib simulator under the supervisor: the tree is staged and mock-ib
# runs (/readyz waits for its socket); kill -9 of mokka-worker-ib leaves
# mock-ib with the same PID, still serving; a profile edit taking one HCA's
# port down reaches the running daemon through Reload (same PID, the sysfs
# state file and the daemon's PortInfo both say Down; with the IB shims
# built, so does the unmodified smpquery); SIGTERM restores the root.
. "$(dirname "$0")/../lib.sh"

C=$B/ib_client
[ -x "$B/mock-ib" ] && [ -x "$B/mokka-worker-ib" ] && [ -x "$C" ] ||
	die "mock-ib, mokka-worker-ib or ib_client not built"

cp "$S/etc/profiles/h100.yaml" "$T/profile.yaml"
[ "$(grep '^[a-z]' "$T/profile.yaml" | tail -1)" = "infiniband:" ] ||
	die "h100.yaml: infiniband is no longer the last block; the appended keys would land elsewhere"
M=$ROOT$R/ib
SOCK=$ROOT$R/run/mock-ib.sock
PORT1=$M/sys/class/infiniband/mlx5_1/ports/1

tree_snapshot "$ROOT" > "$T/before"
start_supervisor --simulators pcibus,ib --config "$T/profile.yaml" --node-name node-a
wait_for 30 is_code /readyz 200 || die "/readyz never became 200: $(cat "$T/body")"

mib_pid() { pgrep -P "$SUP_PID" -x mock-ib | head -1; }
MP=$(mib_pid)
[ -n "$MP" ] || die "no mock-ib child of the supervisor"
check "exactly one mock-ib" [ "$(pgrep -c -P "$SUP_PID" -x mock-ib)" -eq 1 ]
check "mock-ib runs on the staged config ($(tr '\0' ' ' < "/proc/$MP/cmdline"))" \
	[ "$(tr '\0' ' ' < "/proc/$MP/cmdline")" = "mock-ib --config $R/ib/mock-ib.json --host-root $ROOT " ]
check "the tree is staged (8 HCAs)" [ "$(ls "$M/sys/class/infiniband" | wc -l)" -eq 8 ]
check "pcibus shows the same HCA function" \
	[ "$(readlink "$ROOT$R/sys/bus/pci/devices/0000:1b:00.0")" = \
	  "$(readlink "$M/sys/bus/pci/devices/0000:1b:00.0")" ]
check "the socket is there" test -S "$SOCK"
G0=$(tr -d ':\n' < "$M/sys/class/infiniband/mlx5_0/node_guid")
L1=$(cat "$PORT1/lid")
serves() { # mock-ib answers a NodeInfo for mlx5_0 at hop 0 with its GUID
	"$C" nodeinfo "$SOCK" 0 2>/dev/null | grep -q "node_guid 0x$G0 "
}
check "mock-ib answers NodeInfo for mlx5_0" serves
check "mock-ib reports mlx5_1 active ($("$C" portinfo "$SOCK" 0 "$L1" 1 2>&1))" \
	[ "$("$C" portinfo "$SOCK" 0 "$L1" 1)" = "lid $L1 sm_lid 0x1 state 4 phys 5" ]

# ---- kill -9 of the worker: the daemon stays ----
old=$(worker_pid ib)
[ -n "$old" ] || die "no mokka-worker-ib process"
kill -KILL "$old"
new_worker() { local p; p=$(worker_pid ib); [ -n "$p" ] && [ "$p" != "$old" ]; }
check "mokka-worker-ib came back with a new PID" wait_for 15 new_worker
check "mock-ib kept its PID ($MP -> $(mib_pid))" [ "$(mib_pid)" = "$MP" ]
check "still exactly one mock-ib" [ "$(pgrep -c -P "$SUP_PID" -x mock-ib)" -eq 1 ]
check "its socket still accepts and answers" serves
check "/readyz 200 after the worker restart" wait_for 30 is_code /readyz 200
check "mock-ib still the same PID after the restarted worker's pass" [ "$(mib_pid)" = "$MP" ]

# ---- Reload: port down on HCA 1 ----
reloads() { grep -c "daemon mock-ib: reload (SIGHUP)" "$T/sup.log"; }
r0=$(reloads)
cat >> "$T/profile.yaml" <<'EOF'
  hcas:
    - index: 1
      port_state: DOWN
      phys_state: Disabled
EOF
check "sysfs state of mlx5_1 says DOWN" wait_for 30 grep -qx "1: DOWN" "$PORT1/state"
check "sysfs phys_state of mlx5_1 says Disabled" grep -qx "3: Disabled" "$PORT1/phys_state"
check "mlx5_0 stays ACTIVE" grep -qx "4: ACTIVE" "$M/sys/class/infiniband/mlx5_0/ports/1/state"
check "the supervisor sent SIGHUP" wait_for 20 sh -c "[ \$(grep -c 'daemon mock-ib: reload (SIGHUP)' '$T/sup.log') -gt $r0 ]"
# mlx5_1's own SMA still answers (its LID, through its own port); from
# mlx5_0 the down link no longer reaches it.
down() { [ "$("$C" portinfo "$SOCK" 1 "$L1" 1 2>/dev/null)" = "lid $L1 sm_lid 0x1 state 1 phys 3" ]; }
check "mock-ib answers PortInfo of mlx5_1 as Down/Disabled" wait_for 10 down
check "mlx5_1 is unreachable from mlx5_0 over the down link" sh -c "! '$C' portinfo '$SOCK' 0 '$L1' 1 >/dev/null 2>&1"
check "mock-ib reloaded in place (same PID $MP)" [ "$(mib_pid)" = "$MP" ]
check "/readyz 200 after the reload" wait_for 30 is_code /readyz 200

# The unmodified smpquery through the IB shims, when they are built.
SHIMS=
for s in libibmockumad libibmockverbs libibmocksys; do
	[ -f "$B/.libs/$s.so" ] && SHIMS=$SHIMS${SHIMS:+:}$B/.libs/$s.so
done
if [ "$(echo "$SHIMS" | tr ':' '\n' | grep -c .)" -eq 3 ] && command -v smpquery >/dev/null; then
	out=$(MOCK_IB=full MOCK_IB_ROOT=$M MOCK_IB_SOCKET=$SOCK LD_PRELOAD=$SHIMS \
		timeout 20 smpquery -C mlx5_1 -P 1 -D portinfo 0 1 2>&1)
	check "smpquery -C mlx5_1 -D portinfo 0 1: LinkState Down" \
		sh -c "printf '%s\n' \"\$1\" | grep -Eq '^LinkState:\.+Down\$'" _ "$out"
	check "smpquery -C mlx5_1 -D portinfo 0 1: PhysLinkState Disabled" \
		sh -c "printf '%s\n' \"\$1\" | grep -Eq '^PhysLinkState:\.+Disabled\$'" _ "$out"
	check "smpquery -C mlx5_1 -D portinfo 0 1: Lid $((L1))" \
		sh -c "printf '%s\n' \"\$1\" | grep -Eq '^Lid:\.+$((L1))\$'" _ "$out"
	[ "$FAILS" -eq 0 ] || printf '%s\n' "$out" | head -40 | sed 's/^/# /'
else
	note "IB shims or smpquery not built; the smpquery check is skipped"
fi

# ---- teardown ----
stop_and_check_teardown "$MP"
finish
