#!/bin/bash
# No write escapes the host root, for the writers outside host.c (issue
# 19): links to a directory (or file) outside the root are planted where
# mock-ib makes its socket, where mokka-ctl writes the overrides document,
# its lock and the Xid journal, where IMEXDownload keeps its cache, and at
# Apply's mount point /run/nvidia/driver.  Each is refused with an error
# naming the link, and a full listing of the outside directory does not
# change.
#   M  mock-ib standalone: the socket's directory, the socket itself
#   C  mokka-ctl --host-root: the document's directory, the document, the
#      lock, the Xid journal, the device state store (reset)
#   S  a supervisor pass: the IMEX cache (Stage), /run/nvidia/driver (Apply)
#   T  a supervisor start: the runtime overrides it empties (a link to a
#      file outside is refused, the file keeps its bytes), R/state (where
#      it records its daemons' pids)
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (device nodes, mounts)"; exit 77; }
MIB=$B/mock-ib
IBC=$B/ib_client
CTL=$B/mokka-ctl
[ -x "$MIB" ] && [ -x "$IBC" ] && [ -x "$CTL" ] || die "mock-ib, ib_client or mokka-ctl not built"
OUT=$T/outside
mkdir -p "$OUT"
echo "not the simulator's" > "$OUT/witness"

listing() { find "$OUT" -printf '%P %y %m %s %T@ %l\n' | sort; }
# plant HOSTPATH [file]: HOSTPATH under the root becomes a link to a fresh
# directory (or file) outside it.
plant() {
	local d
	d=$OUT/$(echo "$1" | tr / _)
	mkdir -p "$(dirname "$ROOT$1")"
	if [ "${2:-}" = file ]; then echo keep > "$d"; else mkdir -p "$d" && echo keep > "$d/keep"; fi
	ln -s "$d" "$ROOT$1" || die "cannot plant $1"
}
unplant() { rm -f "$ROOT$1"; }
# named LOG HOSTPATH: the log names the link
named() { grep -qF "$ROOT$2 is a symbolic link" "$1"; }
same_outside() { # same_outside ROUND
	listing > "$T/out-after"
	if diff -u "$T/out-before" "$T/out-after" > "$T/out.diff"; then
		pass "$1: nothing outside the root changed"
	else
		fail "$1: the outside directory changed"; sed 's/^/# /' "$T/out.diff" | head -20
	fi
}

# ---- M: mock-ib's socket ----
"$IBC" config --profile "$S/etc/profiles/h100.yaml" --node node-a --hcas 1 --leaf-ports 2 \
	--spines 1 --socket /run/ib/mock-ib.sock > "$ROOT/mock-ib.json" || die "ib_client config"
mib() { # mib LOG: mock-ib runs at most 5 s; its status
	timeout 5 "$MIB" --config /mock-ib.json --host-root "$ROOT" > "$1" 2>&1
}
for p in /run /run/ib "/run/ib/mock-ib.sock file"; do
	set -- $p
	plant "$@"
	listing > "$T/out-before"
	mib "$T/mib.log"
	rc=$?
	check "M: mock-ib refuses $1 (exit $rc, not running on)" [ "$rc" -ne 0 -a "$rc" -ne 124 ]
	check "M: the log names $1" named "$T/mib.log" "$1"
	same_outside "M $1"
	unplant "$1"
	rm -rf "$ROOT/run"
done
# Without links, it listens (the same config, the same checks).  Run
# bare, not under timeout(1): timeout's own TERM and CONT arriving while
# an ASan build's leak check stops the world at exit hang both processes.
"$MIB" --config /mock-ib.json --host-root "$ROOT" > "$T/mib.log" 2>&1 &
MPID=$!
check "M: without links, it listens" wait_for 3 test -S "$ROOT/run/ib/mock-ib.sock"
kill -TERM "$MPID" 2>/dev/null
( sleep 30; kill -KILL "$MPID" 2>/dev/null ) > /dev/null 2>&1 &
WD=$!
wait "$MPID"
rc=$?
kill "$WD" 2>/dev/null
check "M: and exits 0 on SIGTERM (status $rc)" [ "$rc" -eq 0 ]

