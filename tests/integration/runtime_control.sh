#!/bin/bash
# Runtime control end to end (issue 6): a supervisor (gpudriver, pcibus,
# kernellog) in a temp root with --kernel-log pointing at a file (never the
# real /dev/kmsg), then real programs only:
#   * `mokka-ctl xid 79 --gpu 2`: within 1 s the log holds the driver's lines
#     for GPU 2's PCI address and UUID (read back with util-linux `dmesg -F`,
#     the addresses and serial taken from the real nvidia-smi), and a pynvml
#     waiter (the device plugin's health check: XidCriticalError events,
#     nvmlEventSetWait_v2) gets Xid 79 for GPU 2 exactly once; the same Xid
#     injected again is a second event and a second log record;
#   * kill -9 of mokka-worker-kernellog, and kill -9 / SIGTERM of the daemon
#     (restarted by the supervisor), announce nothing again;
#   * `fail --mode fallen_off_bus --gpu 2` makes nvidia-smi say GPU 2 is lost,
#     `mokka-ctl reset` brings it back;
#   * temp, ecc and throttle show in `nvidia-smi -q` within 1 s;
#     fabric-health shows in NVML's fabric info (nvidia-smi 535 prints only
#     the fabric state and status, so pynvml's ctypes call reads the health);
#   * 20 mokka-ctl processes at once lose no update, while a reader parsing
#     the document in a loop never sees a torn file;
#   * bad input: unknown GPU, key and value are refused, the document is
#     unchanged; then teardown restores the root exactly.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nvml_lib.sh"

CONS=${MOKKA_CONSUMERS:-/var/cache/mokka-consumers}
PYDIR=$CONS/python3-pynvml/usr/lib/python3/dist-packages
CTL="$B/mokka-ctl --host-root $ROOT"
KLOG=$T/kmsg
D=$ROOT$R/driver
OV=$D/config/overrides.yaml

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (device nodes)"; exit 77; }
nvml_require_python
[ -f "$PYDIR/pynvml.py" ] || die "pynvml not unpacked at $PYDIR (run scripts/fetch-consumers.sh)"
[ -n "${MOKKA_NVIDIA_SMI:-}" ] && [ -x "$MOKKA_NVIDIA_SMI" ] ||
	die "no real nvidia-smi (run scripts/fetch-consumers.sh)"
command -v dmesg > /dev/null || die "dmesg (util-linux) missing"
for p in mokka-ctl mokka-kernellog mokka-worker-kernellog; do
	[ -x "$B/$p" ] || die "$B/$p not built"
done

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
smi() { env -u LD_LIBRARY_PATH -u LD_PRELOAD -u MOCK_NVML_CONFIG -u MOCK_NVML_OVERRIDES \
	timeout 60 "$D/usr/bin/nvidia-smi" "$@"; }
# within MS COMMAND...: COMMAND succeeds within MS milliseconds; prints the time
within() {
	local ms=$1 t0 t; shift
	t0=$(now_ms)
	while :; do
		"$@" > /dev/null 2>&1 && { t=$(( $(now_ms) - t0 )); note "took $t ms"; return 0; }
		[ $(( $(now_ms) - t0 )) -gt "$ms" ] && return 1
		sleep 0.05
	done
}
klog_count() { grep -c "$1" "$KLOG" 2>/dev/null || true; }
kl_daemon() { pgrep -P "$SUP_PID" -f '^mokka-kernellog' | head -1; }

# The environment must not redirect anything under test.
unset MOCK_NVML_KMSG MOCK_NVML_OVERRIDES MOCK_NVML_CONFIG
: > "$KLOG"
tree_snapshot "$ROOT" > "$T/before"
start_supervisor --kernel-log "$KLOG" --simulators gpudriver,pcibus,kernellog
wait_for 30 is_code /readyz 200 || die "not ready: $(cat "$T/body")"
[ -x "$D/usr/bin/nvidia-smi" ] || die "no staged nvidia-smi"

# GPU 2 as the real nvidia-smi sees it.
IFS=', ' read -r UUID2 BUS2 SERIAL2 < <(smi --query-gpu=uuid,pci.bus_id,serial --format=csv,noheader -i 2)
bdf2=$(echo "${BUS2#0000}" | tr 'A-F' 'a-f')		# 00000000:3A:00.0 -> 0000:3a:00.0
pci2=${bdf2%.*}
note "GPU 2: $UUID2 $bdf2 serial $SERIAL2"
[ -n "$UUID2" ] && [ -n "$SERIAL2" ] || die "nvidia-smi did not report GPU 2"

