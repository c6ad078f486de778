#!/bin/bash
# mokka-ctl without a node (no root, no supervisor): a copy of a shipped
# profile as the engine config and an overrides document beside it.  Every
# command's effect on the document (read back with python3-yaml), GPU
# selection by index, UUID and PCI address, --gpu all, injection sequence
# numbers, status/reset, a broken document, and the mock NVML library
# (loaded with ctypes through MOCK_NVML_CONFIG/MOCK_NVML_OVERRIDES) reading
# what mokka-ctl wrote.
. "$(dirname "$0")/../lib.sh"

PY=/usr/bin/python3
"$PY" -c 'import yaml' 2>/dev/null || die "python3-yaml missing (install-deps.sh)"
[ -x "$B/mokka-ctl" ] || die "mokka-ctl not built"
LIB=$B/.libs/libnvidia-ml.so
D=$T/node
mkdir -p "$D"
cp "$S/etc/profiles/a100.yaml" "$D/config.yaml"
: > "$D/overrides.yaml"
OV=$D/overrides.yaml
ctl() { env -u MOCK_NVML_OVERRIDES -u MOCK_NVML_CONFIG "$B/mokka-ctl" --overrides "$OV" "$@"; }
# val PATH: the value at a dotted path of the document, as JSON
val() { "$PY" - "$OV" "$1" <<'PYEOF'
import json, sys, yaml
d = yaml.safe_load(open(sys.argv[1])) or {}
for k in sys.argv[2].split("."):
    d = d.get(k) if isinstance(d, dict) else None
print(json.dumps(d, sort_keys=True))
PYEOF
}
is() { # is PATH JSON
	local got
	got=$(val "$1")
	[ "$got" = "$2" ] || { note "$1 = $got, want $2"; return 1; }
}
UUID1=$("$PY" -c "import yaml; d=yaml.safe_load(open('$D/config.yaml')); print(sorted(d['devices'], key=lambda e: e.get('index',0))[1].get('uuid',''))")

ctl --gpu 0 temp 91 && is devices.0.thermal.temperature_gpu_c 91 &&
	is devices.0.dynamic_metrics.temperature '{"base_c": 91, "ramp_c": 0, "variance_c": 0}' || fail "temp"
ctl --gpu 0 power 350.5 && is devices.0.power.current_draw_mw 350500 || fail "power"
ctl --gpu 0 fan 40 && is devices.0.fan '{"count": 1, "speed_percent": 40}' || fail "fan"
ctl --gpu 0 util 70 30 && is devices.0.utilization '{"gpu": 70, "memory": 30}' &&
	is devices.0.dynamic_metrics.utilization null || fail "util"
ctl --gpu 0 clocks 1500 && is devices.0.clocks '{"graphics_current": 1500, "sm_current": 1500}' || fail "clocks"
ctl --gpu 0 throttle thermal power && is devices.0.clocks_throttle_reasons.hw_thermal_slowdown true &&
	is devices.0.clocks_throttle_reasons.sw_power_cap true &&
	is devices.0.clocks_throttle_reasons.gpu_idle false || fail "throttle"
ctl --gpu 0 throttle none && is devices.0.clocks_throttle_reasons.hw_thermal_slowdown false || fail "throttle none"
ctl --gpu 0 pstate 3 && is devices.0.performance_state '"P3"' || fail "pstate"
ctl --gpu 0 ecc --correctable 5 --scope volatile && is devices.0.ecc.errors.volatile.single_bit \
	'{"device_memory": 5, "total": 5}' && is devices.0.ecc.errors.aggregate null || fail "ecc"
ctl --gpu 0 sram-ecc 4 --type parity --source l2 --threshold-exceeded &&
	is devices.0.ecc.sram.aggregate.uncorrectable_parity 4 &&
	is devices.0.ecc.sram.uncorrectable_sources.l2 4 && is devices.0.ecc.sram.threshold_exceeded true ||
	fail "sram-ecc"
ctl --gpu 0 nvlink-error 2.5 --links 0,1 && is devices.0.nvlink_error '{"links": [0, 1], "rate": 2.5}' ||
	fail "nvlink-error"
ctl --gpu 0 fabric-health route_unhealthy incorrect_configuration=no_partition &&
	is devices.0.fabric.health '{"access_timeout_recovery": false, "degraded_bandwidth": false, "incorrect_configuration": "no_partition", "route_recovery": false, "route_unhealthy": true}' ||
	fail "fabric-health"
ctl --gpu 0 set 'processes=[{pid: 5, name: x}]' thermal.temperature_memory_c=50 &&
	is devices.0.processes '[{"name": "x", "pid": 5}]' && is devices.0.thermal.temperature_memory_c 50 ||
	fail "set"
ctl --gpu 0 unset thermal.temperature_memory_c && is devices.0.thermal.temperature_memory_c null ||
	fail "unset"
pass "every command writes its keys"

# GPU selection, failures and injections
ctl --gpu "$UUID1" fail --mode lost --after-calls 3 --xid 48 &&
	is devices.1.failure.mode '"lost"' && is devices.1.failure.after_calls 3 &&
	is devices.1.failure.xid.code 48 || fail "fail by UUID"
