#!/bin/bash
# Real hwloc 2.9 (Debian hwloc + libhwloc-contrib-plugins, whose
# hwloc_nvml.so plugin is loaded automatically) over the node Mokka stages,
# for every shipped profile: the PCI tree from mokka-worker-pcibus through
# HWLOC_FSROOT=<root>/var/lib/nvml-mock (CONSUMERS.md section 3: the NVML
# component still runs with FSROOT set, so NVML's bus ids are matched
# against the fake sysfs tree) and NVML from the mock libnvidia-ml.so.1
# that mokka-worker-gpudriver stages (first on LD_LIBRARY_PATH).
#
# lstopo must show each GPU's "nvml<i>" OS device under the PCI device with
# the bus id the profile gives GPU i, carrying the profile's name, UUID and
# serial; the plugin must load (all 14 imports bound: RTLD_NOW) and
# initialise without error.  For NVLink 3/4 profiles whose NVSwitches are
# PCI devices of the node (hwloc 2.9 knows no later NVLink version), hwloc
# must also build its NVLinkBandwidth matrix from the NVML NVLink calls.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nvml_lib.sh"

PLUGIN=/usr/lib/x86_64-linux-gnu/hwloc/hwloc_nvml.so

command -v lstopo-no-graphics >/dev/null || die "lstopo-no-graphics missing (Debian package hwloc; install-deps.sh)"
[ -f "$PLUGIN" ] || die "$PLUGIN missing (Debian package libhwloc-contrib-plugins; install-deps.sh)"
nvml_require_python
nvml_require_workers

# check.py PROFILE XML TEXT: prints "FAIL: ..." lines, exits 1 on any.
cat > "$T/check.py" <<'PYEOF'
import re, sys
import xml.etree.ElementTree as ET
from nvml_profile import load
prof, dd, ents, n, nvl = load(sys.argv[1])
fails = []

def bus_of(e):
    b = (e.get("pci") or {}).get("bus_id") or (dd.get("pci") or {}).get("bus_id")
    dom, bus, rest = b.split(":")
    dev, fn = rest.split(".")
    return "%04x:%02x:%02x.%x" % (int(dom, 16), int(bus, 16), int(dev, 16), int(fn, 16))

root = ET.parse(sys.argv[2]).getroot()
osdev_parent = {}          # nvml name -> (parent pci busid or parent type, infos)
def walk(obj, parent):
    for ch in obj.findall("object"):
        if ch.get("type") == "OSDev" and (ch.get("name") or "").startswith("nvml"):
            infos = {i.get("name"): i.get("value") for i in ch.findall("info")}
            osdev_parent[ch.get("name")] = (obj.get("pci_busid") if obj.get("type") == "PCIDev" else obj.get("type"), infos)
        walk(ch, ch)
walk(root, root)
if len(osdev_parent) != n:
    fails.append("%d nvml OS devices in the topology, the profile has %d GPUs" % (len(osdev_parent), n))
for i, e in enumerate(ents):
    name = "nvml%d" % i
    want_bus = bus_of(e)
    if name not in osdev_parent:
        fails.append("%s (GPU %d, %s): no such OS device" % (name, i, want_bus))
        continue
    parent, infos = osdev_parent[name]
    if parent != want_bus:
        fails.append("%s: under %s, want under PCI %s" % (name, parent, want_bus))
    want = {"Backend": "NVML", "GPUModel": str(e.get("name") or dd.get("name")), "NVIDIAUUID": str(e.get("uuid")),
            "NVIDIASerial": str(e.get("serial") or dd.get("serial"))}
    for k, v in want.items():
        if infos.get(k) != v:
            fails.append("%s: info %s=%r, want %r" % (name, k, infos.get(k), v))

# The text form: "nvml<i>" must sit inside the block of "PCI <bus>".
cur, ind = None, -1
seen = {}
for line in open(sys.argv[3]):
    m = re.match(r"^(\s*)PCI (?:([0-9a-f]{4}):)?([0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f])", line)
    depth = len(line) - len(line.lstrip())
    if m:
        cur, ind = (m.group(2) or "0000") + ":" + m.group(3), depth
        continue
    if cur and depth <= ind:
        cur = None
    g = re.search(r'"(nvml\d+)"', line)
    if g:
        seen[g.group(1)] = cur
for i, e in enumerate(ents):
    if seen.get("nvml%d" % i) != bus_of(e):
        fails.append("lstopo text: nvml%d shown under PCI %s, want %s" % (i, seen.get("nvml%d" % i), bus_of(e)))