# ---- the device plugin's health check, waiting before the injection ----
cat > "$T/waiter.py" <<'PYEOF'
import ctypes, os, sys, time
sys.path.insert(0, sys.argv[1])
import pynvml as N
stop = sys.argv[2]
N.nvmlInit()
hs = [N.nvmlDeviceGetHandleByIndex(i) for i in range(N.nvmlDeviceGetCount())]
uuids = [N.nvmlDeviceGetUUID(h) for h in hs]
uuids = [u.decode() if isinstance(u, bytes) else u for u in uuids]
addr = [ctypes.cast(h, ctypes.c_void_p).value for h in hs]
es = N.nvmlEventSetCreate()
for h in hs:
    if N.nvmlDeviceGetSupportedEventTypes(h) & N.nvmlEventTypeXidCriticalError:
        N.nvmlDeviceRegisterEvents(h, N.nvmlEventTypeXidCriticalError, es)
print("ready", flush=True)
t_end = time.time() + 120
while time.time() < t_end and not os.path.exists(stop):
    try:
        e = N.nvmlEventSetWait_v2(es, 200)
    except N.NVMLError as err:
        if err.value == N.NVML_ERROR_TIMEOUT:
            continue
        raise
    i = addr.index(ctypes.cast(e.device, ctypes.c_void_p).value)
    print("event type=%d xid=%d gpu=%d uuid=%s" % (e.eventType, e.eventData, i, uuids[i]),
          flush=True)
N.nvmlEventSetFree(es)
N.nvmlShutdown()
PYEOF
LD_LIBRARY_PATH=$D/usr/lib64 "$PY" "$T/waiter.py" "$PYDIR" "$T/stop" > "$T/events.log" 2> "$T/waiter.log" &
WAITER=$!
wait_for 20 grep -q ready "$T/events.log" || { cat "$T/waiter.log"; die "waiter did not start"; }

# ---- Xid 79 on GPU 2 ----
$CTL xid 79 --gpu 2 || die "mokka-ctl xid failed"
check "kernel log announces Xid 79 within 1 s" within 1000 grep -q 'Xid (PCI' "$KLOG"
sleep 0.3
dmesg -F "$KLOG" | sed 's/^\[[ 0-9.]*\] //' > "$T/dmesg.txt"
cat > "$T/want.txt" <<EOF
kernel: NVRM: GPU at PCI:$pci2: $UUID2
kernel: NVRM: GPU Board Serial Number: $SERIAL2
kernel: NVRM: Xid (PCI:$pci2): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
kernel: NVRM: GPU $bdf2: GPU has fallen off the bus.
EOF
if diff -u "$T/want.txt" "$T/dmesg.txt" > "$T/dmesg.diff"; then
	pass "dmesg -F shows the driver's four lines for GPU 2"
else
	fail "dmesg lines differ"; sed 's/^/# /' "$T/dmesg.diff"
fi
check "the Xid line is an error-level record" sh -c "dmesg -F '$KLOG' -x | grep -q 'err.*NVRM: Xid'"
check "NVML waiter gets Xid 79 for GPU 2" \
	wait_for 5 grep -q "type=8 xid=79 gpu=2 uuid=$UUID2" "$T/events.log"

# The same Xid again is a second injection: one more event, one more Xid
# line, and no second identity line.
$CTL xid 79 --gpu 2 || fail "second xid"
check "second injection: a second Xid line within 1 s" within 1000 \
	sh -c "[ \$(grep -c 'NVRM: Xid' '$KLOG') -eq 2 ]"
check "second injection: a second NVML event" \
	wait_for 5 sh -c "[ \$(grep -c 'xid=79 gpu=2' '$T/events.log') -eq 2 ]"
sleep 1.5
check "each injection delivered exactly once to the waiter" \
	[ "$(grep -c 'xid=79' "$T/events.log")" -eq 2 ]
check "identity line printed once" [ "$(klog_count 'GPU at PCI')" -eq 1 ]
check "no other GPU announced" [ "$(grep -c 'NVRM: Xid' "$KLOG")" -eq 2 ]

