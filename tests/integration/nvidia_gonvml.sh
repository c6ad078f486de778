#!/bin/bash
# go-nvml conformance: tests/go/nvmlwalk, our Go program over NVIDIA's
# github.com/NVIDIA/go-nvml (the binding every NVIDIA Go program links),
# calls every method of go-nvml's Device interface on every GPU of every
# shipped profile, over the mock libnvidia-ml.so.1 mokka-worker-gpudriver
# stages: read-only methods first, then the setters (the node is a
# throwaway temp root).  No call may panic or answer ERROR_UNKNOWN, and the
# identity getters' SUCCESS values must equal the profile's and what the
# real nvidia-smi prints for the same GPU (--query-gpu).  Symbols go-nvml
# calls that the mock does not export (newer than the profiles' drivers)
# are listed, not failed: the walker skips them (a real consumer calling
# one would die in the dynamic loader, as with a real old driver).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nvml_lib.sh"
. "$(dirname "$0")/../nvidia_stack_lib.sh"

nvml_require_python
nvml_require_workers
[ -x "${MOKKA_NVIDIA_SMI:-}" ] || die "no nvidia-smi (scripts/fetch-consumers.sh)"
nv_build nvmlwalk "$T/nvmlwalk"

cat > "$T/cmp.py" <<'PYEOF'
import csv, json, sys, yaml
rep = json.load(open(sys.argv[1]))
prof = yaml.safe_load(open(sys.argv[2]))
smi = list(csv.reader(open(sys.argv[3]), skipinitialspace=True))
tag = sys.argv[4]
dd = prof.get("device_defaults") or {}
ents = sorted(prof.get("devices") or [], key=lambda e: e.get("index", 0))
n = len(ents)
if (prof.get("system") or {}).get("num_devices"):
    n = min(n, int(prof["system"]["num_devices"]))
ents = ents[:n]
ARCH = {"kepler": 2, "maxwell": 3, "pascal": 4, "volta": 5, "turing": 6, "ampere": 7,
        "ada": 8, "ada_lovelace": 8, "hopper": 9, "blackwell": 10}
BRAND = {"unknown": 0, "quadro": 1, "tesla": 2, "nvs": 3, "grid": 4, "geforce": 5, "titan": 6,
         "nvidia": 14, "nvidia_rtx": 13, "quadro_rtx": 12}
fails = []
def eq(w, k, got, want):
    if got != want:
        fails.append("%s: %s = %r, want %r" % (w, k, got, want))
if rep["count"] != n:
    fails.append("%s: %d GPUs, profile has %d" % (tag, rep["count"], n))
if rep["driver"] != str(prof["system"]["driver_version"]):
    fails.append("%s: driver %r: the mock did not answer" % (tag, rep["driver"]))
def busid(b):
    dom, bus, rest = b.split(":")
    dev, fn = rest.split(".")
    return "%08X:%02X:%02X.%X" % (int(dom, 16), int(bus, 16), int(dev, 16), int(fn, 16))
def val(e, k, sub=None):
    for src in (e, dd):
        v = src.get(k)
        if isinstance(v, dict) and sub:
            v = v.get(sub)
        if v not in (None, ""):
            return v
    return None
for g, e in zip(rep["gpus"], ents):
    i = g["index"]; f = g["facts"]; w = "%s gpu%d" % (tag, i)
    eq(w, "name", f["name"], val(e, "name"))
    if e.get("uuid"):
        eq(w, "uuid", f["uuid"], e["uuid"])
    eq(w, "serial", f["serial"], str(val(e, "serial")))
    eq(w, "bus_id", f["bus_id"], busid(val(e, "pci", "bus_id")))
    eq(w, "pci_device_id", f["pci_device_id"], val(e, "pci", "device_id"))
    eq(w, "memory_total", f["memory_total"], val(e, "memory", "total_bytes"))
    eq(w, "minor", f["minor"], e.get("minor_number", i))
    cc = val(e, "compute_capability")
    eq(w, "cc", f["cc"], "%d.%d" % (cc["major"], cc["minor"]))
    eq(w, "arch", f["arch"], ARCH[str(val(e, "architecture")).lower()])
    eq(w, "brand", f["brand"], BRAND[str(val(e, "brand")).lower()])
    eq(w, "board_part_number", f["board_part_number"], str(val(e, "board_part_number")))
    eq(w, "vbios", f["vbios"], str(val(e, "vbios_version")))
    eq(w, "graphics_max", f["graphics_max"], val(e, "clocks", "graphics_max"))
    eq(w, "memory_max", f["memory_max"], val(e, "clocks", "memory_max"))
    eq(w, "temperature_gpu", f["temperature_gpu"], val(e, "thermal", "temperature_gpu_c"))
    eq(w, "power_limit_mw", f["power_limit_mw"], val(e, "power", "enforced_limit_mw"))
    eq(w, "pcie_gen_max", f["pcie_gen_max"], val(e, "pcie", "max_link_gen"))
    eq(w, "pcie_width_max", f["pcie_width_max"], val(e, "pcie", "max_link_width"))
    if int(val(e, "mig", "max_gpu_instances") or 0) > 0:   # MIG-capable
        mig = str(val(e, "mig", "mode_current") or "disabled").lower()
        eq(w, "mig_current", f["mig_current"], 1 if mig == "enabled" else 0)
    else:
        eq(w, "mig_current", f["mig_current"], "NOT_SUPPORTED")
    # nvidia-smi --query-gpu of the same GPU (csv, noheader, nounits)
    s = smi[i]
    eq(w, "smi index", int(s[0]), i)
    eq(w, "smi name", s[1], f["name"])
    eq(w, "smi uuid", s[2], f["uuid"])
    eq(w, "smi serial", s[3], f["serial"])
    eq(w, "smi pci.bus_id", s[4], f["bus_id"])
    eq(w, "smi memory.total MiB", int(s[5]), f["memory_total"] >> 20)
    eq(w, "smi compute_cap", s[6], f["cc"])
    eq(w, "smi vbios_version", s[7], f["vbios"])
    eq(w, "smi clocks.max.graphics", int(s[8]), f["graphics_max"])
    eq(w, "smi temperature.gpu", int(s[9]), f["temperature_gpu"])
    eq(w, "smi power.limit W", float(s[10]), f["power_limit_mw"] / 1000.0)
    eq(w, "smi pcie.link.gen.max", int(s[11]), f["pcie_gen_max"])
    for m, c in sorted(g["calls"].items()):
        if c["rc"] in ("ERROR_UNKNOWN", "PANIC"):
            fails.append("%s: %s: %s" % (w, m, c["rc"]))
