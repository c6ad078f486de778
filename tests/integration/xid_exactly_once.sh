#!/bin/bash
# Every accepted injection is announced exactly once (issue 20):
#   * 50 `mokka-ctl xid` at once (8 GPUs, 50 distinct codes) give exactly 50
#     Xid records, one per (GPU, code), counted with util-linux `dmesg -F`
#     on the kernel-log file (before: the document keeps the latest Xid per
#     GPU, so about 8 came out);
#   * a second mokka-kernellog on the same root (an orphan of a killed
#     supervisor does this) announces nothing twice, and nothing the first
#     one announced;
#   * after teardown such an orphan writes nothing into the root.
. "$(dirname "$0")/../lib.sh"

CTL="$B/mokka-ctl --host-root $ROOT"
KLOG=$T/kmsg
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v dmesg > /dev/null || die "dmesg (util-linux) missing"
for p in mokka-ctl mokka-kernellog mokka-worker-kernellog; do
	[ -x "$B/$p" ] || die "$B/$p not built"
done
unset MOCK_NVML_OVERRIDES MOCK_NVML_CONFIG
: > "$KLOG"
tree_snapshot "$ROOT" > "$T/before"
start_supervisor --kernel-log "$KLOG" --simulators gpudriver,kernellog
wait_for 30 is_code /readyz 200 || die "not ready: $(cat "$T/body")"

xids() { dmesg -F "$KLOG" | grep -c 'NVRM: Xid' || true; }
# pairs: "PCI code" of every Xid record, sorted
pairs() { dmesg -F "$KLOG" | sed -n 's/.*NVRM: Xid (PCI:\([^)]*\)): \([0-9]*\),.*/\1 \2/p' | sort; }
settle() { # settle N: wait for N Xid records, then 2 s more for extras
	wait_for 20 sh -c "[ \$(dmesg -F '$KLOG' | grep -c 'NVRM: Xid') -ge $1 ]"
	sleep 2
}

check "the staged overrides lock is mode 0600" \
	[ "$(stat -c %a "$ROOT$R/driver/config/.overrides.lock")" = 600 ]

# ---- 50 at once ----
pids=()
for i in $(seq 0 49); do
	$CTL xid $((100 + i)) --gpu $((i % 8)) > "$T/x$i.log" 2>&1 &
	pids+=($!)
done
bad=0
for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
check "50 concurrent mokka-ctl xid all succeed" [ "$bad" -eq 0 ] || cat "$T"/x*.log | head
settle 50
check "exactly 50 Xid records for 50 injections (got $(xids))" [ "$(xids)" -eq 50 ]
pairs > "$T/pairs"
check "each (GPU, code) once" [ "$(uniq -d "$T/pairs" | wc -l)" -eq 0 ] && \
	check "50 distinct codes" [ "$(awk '{print $2}' "$T/pairs" | sort -u | wc -l)" -eq 50 ]

# ---- --gpu all: one injection, one record per GPU ----
$CTL xid 13 --gpu all || fail "xid --gpu all"
settle 58
check "xid --gpu all: one record on each of the 8 GPUs (got $(xids))" [ "$(xids)" -eq 58 ]
check "... all of them Xid 13" [ "$(pairs | awk '$2 == 13' | sort -u | wc -l)" -eq 8 ]

# ---- a second daemon on the same root ----
"$B/mokka-kernellog" --mock-root "$R" --host-root "$ROOT" --kernel-log "$KLOG" \
	> "$T/kl2.log" 2>&1 &
KL2=$!
sleep 1.5
check "a second daemon repeats nothing already announced (got $(xids))" [ "$(xids)" -eq 58 ]
pids=()
for i in $(seq 0 9); do
	$CTL xid $((200 + i)) --gpu $((i % 8)) > "$T/y$i.log" 2>&1 &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "xid with two daemons"; done
settle 68
check "two daemons: 10 more injections, exactly 10 more records (got $(xids))" [ "$(xids)" -eq 68 ]
check "both daemons alive" kill -0 "$KL2"

# ---- teardown while the extra daemon still runs (an orphan) ----
lines=$(wc -l < "$KLOG")
stop_and_check_teardown "$(pgrep -P "$SUP_PID" -f '^mokka-kernellog' | head -1)"
sleep 2
note "2 s later, with the orphan still running:"
check_root_restored
check "the orphan announced nothing after teardown" [ "$(wc -l < "$KLOG")" -eq "$lines" ]
kill -TERM "$KL2" 2>/dev/null
wait "$KL2" 2>/dev/null
finish
