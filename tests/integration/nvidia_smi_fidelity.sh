#!/bin/sh
# The elements issue 17 found N/A carry the values the real boards report,
# read by the real nvidia-smi 535 (`-q -x`) over the mock as
# mokka-worker-gpudriver stages it: on h100, every element a public capture
# of an HGX H100 (driver 560.35.03; sources in etc/profiles/h100.yaml)
# fills, with its value; the B200 fabric; the GB300 module power readings;
# addressing mode and protected memory on every board.
#
# Skips (77) only when not root (device nodes) or without the unpacked
# nvidia-smi (scripts/fetch-consumers.sh).
set -u
B=${MOKKA_BUILDDIR:?}
S=${MOKKA_SRCDIR:?}
CONSUMERS=${MOKKA_CONSUMERS:-/var/cache/mokka-consumers}
SMI_SRC=${MOKKA_NVIDIA_SMI:-$CONSUMERS/nvidia-smi/usr/bin/nvidia-smi}
R=/var/lib/nvml-mock
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (device nodes)"; exit 77; }
[ -x "$SMI_SRC" ] || { echo "SKIP: no nvidia-smi at $SMI_SRC (run scripts/fetch-consumers.sh)"; exit 77; }
[ -x "$B/mokka-worker-gpudriver" ] || { echo "FAIL: $B/mokka-worker-gpudriver not built"; exit 1; }
TMP=$(mktemp -d /tmp/mokka-fidelity-XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
export MOKKA_PKGLIBDIR=${MOKKA_PKGLIBDIR:-$B/.libs}
rc=0

qx() { # qx PROFILE: nvidia-smi -q -x -i 0 over the staged profile -> $TMP/PROFILE.xml
	mkdir -p "$TMP/$1"
	MOKKA_NVIDIA_SMI=$SMI_SRC "$B/mokka-worker-gpudriver" --host-root "$TMP/$1" \
		--config "$S/etc/profiles/$1.yaml" --log-level warn stage > "$TMP/$1.log" 2>&1 ||
		{ echo "FAIL: stage $1: $(tail -3 "$TMP/$1.log")"; return 1; }
	env -u LD_LIBRARY_PATH -u LD_PRELOAD -u MOCK_NVML_CONFIG -u MOCK_NVML_OVERRIDES TZ=UTC \
		timeout 60 "$TMP/$1$R/driver/usr/bin/nvidia-smi" -q -x -i 0 > "$TMP/$1.xml" 2>&1 ||
		{ echo "FAIL: nvidia-smi -q -x on $1: $(head -3 "$TMP/$1.xml")"; return 1; }
}

for p in h100 b200 gb300 a100 l40s t4; do qx "$p" || rc=1; done
[ "$rc" = 0 ] || exit 1

python3 - "$TMP" <<'PYEOF' || rc=1
import sys, xml.etree.ElementTree as ET
tmp = sys.argv[1]
fails = []
def gpu(p):
    return ET.parse("%s/%s.xml" % (tmp, p)).getroot().find("gpu")
def want(p, g, path, value):
    got = g.findtext(path)
    got = got.strip() if got is not None else None
    if got != value:
        fails.append("%s <%s>: got %r, want %r" % (p, path, got, value))
ALL6 = "FETCHADD_32 FETCHADD_64 SWAP_32 SWAP_64 CAS_32 CAS_64"
# h100: the values of the HGX H100 capture (driver 560.35.03; addressing
# mode as the 580.105.08 capture of NVIDIA/k8s-test-infra reads it).
g = gpu("h100")
for path, value in (
        ("addressing_mode", "HMM"), ("gpu_part_number", "2330-885-A1"),
        ("board_part_number", "692-2G520-0200-000"),
        ("inforom_bbx_flush/latest_timestamp", "2024/09/26 04:50:04.817"),
        ("inforom_bbx_flush/latest_duration", "92672 us"),
        ("pci/atomic_caps_inbound", ALL6), ("pci/atomic_caps_outbound", ALL6),
        ("sparse_operation_mode", "Disabled"),
        ("fb_memory_usage/total", "81559 MiB"), ("fb_memory_usage/reserved", "450 MiB"),
        ("bar1_memory_usage/total", "131072 MiB"),
        ("cc_protected_memory_usage/total", "0 MiB"), ("cc_protected_memory_usage/used", "0 MiB"),
        ("cc_protected_memory_usage/free", "0 MiB"),
        ("max_clocks/video_clock", "1545 MHz"), ("voltage/graphics_volt", "685.000 mV"),
        ("fabric/state", "Completed"), ("fabric/status", "Success"),
        ("module_power_readings/power_draw", "N/A")):
    want("h100", g, path, value)
# b200: HGX B200 registers with the NVSwitch fabric.
g = gpu("b200")
want("b200", g, "fabric/state", "Completed")
want("b200", g, "fabric/status", "Success")
want("b200", g, "gpu_part_number", "2901-886-A1")
want("b200", g, "pci/atomic_caps_inbound", ALL6)
# gb300: module power readings (real tray limits: 2900 W default/max, 500 W min).
g = gpu("gb300")
for path, value in (("module_power_readings/current_power_limit", "2900.00 W"),
                    ("module_power_readings/default_power_limit", "2900.00 W"),
                    ("module_power_readings/min_power_limit", "500.00 W"),
                    ("module_power_readings/max_power_limit", "2900.00 W"),
                    ("addressing_mode", "ATS"), ("pci/atomic_caps_inbound", ALL6),
                    ("pci/atomic_caps_outbound", "N/A"), ("product_name", "NVIDIA GB300"),
                    ("bar1_memory_usage/total", "524288 MiB"), ("fb_memory_usage/total", "284208 MiB")):
    want("gb300", g, path, value)
if (g.findtext("module_power_readings/power_draw") or "N/A").strip() == "N/A":
    fails.append("gb300 <module_power_readings/power_draw> is N/A")
# Every board: addressing mode and protected memory have a value; pre-Hopper
# boards keep the Hopper-only elements N/A, as the real ones do.
for p in ("a100", "l40s", "t4"):
    g = gpu(p)
    want(p, g, "addressing_mode", "HMM")
    want(p, g, "cc_protected_memory_usage/total", "0 MiB")
    want(p, g, "sparse_operation_mode", "N/A")
    want(p, g, "inforom_bbx_flush/latest_timestamp", "N/A")
for f in fails:
    print("FAIL: " + f)
print("%d checks failed" % len(fails) if fails else "ok: issue 17 elements read as the real boards report them")
sys.exit(1 if fails else 0)
PYEOF
exit "$rc"