for x in fails:
    print("FAIL:", x)
open(sys.argv[5], "w").write("\n".join(rep["missing_symbols"]) + "\n")
sys.exit(1 if fails else 0)
PYEOF

Q=index,name,uuid,serial,pci.bus_id,memory.total,compute_cap,vbios_version,clocks.max.graphics,temperature.gpu,power.limit,pcie.link.gen.max
n=0
for p in "$S"/etc/profiles/*.yaml; do
	name=$(basename "$p" .yaml)
	h=$T/$name
	n=$((n + 1))
	stage "$h" "$p" || { fail "$name: staging failed"; continue; }
	lib=$h$R/driver/usr/lib64
	if ! env -u MOCK_NVML_CONFIG -u MOCK_NVML_OVERRIDES LD_LIBRARY_PATH="$lib" \
		timeout 120 "$T/nvmlwalk" -out "$T/$name.json" > "$T/walk.$name" 2>&1; then
		fail "$name: go-nvml walk: $(tail -1 "$T/walk.$name")"
		grep '^FAIL\|died' "$T/walk.$name" | head -20 | sed 's/^/#   /'
		continue
	fi
	pass "$name: $(tail -1 "$T/walk.$name")"
	env -u MOCK_NVML_CONFIG -u MOCK_NVML_OVERRIDES LD_LIBRARY_PATH="$lib" \
		timeout 60 "$MOKKA_NVIDIA_SMI" --query-gpu=$Q --format=csv,noheader,nounits > "$T/smi.$name" 2>&1 ||
		{ fail "$name: nvidia-smi --query-gpu: $(head -3 "$T/smi.$name")"; continue; }
	if "$PY" "$T/cmp.py" "$T/$name.json" "$p" "$T/smi.$name" "$name" "$T/missing.$name" > "$T/cmp.$name" 2>&1; then
		pass "$name: go-nvml's identity values equal the profile's and nvidia-smi's"
	else
		fail "$name: go-nvml values differ"
		head -40 "$T/cmp.$name" | sed 's/^/#   /'
	fi
	rm -rf "$h"
done
[ "$n" -gt 0 ] || fail "no profiles in $S/etc/profiles"

# MIG on: a100 with declared layouts (GPU 0 {1g.5gb: 3, 2g.10gb: 2}, GPU 1
# {3g.20gb: 2}); the walk covers the 7 MIG device handles too.
"$PY" - "$S/etc/profiles/a100.yaml" "$T/a100-mig.yaml" <<'PYEOF'
import sys, yaml
p = yaml.safe_load(open(sys.argv[1]))
p["devices"][0]["mig"] = {"mig-enabled": True, "mig-devices": {"1g.5gb": 3, "2g.10gb": 2}}
p["devices"][1]["mig"] = {"mig-enabled": True, "mig-devices": {"3g.20gb": 2}}
yaml.safe_dump(p, open(sys.argv[2], "w"))
PYEOF
if MOKKA_PKGLIBDIR=$B/.libs stage "$T/a100-mig" "$T/a100-mig.yaml"; then
	env -u MOCK_NVML_CONFIG -u MOCK_NVML_OVERRIDES LD_LIBRARY_PATH="$T/a100-mig$R/driver/usr/lib64" \
		timeout 120 "$T/nvmlwalk" -out "$T/a100-mig.json" > "$T/walk.a100-mig" 2>&1
	check "a100-mig: $(tail -1 "$T/walk.a100-mig")" grep -q ', 8 GPUs, 7 MIG devices, .* 0 failures$' "$T/walk.a100-mig"
	grep '^FAIL\|died' "$T/walk.a100-mig" | head -20 | sed 's/^/#   /'
else
	fail "a100-mig: staging failed"
fi
note "symbols go-nvml calls that the mock does not export (skipped): $(cat "$T"/missing.* 2>/dev/null | sort -u | tr '\n' ' ')"
finish