s1=$(val devices.1.failure.xid.seq)
bus2=$("$PY" -c "import yaml; d=yaml.safe_load(open('$D/config.yaml')); print(sorted(d['devices'], key=lambda e: e.get('index',0))[2]['pci']['bus_id'])")
ctl --gpu "$bus2" xid 79 && is devices.2.failure.xid.code 79 || fail "xid by PCI address $bus2"
ctl --gpu 1 xid 48 || fail "xid again"
s2=$(val devices.1.failure.xid.seq)
check "the same Xid again has a larger sequence number ($s1 -> $s2)" [ "$s2" -gt "$s1" ]
ctl --gpu 1 fail --mode healthy && is devices.1.failure null || fail "fail --mode healthy"
ctl xid 13 && is all.failure.xid.code 13 && is devices.2.failure null ||
	fail "--gpu all (default) sets all and drops per-GPU values of the same key"
ctl --gpu 3 fail --mode healthy && is devices.3.failure null &&
	grep -q '"3":' "$OV" && "$PY" -c "import yaml,sys; d=yaml.safe_load(open('$OV')); sys.exit(0 if 'failure' in d['devices']['3'] and d['devices']['3']['failure'] is None else 1)" ||
	fail "healthy on one GPU while all fails: failure: null"
ctl status --gpu 0 > "$T/status" && grep -q '^GPU 0: GPU-' "$T/status" && grep -q 'temperature_gpu_c: 91' "$T/status" ||
	{ fail "status"; cat "$T/status"; }
cp "$OV" "$T/o1"
ctl status > /dev/null
check "status writes nothing" cmp -s "$OV" "$T/o1"
ctl reset --gpu 0 && is devices.0 null && is all.failure.xid.code 13 || fail "reset one GPU"

# the engine reads what mokka-ctl wrote
ctl --gpu 0 temp 77 || fail "temp 77"
cat > "$T/engine.py" <<'PYEOF'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
assert lib.nvmlInit_v2() == 0
h = ctypes.c_void_p()
assert lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h)) == 0
t = ctypes.c_uint()
rc = lib.nvmlDeviceGetTemperature(h, 0, ctypes.byref(t))
print(rc, t.value)
sys.exit(0 if rc == 0 and t.value == 77 else 1)
PYEOF
if [ -f "$LIB" ]; then
	check "the mock NVML reads the temperature mokka-ctl set" env MOCK_NVML_CONFIG="$D/config.yaml" \
		MOCK_NVML_OVERRIDES="$OV" MOCK_NVML_DEV_DIR="$T/nodev" "$PY" "$T/engine.py" "$LIB"
else
	fail "$LIB not built"
fi

# a broken document: clear error, untouched; reset replaces it
printf 'version: 1\ndevices: {"0": {thermal: [unclosed\n' > "$OV"
cp "$OV" "$T/broken"
if ctl temp 50 2> "$T/err"; then fail "a broken document was edited"
elif grep -q "$OV:[0-9]*:[0-9]*:.*mokka-ctl reset" "$T/err" && cmp -s "$OV" "$T/broken"; then
	pass "a broken document is named with line and column and left alone"
else fail "broken document"; cat "$T/err"; fi
check "reset replaces a broken document" ctl reset
check "... with a fresh one" grep -qx 'version: 1' "$OV"
check "the lock file sits beside the document, mode 0600" \
	[ "$(stat -c %a "$D/.overrides.lock" 2>/dev/null)" = 600 ]
# Numbers are plain decimal, as the driver prints them (issue 20): strtod's
# hex, exponents and leading blanks are refused, the document untouched.
cp "$OV" "$T/ov.num"
for v in 1e3 0x4F " 79" +79 7.9 inf; do
	if ctl --gpu 0 xid "$v" > "$T/num.out" 2>&1; then fail "xid '$v' accepted"
	elif grep -q "want an integer 1..65535 (plain decimal), got '$v'" "$T/num.out" &&
		cmp -s "$OV" "$T/ov.num"; then pass "xid '$v' refused"
	else fail "xid '$v'"; cat "$T/num.out"; fi
done
ctl power 1e2 > "$T/num.out" 2>&1
check "power 1e2 refused (numbers too)" grep -q "want a number 0..10000 (plain decimal)" "$T/num.out"
check "fail --xid 0x4F refused" sh -c "! env -u MOCK_NVML_OVERRIDES -u MOCK_NVML_CONFIG \
	'$B/mokka-ctl' --overrides '$OV' fail --mode lost --xid 0x4F 2> /dev/null"
fine() { ctl --gpu 0 xid 79 && ctl --gpu 0 temp -5 && ctl --gpu 0 power 350.5; }
check "xid 79, temp -5 and power 350.5 still fine" fine

# --mock-root lies under --host-root: no way out of it (issue 20).
mkdir -p "$T/hr"
for m in /var/../.. ../x var/lib /a/./b /x/..; do
	if env -u MOCK_NVML_OVERRIDES -u MOCK_NVML_CONFIG "$B/mokka-ctl" --host-root "$T/hr" \
		--mock-root "$m" xid 79 > "$T/mr.out" 2>&1; then fail "--mock-root $m accepted"
	elif [ $? -eq 2 ] && grep -q -- "--mock-root $m: want an absolute path without" "$T/mr.out"
	then pass "--mock-root $m refused"
	else fail "--mock-root $m"; cat "$T/mr.out"; fi
done
check "nothing written outside --host-root" [ -z "$(find "$T" -newer "$T/ov.num" -name '*overrides*' \
	! -path "$D/*")" ]

check "no temp files left" sh -c "! ls -a '$D' | grep -q '\\.tmp'"
finish
