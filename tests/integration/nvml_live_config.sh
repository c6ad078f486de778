#!/bin/bash
# Issue 14 (runtime policy reaches a running client): a long-lived real
# pynvml client that initialises NVML once sees a new config.yaml at its
# next calls, without re-init, the way it sees the overrides document:
#  1. gpudriver stages the h100 node: config.yaml and its compiled image
#     (nvml.image), which the library uses (no "parsing ... instead");
#  2. gpudriver re-stages an edited profile (as the control plane's
#     policy does: zero power draw, GPU 1 failed): the client reads 0 mW
#     on GPU 0 and NVML_ERROR_GPU_IS_LOST on GPU 1 within the overrides'
#     one-second check, and GPU 0's UUID (identity) is unchanged;
#  3. config.yaml edited by hand (the image no longer matches its bytes,
#     so the library parses it): a new temperature is seen too.
# Missing consumer or worker = FAIL, never skip.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nvml_lib.sh"

CONS=${MOKKA_CONSUMERS:-/var/cache/mokka-consumers}
PYDIR=$CONS/python3-pynvml/usr/lib/python3/dist-packages
nvml_require_python
[ -f "$PYDIR/pynvml.py" ] || die "pynvml not unpacked at $PYDIR (run scripts/fetch-consumers.sh)"
[ -x "$GPUDRIVER" ] || die "$GPUDRIVER not built"

P=$T/profile.yaml
cp "$S/etc/profiles/h100.yaml" "$P"
stage "$ROOT" "$P" || die "gpudriver stage failed"
CFG=$ROOT$R/driver/config
[ -s "$CFG/nvml.image" ] || die "gpudriver wrote no $CFG/nvml.image"

cat > "$T/client.py" <<'PYEOF'
import sys, time
sys.path.insert(0, sys.argv[1])
import pynvml as N
out = open(sys.argv[2], "w", buffering=1)
N.nvmlInit()
h0, h1 = N.nvmlDeviceGetHandleByIndex(0), N.nvmlDeviceGetHandleByIndex(1)
end = time.time() + float(sys.argv[3])
while time.time() < end:
    try:
        lost = "ok:%d" % N.nvmlDeviceGetTemperature(h1, 0)
    except N.NVMLError as e:
        lost = "rc:%d" % e.value
    out.write("draw=%d temp=%d gpu1=%s uuid=%s\n" % (
        N.nvmlDeviceGetPowerUsage(h0), N.nvmlDeviceGetTemperature(h0, 0), lost,
        N.nvmlDeviceGetUUID(h0)))
    time.sleep(0.05)
N.nvmlShutdown()
PYEOF
LIBDIR=$ROOT$R/driver/usr/lib64
env -u MOCK_NVML_CONFIG MOCK_NVML_DEBUG=1 LD_LIBRARY_PATH="$LIBDIR" \
	"$PY" "$T/client.py" "$PYDIR" "$T/client.out" 30 2> "$T/client.err" &
CLIENT=$!
trap 'kill $CLIENT 2>/dev/null; cleanup' EXIT

# seen REGEX WHAT: the client's latest line matches within 10 s
seen() {
	for _ in $(seq 100); do
		tail -1 "$T/client.out" 2>/dev/null | grep -Eq "$1" && { pass "$2"; return 0; }
		kill -0 $CLIENT 2>/dev/null || break
		sleep 0.1
	done
	fail "$2 (last: $(tail -1 "$T/client.out" 2>/dev/null); $(tail -3 "$T/client.err"))"
}

seen '^draw=72000 temp=[0-9]+ gpu1=ok:[0-9]+ uuid=GPU-' "the client reads the staged profile"
uuid0=$(tail -1 "$T/client.out" | sed 's/.*uuid=//')
check "the library used the compiled image" grep -q 'nvml.image: 9 trees, compiled from' "$T/client.err"
check "and parsed nothing" bash -c "! grep -q 'parsing .* instead' '$T/client.err'"

# 2. the control plane's kind of change, staged by gpudriver
"$PY" - "$P" <<'PYEOF'
import sys
p = open(sys.argv[1]).read()
p = p.replace("current_draw_mw: 72000", "current_draw_mw: 0")
p = p.replace('    minor_number: 1\n', '    minor_number: 1\n    failure: {mode: lost}\n', 1)
open(sys.argv[1], "w").write(p)
PYEOF
grep -q 'failure: {mode: lost}' "$P" || die "profile edit failed"
stage "$ROOT" "$P" || die "gpudriver re-stage failed"
seen "^draw=0 temp=[0-9]+ gpu1=rc:15 uuid=$uuid0\$" \
	"a re-staged config.yaml reaches the running client (0 mW, GPU 1 lost, same UUID)"

# 3. a hand edit: the image no longer matches, the library parses
sed -i 's/temperature_gpu_c: [0-9]*/temperature_gpu_c: 77/' "$CFG/config.yaml"
seen "^draw=0 temp=77 gpu1=rc:15 uuid=$uuid0\$" "a hand-edited config.yaml reaches it too"
check "the stale image was refused by its source hash" \
	grep -q 'compiled from other bytes' "$T/client.err"
kill $CLIENT 2>/dev/null
wait $CLIENT 2>/dev/null
finish