# ---- restarts announce nothing again ----
lines=$(wc -l < "$KLOG")
w=$(worker_pid kernellog)
kill -KILL "$w"
check "kernellog worker restarted" wait_for 10 sh -c "p=\$(pgrep -P $SUP_PID -f 'mokka-worker-kernellog\$'); [ -n \"\$p\" ] && [ \"\$p\" != $w ]"
sleep 2
check "worker kill -9: nothing announced again" [ "$(wc -l < "$KLOG")" -eq "$lines" ]
dp=$(kl_daemon)
[ -n "$dp" ] || fail "no mokka-kernellog daemon"
kill -KILL "$dp"
check "daemon restarted after kill -9" wait_for 10 sh -c "p=\$(pgrep -P $SUP_PID -f '^mokka-kernellog'); [ -n \"\$p\" ] && [ \"\$p\" != $dp ]"
sleep 2
check "daemon kill -9: nothing announced again" [ "$(wc -l < "$KLOG")" -eq "$lines" ]
dp=$(kl_daemon)
kill -TERM "$dp"
check "daemon restarted after SIGTERM" wait_for 10 sh -c "p=\$(pgrep -P $SUP_PID -f '^mokka-kernellog'); [ -n \"\$p\" ] && [ \"\$p\" != $dp ]"
sleep 2
check "daemon restart: nothing announced twice" [ "$(wc -l < "$KLOG")" -eq "$lines" ]
check "the waiter saw no extra event" [ "$(grep -c 'xid=' "$T/events.log")" -eq 2 ]
touch "$T/stop"
wait "$WAITER" || { fail "waiter exited with an error"; sed 's/^/# /' "$T/waiter.log"; }

# ---- GPU 2 falls off the bus, reset brings it back ----
lost2() { smi -q -i 2 > "$T/q2.txt" 2>&1; grep -qi 'GPU is lost' "$T/q2.txt"; }
$CTL fail --mode fallen_off_bus --gpu 2 || fail "mokka-ctl fail"
check "nvidia-smi shows GPU 2 lost after fail --mode fallen_off_bus" within 2000 lost2
smi -q -i 0 > "$T/q0.txt" 2>&1
check "GPU 0 unaffected" sh -c "! grep -qi 'lost' '$T/q0.txt'"
$CTL reset || fail "mokka-ctl reset"
check "mokka-ctl reset brings GPU 2 back" within 2000 sh -c "! { smi -q -i 2 2>&1 | grep -qi 'lost'; }"
check "reset leaves a fresh document" grep -qx 'version: 1' "$OV"

# ---- values visible in nvidia-smi -q within 1 s ----
q0() { smi -q -i 0 2>&1 | grep -q "$1"; }
$CTL temp 91 --gpu 0 || fail "temp"
check "temp 91: GPU Current Temp 91 C within 1 s" within 1000 q0 'GPU Current Temp *: 91 C'
$CTL ecc --correctable 5 --uncorrectable 2 --gpu 0 || fail "ecc"
check "ecc: DRAM Correctable 5 within 1 s" within 1000 q0 'DRAM Correctable *: 5'
check "ecc: DRAM Uncorrectable 2" q0 'DRAM Uncorrectable *: 2'
$CTL throttle thermal --gpu 0 || fail "throttle"
check "throttle thermal: HW Thermal Slowdown Active within 1 s" within 1000 \
	q0 'HW Thermal Slowdown *: Active'
check "throttle is authoritative (Idle no longer active)" q0 'Idle *: Not Active'
smi -q -i 1 > "$T/q1.txt" 2>&1
check "other GPUs keep their temperature" sh -c "! grep -q 'GPU Current Temp *: 91 C' '$T/q1.txt'"

cat > "$T/fabric.py" <<'PYEOF'
import ctypes, sys, time
sys.path.insert(0, sys.argv[1])
import pynvml as N

class FabricInfoV(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("clusterUuid", ctypes.c_ubyte * 16),
                ("status", ctypes.c_uint), ("cliqueId", ctypes.c_uint),
                ("state", ctypes.c_ubyte), ("healthMask", ctypes.c_uint),
                ("healthSummary", ctypes.c_ubyte)]

