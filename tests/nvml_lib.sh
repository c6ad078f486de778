# Shared helpers for the NVML consumer tests (nvml_pynvml.sh, nvml_slurm.sh,
# nvml_hwloc.sh); sourced after tests/lib.sh.  The node is staged by
# mokka-worker-gpudriver (the mock libnvidia-ml.so.1 under the driver root)
# and mokka-worker-pcibus (the fake sysfs PCI tree).
#
# MOKKA_NVML_HAND_STAGE=1 stages the library by hand while the gpudriver
# worker does not exist yet (development only).

PY=/usr/bin/python3
LIB=$B/.libs/libnvidia-ml.so
GPUDRIVER=$B/mokka-worker-gpudriver
PCIBUS=$B/mokka-worker-pcibus

# nvml_require_python: Debian's python3 with python3-yaml.
nvml_require_python() {
	[ -x "$PY" ] || die "$PY missing (Debian python3; install-deps.sh)"
	"$PY" -c 'import yaml' 2>/dev/null || die "python3-yaml missing for $PY (install-deps.sh)"
}

# nvml_require_workers: the two staging workers are built (or the hand
# staging fallback is asked for).
nvml_require_workers() {
	[ -x "$PCIBUS" ] || die "$PCIBUS not built"
	if [ ! -x "$GPUDRIVER" ]; then
		[ "${MOKKA_NVML_HAND_STAGE:-}" = 1 ] || die "$GPUDRIVER not built"
		[ -f "$LIB" ] || die "$LIB not built"
		note "MOKKA_NVML_HAND_STAGE=1: staging the library by hand (development only)"
	fi
}

# $T/nvml_profile.py, imported by the tests' Python helpers in $T:
# load(PATH) -> (profile, its device_defaults, its devices[] sorted by index
# and cut to system.num_devices, their count, its nvlink block).
cat > "$T/nvml_profile.py" <<'PYEOF'
import yaml


def load(path):
    prof = yaml.safe_load(open(path))
    dd = prof.get("device_defaults") or {}
    ents = sorted(prof.get("devices") or [], key=lambda e: e.get("index", 0))
    n = len(ents)
    if (prof.get("system") or {}).get("num_devices"):
        n = min(n, int(prof["system"]["num_devices"]))
    return prof, dd, ents[:n], n, prof.get("nvlink") or {}
PYEOF

# stage HOSTROOT PROFILE: the node as the workers render it.
stage() {
	local h=$1 p=$2 d=$1$R/driver
	mkdir -p "$h"
	if [ -x "$GPUDRIVER" ]; then
		"$GPUDRIVER" --host-root "$h" --config "$p" stage > "$T/stage.log" 2>&1 ||
			{ sed 's/^/# /' "$T/stage.log"; return 1; }
	else
		mkdir -p "$d/usr/lib64" "$d/config"
		cp "$LIB" "$d/usr/lib64/libnvidia-ml.so.1"
		ln -sf libnvidia-ml.so.1 "$d/usr/lib64/libnvidia-ml.so"
		cp "$p" "$d/config/config.yaml"
	fi
	"$PCIBUS" --host-root "$h" --config "$p" stage > "$T/stage.log" 2>&1 ||
		{ sed 's/^/# /' "$T/stage.log"; return 1; }
	[ -e "$d/usr/lib64/libnvidia-ml.so.1" ] || { echo "no $d/usr/lib64/libnvidia-ml.so.1"; return 1; }
}

# nvml_write_a100_p2p OUT: a variant of a100 without NVSwitches whose GPUs
# are wired to each other (device_links with remote_index): 4 links to GPU
# i^1, 2 to i^2 and an inactive one to i^3.
nvml_write_a100_p2p() {
	"$PY" - "$S/etc/profiles/a100.yaml" "$1" <<'PYEOF'
import sys, yaml
p = yaml.safe_load(open(sys.argv[1]))
nv = p["nvlink"]
sw = set(s["bdf"].lower() for s in nv.pop("switches", None) or [])
for rc in p["pcie_topology"]["root_complexes"]:
    rc["devices"] = [b for b in rc["devices"] if b.lower() not in sw]
n = len(p["devices"])
nv["links_per_gpu"] = 7
nv["device_links"] = [{"index": i, "links":
    [{"link": k, "remote_index": i ^ 1} for k in range(4)] +
    [{"link": k, "remote_index": i ^ 2} for k in (4, 5)] +
    [{"link": 6, "remote_index": i ^ 3, "state": "inactive"}]} for i in range(n)]
yaml.safe_dump(p, open(sys.argv[2], "w"), sort_keys=False)
PYEOF
}

# nvml_stage_profile PROFILE: sets name, h (the host root) and lib (the
# staged driver's library dir) and stages the node; on failure reports it
# and returns 1.
nvml_stage_profile() {
	name=$(basename "$1" .yaml)
	h=$T/$name
	lib=$h$R/driver/usr/lib64
	rm -rf "$h"
	stage "$h" "$1" || { fail "$name: staging failed"; return 1; }
}