# NVLinkBandwidth: hwloc 2.9 knows NVLink versions 1-4 only; GPU-to-switch
# links count when the switch is a PCI device of the node.
ver = int(nvl.get("version", 0) or 0)
staged = set(x.lower() for x in sys.argv[4].split())
sw_all = [s for s in nvl.get("switches") or [] if s.get("device_id")]
sw_pci = [s for s in sw_all if str(s.get("bdf", "")).lower() in staged]
if len(sw_pci) != len(sw_all):
    print("note: %d of the profile's %d PCI NVSwitches are not in the staged PCI tree; "
          "hwloc cannot place those NVLink peers" % (len(sw_all) - len(sw_pci), len(sw_all)))
gpu_links = any(l.get("remote_index") is not None and str(l.get("state", "active")).lower() == "active"
                for dl in nvl.get("device_links") or [] for l in dl.get("links") or [])
if int(nvl.get("links_per_gpu", 0) or 0) and 1 <= ver <= 4 and (sw_pci or gpu_links):
    d = [x for x in root.iter() if x.tag.startswith("distances") and x.get("name") == "NVLinkBandwidth"]
    if not d:
        fails.append("no NVLinkBandwidth distances (NVLink %d with PCI NVSwitches or GPU-to-GPU links)" % ver)
    else:
        nb = int(d[0].get("nbobjs", "0"))
        if nb < n:
            fails.append("NVLinkBandwidth covers %d objects, want all %d GPUs (+ switches)" % (nb, n))
for f in fails:
    print("FAIL: " + f)
print("%d GPUs checked, %d problems" % (n, len(fails)))
sys.exit(1 if fails else 0)
PYEOF

# The a100-p2p variant: hwloc builds its NVLinkBandwidth matrix from
# NVML's NVLink state, version and remote PCI info.
nvml_write_a100_p2p "$T/a100-p2p.yaml" || fail "could not write the a100-p2p variant"

n=0
for p in "$S"/etc/profiles/*.yaml "$T/a100-p2p.yaml"; do
	[ -f "$p" ] || continue
	n=$((n + 1))
	nvml_stage_profile "$p" || continue
	[ -d "$h$R/sys/bus/pci/devices" ] || { fail "$name: pcibus staged no sys/bus/pci/devices"; continue; }
	lenv() {
		env -u MOCK_NVML_CONFIG -u HWLOC_COMPONENTS -u HWLOC_PLUGINS_PATH -u HWLOC_PLUGINS_BLACKLIST \
			HWLOC_FSROOT="$h$R" LD_LIBRARY_PATH="$lib" "$@"
	}
	rm -f "$T/topo.xml" "$T/topo.txt"
	lenv HWLOC_PLUGINS_VERBOSE=1 HWLOC_COMPONENTS_VERBOSE=1 HWLOC_SHOW_ALL_ERRORS=1 \
		timeout 120 lstopo-no-graphics -f --whole-io --of xml "$T/topo.xml" > "$T/verbose.out" 2>&1 ||
		fail "$name: lstopo --of xml failed: $(tail -3 "$T/verbose.out")"
	lenv timeout 120 lstopo-no-graphics --whole-io > "$T/topo.txt" 2> "$T/topo.err" ||
		fail "$name: lstopo failed: $(tail -3 "$T/topo.err")"
	if grep -q 'hwloc_nvml.*\(undefined symbol\|cannot open\)\|hwloc/nvml: Failed' "$T/verbose.out"; then
		fail "$name: the hwloc NVML plugin did not load or initialise:"
		grep 'hwloc_nvml\|hwloc/nvml' "$T/verbose.out" | head -5 | sed 's/^/  /'
	fi
	if [ ! -s "$T/topo.xml" ]; then
		fail "$name: lstopo wrote no XML"
	elif "$PY" "$T/check.py" "$p" "$T/topo.xml" "$T/topo.txt" "$(ls "$h$R/sys/bus/pci/devices")" > "$T/check.out" 2>&1; then
		grep '^note:' "$T/check.out" | sed 's/^/# /'

		pass "$name: lstopo shows every nvml OS device under its profile PCI device ($(tail -1 "$T/check.out"))"
	else
		fail "$name: lstopo/NVML mismatch:"
		sed 's/^/  /' "$T/check.out" | head -30
		grep -B2 -A3 'nvml\|NVML' "$T/topo.txt" | head -20 | sed 's/^/  # /'
		grep -i 'nvml\|nvlink' "$T/verbose.out" | head -10 | sed 's/^/  # /'
	fi
	rm -rf "$h"
done
[ "$n" -gt 0 ] || fail "no profiles in $S/etc/profiles"
finish