N.nvmlInit()
fn = N._nvmlGetFunctionPointer("nvmlDeviceGetGpuFabricInfoV")
out = []
for i in (0, 1):
    info = FabricInfoV(version=(ctypes.sizeof(FabricInfoV) | (3 << 24)))
    rc = fn(N.nvmlDeviceGetHandleByIndex(i), ctypes.byref(info))
    out.append("gpu%d rc=%d degraded=%d summary=%d" % (i, rc, info.healthMask & 3, info.healthSummary))
print(" ".join(out))
PYEOF
$CTL fabric-health degraded_bandwidth --gpu 1 || fail "fabric-health"
fab() { LD_LIBRARY_PATH=$D/usr/lib64 "$PY" "$T/fabric.py" "$PYDIR" > "$T/fabric.out" 2>&1 &&
	grep -q 'gpu0 rc=0 degraded=2 .*gpu1 rc=0 degraded=1 summary=3' "$T/fabric.out"; }
check "fabric-health degraded_bandwidth: NVML fabric health of GPU 1 within 1 s" within 1000 fab ||
	sed 's/^/# /' "$T/fabric.out"

# ---- 20 writers at once, a reader in a loop ----
cat > "$T/reader.py" <<'PYEOF'
import os, sys, yaml
path, stop = sys.argv[1], sys.argv[2]
n = bad = 0
while not os.path.exists(stop):
    try:
        doc = yaml.safe_load(open(path))
        if doc is not None and doc.get("version") != 1:
            bad += 1
    except Exception as e:
        bad += 1
        print("torn:", e)
    n += 1
print("reads=%d bad=%d" % (n, bad))
PYEOF
rm -f "$T/stop"
"$PY" "$T/reader.py" "$OV" "$T/stop" > "$T/reader.out" 2>&1 &
READER=$!
keys=(thermal.temperature_memory_c clocks.memory_current utilization.encoder)
pids=()
for i in $(seq 0 19); do
	$CTL --gpu $((i % 8)) set "${keys[$((i / 8))]}=$((i + 10))" > "$T/w$i.log" 2>&1 &
	pids+=($!)
done
wfail=0
for p in "${pids[@]}"; do wait "$p" || wfail=$((wfail + 1)); done
touch "$T/stop"
wait "$READER"
check "20 concurrent mokka-ctl runs all succeed" [ "$wfail" -eq 0 ]
check "the reader never saw a torn document ($(cat "$T/reader.out" | tail -1))" \
	grep -q 'bad=0$' "$T/reader.out"
if "$PY" - "$OV" > "$T/lost.out" 2>&1 <<'PYEOF'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
keys = ["thermal.temperature_memory_c", "clocks.memory_current", "utilization.encoder"]
missing = []
for i in range(20):
    a, b = keys[i // 8].split(".")
    got = (((doc.get("devices") or {}).get(str(i % 8)) or {}).get(a) or {}).get(b)
    if got != i + 10:
        missing.append((i, got))
print("missing:", missing)
sys.exit(1 if missing else 0)
PYEOF
then pass "no update lost among 20 concurrent writers"
else fail "updates lost"; sed 's/^/# /' "$T/lost.out"; fi

# ---- bad input is refused and changes nothing ----
cp "$OV" "$T/ov.before"
bad() { # bad DESCRIPTION PATTERN ARGS...: mokka-ctl fails, says PATTERN, document unchanged
	local d=$1 pat=$2; shift 2
	if $CTL "$@" > "$T/bad.out" 2>&1; then fail "$d: accepted"; return; fi
	if grep -q -- "$pat" "$T/bad.out" && cmp -s "$OV" "$T/ov.before"; then pass "$d"
	else fail "$d"; sed 's/^/# /' "$T/bad.out"; fi
}
bad "unknown GPU index" "no such GPU" temp 50 --gpu 9
bad "unknown GPU UUID" "no such GPU" temp 50 --gpu GPU-00000000-0000-0000-0000-000000000000
bad "unknown key" "unknown key" set thermal.no_such_key=1
bad "wrong type" "expected an integer" set thermal.temperature_gpu_c=hot
bad "value out of range" "want an integer" temp 500
bad "frozen key" "not changeable at run time" set name=X
bad "unknown failure mode" "wants healthy, lost" fail --mode melted
bad "unknown command" "unknown command" explode
bad "unknown option" "unknown option" temp 50 --hot

stop_and_check_teardown "$(kl_daemon)"
check "kernel log untouched by teardown" [ "$(grep -c 'NVRM: Xid' "$KLOG")" -eq 2 ]
finish