# ---- C: mokka-ctl's document, lock and Xid journal ----
CFG=$R/driver/config
mkdir -p "$ROOT$CFG"
cp "$S/etc/profiles/a100.yaml" "$ROOT$CFG/config.yaml"
ctl() { env -u MOCK_NVML_OVERRIDES -u MOCK_NVML_CONFIG "$CTL" --host-root "$ROOT" "$@"; }
ctl --gpu 0 temp 80 > /dev/null 2>&1 || die "mokka-ctl does not work without links"
ctl --gpu 0 xid 79 > /dev/null 2>&1 || die "mokka-ctl xid does not work without links"
for p in "$CFG/overrides.yaml" "$CFG/.overrides.lock" "$CFG/.overrides.xids"; do
	rm -f "$ROOT$p"
	plant "$p" file
	listing > "$T/out-before"
	ctl --gpu 0 xid 48 > "$T/ctl.log" 2>&1 && fail "C: mokka-ctl wrote with $p a link"
	check "C: the error names $p" named "$T/ctl.log" "$p"
	same_outside "C $p"
	unplant "$p"
done
# The device state store reset clears.
plant "$CFG/state"
listing > "$T/out-before"
ctl reset > "$T/ctl.log" 2>&1 && fail "C: mokka-ctl reset went through $CFG/state"
check "C: the error names $CFG/state" named "$T/ctl.log" "$CFG/state"
same_outside "C $CFG/state"
unplant "$CFG/state"
# The directory itself (the config is read through it; nothing written).
mv "$ROOT$CFG" "$OUT/config" && ln -s "$OUT/config" "$ROOT$CFG"
listing > "$T/out-before"
ctl --gpu 0 temp 81 > "$T/ctl.log" 2>&1 && fail "C: mokka-ctl wrote through $CFG"
check "C: the error names $CFG" named "$T/ctl.log" "$CFG"
same_outside "C $CFG"
rm -rf "$ROOT"
mkdir -p "$ROOT"

# ---- S: a supervisor pass (IMEX cache at Stage, the mount point at Apply) ----
plant "$R/cache"
plant /run/nvidia/driver
listing > "$T/out-before"
: > "$T/sup.log"
start_supervisor --simulators gpudriver,imex --imex-channel-count 2 \
	--config "$S/etc/profiles/gb200.yaml" --feature-gates IMEXDownload=true \
	--imex-download-url http://127.0.0.1:1/imex.tar.xz \
	--imex-download-sha256 0000000000000000000000000000000000000000000000000000000000000000
wait_for 60 named "$T/sup.log" /run/nvidia/driver
check "S: the log names the IMEX cache $R/cache" named "$T/sup.log" "$R/cache"
check "S: the log names the mount point /run/nvidia/driver" named "$T/sup.log" /run/nvidia/driver
check "S: no fetch was started into the refused cache" \
	sh -c "! grep -q 'IMEXDownload: .* not cached: fetching' '$T/sup.log'"
check "S: the link at the mount point is left as it was" test -L "$ROOT/run/nvidia/driver"
kill -TERM "$SUP_PID"
wait_for 30 sh -c "! kill -0 $SUP_PID 2>/dev/null" || fail "S: no exit on SIGTERM"
wait "$SUP_PID" 2>/dev/null
SUP_PID=
same_outside S

# ---- T: what a supervisor start empties, where it records ----
rm -rf "$ROOT"
mkdir -p "$ROOT"
plant "$R/driver/config/overrides.yaml" file
plant "$R/config/overrides.yaml" file
listing > "$T/out-before"
start_supervisor --simulators gpudriver
wait_for 30 named "$T/sup.log" "$R/config/overrides.yaml"
for p in "$R/driver/config/overrides.yaml" "$R/config/overrides.yaml"; do
	check "T: the log names $p" named "$T/sup.log" "$p"
done
stop_supervisor
same_outside "T overrides"
rm -rf "$ROOT"
mkdir -p "$ROOT"
plant "$R/state"
listing > "$T/out-before"
start_supervisor --simulators gpudriver
check "T: a start refuses $R/state" wait_for 30 sh -c "! kill -0 $SUP_PID 2>/dev/null"
check "T: the log names $R/state" named "$T/sup.log" "$R/state"
stop_supervisor
same_outside "T state"

[ "$FAILS" -eq 0 ] || exit 1
