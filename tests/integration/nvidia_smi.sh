#!/bin/sh
# The real nvidia-smi 535 (Debian's non-free package, unpacked by
# scripts/fetch-consumers.sh, never installed) over the driver root that
# mokka-worker-gpudriver stages, for every shipped profile.  nvidia-smi runs
# from R/driver/usr/bin with NO LD_LIBRARY_PATH: the $ORIGIN/../lib64 run
# path gpudriver gives it must load the mock libnvidia-ml.so.1, which finds
# its engine config beside itself.
#
# Per profile: -L, plain, -q, -q -x (well-formed; attached_gpus and
# product_name), --query-gpu with 61 fields as CSV, topo -m, nvlink -s,
# -i <n>; no output may say "Function Not Found" or "Unknown Error"; values
# match the profile (name, UUID, serial, bus id, VBIOS, memory, power
# limits, temperature, max clocks, PCIe generation and width, device ids).
# Then, on every profile with at least three GPUs, the fault test: a
# hand-written overrides.yaml marks GPU 2 lost and within 1.5 s
# `nvidia-smi -q -i 2` says so while GPU 0 reads fine.  Last, the shrink
# test: the 8-GPU H100 profile cut to 4 GPUs and staged again removes
# /dev/nvidia4..7 and their procfs entries; nvidia-smi and lspci (over
# what mokka-worker-pcibus stages) see 4.
#
# Skips (77) only without the unpacked nvidia-smi (network needed to fetch
# it) or when not root (device nodes).  The worker, the mock library and
# the profiles are the product: missing = FAIL.
set -u
B=${MOKKA_BUILDDIR:?}
S=${MOKKA_SRCDIR:?}
CONSUMERS=${MOKKA_CONSUMERS:-/var/cache/mokka-consumers}
SMI_SRC=${MOKKA_NVIDIA_SMI:-$CONSUMERS/nvidia-smi/usr/bin/nvidia-smi}
WORKER=$B/mokka-worker-gpudriver
PCIBUS=$B/mokka-worker-pcibus
LIBDIR=${MOKKA_PKGLIBDIR:-$B/.libs}
PY=/usr/bin/python3
R=/var/lib/nvml-mock
rc=0
fail() { echo "FAIL: $*"; rc=1; }
pass() { echo "ok: $*"; }
ok_if() { # ok_if DESCRIPTION COMMAND... : pass or fail by the command's status
	_d=$1
	shift
	if "$@"; then pass "$_d"; else fail "$_d"; return 1; fi
}

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (device nodes)"; exit 77; }
[ -x "$SMI_SRC" ] || { echo "SKIP: no nvidia-smi at $SMI_SRC (run scripts/fetch-consumers.sh)"; exit 77; }
[ -x "$WORKER" ] || { echo "FAIL: $WORKER not built"; exit 1; }
[ -e "$LIBDIR/libnvidia-ml.so" ] || { echo "FAIL: mock NVML $LIBDIR/libnvidia-ml.so not built"; exit 1; }
command -v patchelf >/dev/null || { echo "FAIL: patchelf missing (scripts/install-deps.sh)"; exit 1; }
"$PY" -c 'import yaml' 2>/dev/null || { echo "FAIL: python3-yaml missing (scripts/install-deps.sh)"; exit 1; }
XMLLINT=$(command -v xmllint || :)
[ -n "$XMLLINT" ] || echo "note: xmllint (libxml2-utils) missing; XML checked by python only"

TMP=$(mktemp -d /tmp/mokka-nvsmi-XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
export MOKKA_PKGLIBDIR="$LIBDIR"

# The checks that compare nvidia-smi's output with the profile.
cat > "$TMP/check.py" <<'PYEOF'
import sys, re, json, yaml
import xml.etree.ElementTree as ET

MERGED = ("pci", "platform")	# merged field by field; other blocks replace

def load(path):
    with open(path) as f:
        return yaml.safe_load(f)

def gpus(doc):
    dd = doc.get("device_defaults") or {}
    out = []
    for i, e in enumerate(sorted(doc["devices"], key=lambda e: e.get("index", 0))):
        d = dict(dd)
        for k, v in e.items():
            if k in MERGED and isinstance(v, dict):
                d[k] = dict(dd.get(k) or {}, **v)
            else:
                d[k] = v
        out.append(d)
    n = (doc.get("system") or {}).get("num_devices")
    return out[:n] if isinstance(n, int) and n < len(out) else out

def bus(d):
    b = d["pci"]["bus_id"].upper()
    return "0000" + b if len(b) == 12 else b

def watts(mw):
    return "%.2f" % (mw / 1000.0)

def expected(d):
    p, t, c, e = d.get("power", {}), d.get("thermal", {}), d.get("clocks", {}), d.get("pcie", {})
    cc = d.get("compute_capability", {})
    x = {
        "name": d["name"], "uuid": d["uuid"], "serial": str(d["serial"]),
        "pci.bus_id": bus(d), "vbios_version": d["vbios_version"],
        "memory.total": str(d["memory"]["total_bytes"] // (1 << 20)),
        "enforced.power.limit": watts(p["enforced_limit_mw"]),
        "power.limit": watts(p.get("limit_mw", p["enforced_limit_mw"])),
        "power.default_limit": watts(p["default_limit_mw"]),
        "power.min_limit": watts(p["min_limit_mw"]),
        "power.max_limit": watts(p["max_limit_mw"]),
        "temperature.gpu": str(t["temperature_gpu_c"]),
        "clocks.max.graphics": str(c["graphics_max"]),
        "clocks.max.sm": str(c["sm_max"]),
        "clocks.max.memory": str(c["memory_max"]),
        "pcie.link.gen.max": str(e["max_link_gen"]),
        "pcie.link.width.max": str(e["max_link_width"]),
        "pcie.link.gen.current": str(e["current_link_gen"]),
        "pcie.link.width.current": str(e["current_link_width"]),
        "pci.device_id": "0x%08X" % d["pci"]["device_id"],
        "pci.sub_device_id": "0x%08X" % d["pci"]["subsystem_id"],
    }
    if cc:
        x["compute_cap"] = "%d.%d" % (cc["major"], cc["minor"])
    return x

errors = []
def err(msg):
    errors.append(msg)

def cmd_list(doc, path):
    want = ["GPU %d: %s (UUID: %s)" % (i, d["name"], d["uuid"]) for i, d in enumerate(gpus(doc))]
    got = [l for l in open(path).read().splitlines() if l.startswith("GPU ")]
    if got != want:
        err("-L: got %r, want %r" % (got, want))

def cmd_csv(doc, fields, path):
    fields = fields.split(",")
    sysd = doc.get("system") or {}
    rows = [l for l in open(path).read().splitlines() if l.strip()]
    gs = gpus(doc)
    if len(rows) != len(gs):
        err("--query-gpu: %d rows, want %d" % (len(rows), len(gs)))
    for i, (row, d) in enumerate(zip(rows, gs)):
        vals = [v.strip() for v in row.split(",")]
        if len(vals) != len(fields):
            err("--query-gpu row %d: %d values for %d fields (a value with a comma?)" % (i, len(vals), len(fields)))
            continue
        got = dict(zip(fields, vals))
        want = expected(d)
        want.update({"index": str(i), "count": str(len(gs)),
                     "driver_version": str(sysd["driver_version"])})
        for k, v in want.items():
            if k in got and got[k] != v:
                err("--query-gpu GPU %d %s: got %r, want %r" % (i, k, got[k], v))

def cmd_q(doc, path):
    text = open(path).read()
    gs = gpus(doc)
    m = re.search(r"^Attached GPUs\s*:\s*(\d+)", text, re.M)
    if not m or int(m.group(1)) != len(gs):
        err("-q: Attached GPUs %s, want %d" % (m and m.group(1), len(gs)))
    secs = re.split(r"^GPU ([0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-9A-F])$", text, flags=re.M)[1:]
    secs = dict(zip(secs[0::2], secs[1::2]))
    for i, d in enumerate(gs):
        s = secs.get(bus(d))
        if s is None:
            err("-q: no section for GPU %d (%s)" % (i, bus(d)))
            continue
        x = expected(d)
        for label, want in (("Product Name", x["name"]), ("GPU UUID", x["uuid"]),
                            ("Serial Number", x["serial"]), ("VBIOS Version", x["vbios_version"]),
                            ("Bus Id", x["pci.bus_id"])):
            m = re.search(r"^\s+%s\s*:\s*(.*)$" % re.escape(label), s, re.M)
            if not m or m.group(1).strip() != want:
                err("-q GPU %d %s: got %r, want %r" % (i, label, m and m.group(1), want))
        m = re.search(r"FB Memory Usage\s*\n\s+Total\s*:\s*(\d+) MiB", s)
        if not m or m.group(1) != x["memory.total"]:
            err("-q GPU %d FB total: got %r, want %s MiB" % (i, m and m.group(1), x["memory.total"]))

def cmd_xml(doc, path):
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        err("-q -x: not well-formed: %s" % e)
        return
    gs = gpus(doc)
    n = root.findtext("attached_gpus")
    els = root.findall("gpu")
    if n != str(len(gs)) or len(els) != len(gs):
        err("-q -x: attached_gpus %r and %d <gpu>, want %d" % (n, len(els), len(gs)))
    for i, (g, d) in enumerate(zip(els, gs)):
        x = expected(d)
        for path_, want in (("product_name", x["name"]), ("uuid", x["uuid"]),
                            ("serial", x["serial"]), ("vbios_version", x["vbios_version"]),
                            ("pci/pci_bus_id", x["pci.bus_id"]),
                            ("fb_memory_usage/total", x["memory.total"] + " MiB"),
                            ("pci/pci_gpu_link_info/pcie_gen/max_link_gen", x["pcie.link.gen.max"]),
                            ("pci/pci_gpu_link_info/link_widths/max_link_width", x["pcie.link.width.max"] + "x"),
                            ("temperature/gpu_temp", x["temperature.gpu"] + " C"),
                            ("max_clocks/graphics_clock", x["clocks.max.graphics"] + " MHz")):
            got = g.findtext(path_)
            if got is None or got.strip() != want:
                err("-q -x GPU %d <%s>: got %r, want %r" % (i, path_, got, want))
        if g.findall("processes/process_info"):
            err("-q -x GPU %d: phantom <process_info> entries" % i)

def cmd_topo(doc, path):
    text = open(path).read()
    gs = gpus(doc)
    rows = [l for l in text.splitlines() if re.match(r"^GPU\d+\s", l)]
    if len(rows) != len(gs):
        err("topo -m: %d GPU rows, want %d" % (len(rows), len(gs)))
    links = ((doc.get("nvlink") or {}).get("links_per_gpu") or 0)
    if links and len(gs) > 1 and rows and not re.search(r"\bNV\d+\b", rows[0]):
        err("topo -m: profile has %d NVLinks per GPU but GPU0's row shows none: %r" % (links, rows[0]))

def cmd_nvlink(doc, path):
    text = open(path).read()
    links = ((doc.get("nvlink") or {}).get("links_per_gpu") or 0)
    if links and "Link 0:" not in text:
        err("nvlink -s: profile has %d links per GPU; output shows no 'Link 0:'" % links)

def cmd_info(doc):
    gs = gpus(doc)
    print(len(gs), gs[0]["uuid"], gs[-1]["uuid"])

def cmd_cut(doc, n, out):
    devs = sorted(doc["devices"], key=lambda e: e.get("index", 0))
    dropped = {bus(dict(doc.get("device_defaults") or {}, **e)).upper()[4:]
               for e in devs[int(n):]}
    doc["devices"] = devs[:int(n)]
    # The PCIe topology may only name devices that exist.
    for rc in (doc.get("pcie_topology") or {}).get("root_complexes") or []:
        rc["devices"] = [b for b in rc.get("devices") or [] if b.upper() not in dropped]
    with open(out, "w") as f:
        yaml.safe_dump(doc, f, sort_keys=False)

def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    doc = load(args[0])
    {"list": cmd_list, "csv": cmd_csv, "q": cmd_q, "xml": cmd_xml, "topo": cmd_topo,
     "nvlink": cmd_nvlink, "info": cmd_info, "cut": cmd_cut}[cmd](doc, *args[1:])
    for e in errors:
        print("  " + e)
    sys.exit(1 if errors else 0)

main()
PYEOF

QUERY=index,name,uuid,serial,pci.bus_id,vbios_version,memory.total,enforced.power.limit
QUERY=$QUERY,power.limit,power.default_limit,power.min_limit,power.max_limit,temperature.gpu
QUERY=$QUERY,clocks.max.graphics,clocks.max.sm,clocks.max.memory,pcie.link.gen.max
QUERY=$QUERY,pcie.link.width.max,pcie.link.gen.current,pcie.link.width.current,pci.device_id
QUERY=$QUERY,pci.sub_device_id,driver_version,count,compute_cap,timestamp,pci.domain,pci.bus
QUERY=$QUERY,pci.device,display_mode,display_active,persistence_mode,accounting.mode
QUERY=$QUERY,accounting.buffer_size,driver_model.current,inforom.img,inforom.oem,inforom.ecc
QUERY=$QUERY,inforom.pwr,gom.current,fan.speed,pstate,memory.used,memory.free,memory.reserved
QUERY=$QUERY,compute_mode,utilization.gpu,utilization.memory,encoder.stats.sessionCount
QUERY=$QUERY,ecc.mode.current,temperature.memory,power.management,power.draw,clocks.gr
QUERY=$QUERY,clocks.sm,clocks.mem,clocks.video,clocks.applications.graphics
QUERY=$QUERY,clocks.default_applications.graphics,clocks_throttle_reasons.active,mig.mode.current

# smi ROOT NAME ARGS... : run the staged nvidia-smi with a clean library
# environment; output in $TMP/NAME.out, exit status in $TMP/NAME.rc.
smi() {
	_root=$1 _name=$2
	shift 2
	env -u LD_LIBRARY_PATH -u LD_PRELOAD -u MOCK_NVML_CONFIG -u MOCK_NVML_OVERRIDES \
		timeout 60 "$_root$R/driver/usr/bin/nvidia-smi" "$@" > "$TMP/$_name.out" 2>&1
	echo $? > "$TMP/$_name.rc"
	if grep -q 'Function Not Found\|Unknown Error' "$TMP/$_name.out"; then
		fail "${name:-?}: nvidia-smi $_name output has an NVML error text:"
		grep 'Function Not Found\|Unknown Error' "$TMP/$_name.out" | sort | uniq -c | head -10 | cut -c1-240
	fi
}
rc_of() { cat "$TMP/$1.rc"; }
# shellcheck disable=SC2317 # called through ok_if
reads_fine() { [ "$(rc_of "$1")" = 0 ] && ! grep -qi lost "$TMP/$1.out"; }
show() { sed 's/^/#   /' "$TMP/$1.out" | head -"${2:-15}"; }
check_py() { # check_py DESCRIPTION SUBCOMMAND ARGS...
	_d=$1
	shift
	if "$PY" "$TMP/check.py" "$@" > "$TMP/py.out" 2>&1; then pass "$_d"; else fail "$_d"; cat "$TMP/py.out"; fi
}

stage() { # stage ROOT PROFILE
	MOKKA_NVIDIA_SMI=$SMI_SRC "$WORKER" --host-root "$1" --config "$2" --log-level warn stage \
		> "$TMP/stage.log" 2>&1
}

run_profile() { # run_profile NAME PROFILE -> ROOT in $TMP/NAME
	name=$1 prof=$2 root=$TMP/$1
	mkdir -p "$root"
	if ! stage "$root" "$prof"; then
		fail "$name: stage"; sed 's/^/#   /' "$TMP/stage.log"; return
	fi
	# shellcheck disable=SC2046 # three words: count, first and last UUID
	set -- $("$PY" "$TMP/check.py" info "$prof")
	n=$1 uuid0=$2 uuid=$3

	smi "$root" L -L
	if [ "$(rc_of L)" = 0 ]; then check_py "$name: -L lists the profile's $n GPUs" list "$prof" "$TMP/L.out"
	else fail "$name: -L exit $(rc_of L)"; show L; fi

	smi "$root" plain
	if [ "$(rc_of plain)" = 0 ]; then pass "$name: plain nvidia-smi"
	else fail "$name: plain exit $(rc_of plain)"; show plain; fi

	smi "$root" q -q
	if [ "$(rc_of q)" = 0 ]; then check_py "$name: -q values" q "$prof" "$TMP/q.out"
	else fail "$name: -q exit $(rc_of q)"; show q; fi

	smi "$root" qx -q -x
	if [ "$(rc_of qx)" != 0 ]; then
		fail "$name: -q -x exit $(rc_of qx)"; show qx
	else
		if [ -n "$XMLLINT" ]; then
			if "$XMLLINT" --noout "$TMP/qx.out" 2> "$TMP/xmllint.err"; then pass "$name: -q -x well-formed (xmllint)"
			else fail "$name: -q -x not well-formed"; head -5 "$TMP/xmllint.err"; fi
		fi
		check_py "$name: -q -x attached_gpus, product_name and values" xml "$prof" "$TMP/qx.out"
	fi

	smi "$root" csv --query-gpu="$QUERY" --format=csv,noheader,nounits
	if [ "$(rc_of csv)" = 0 ]; then check_py "$name: --query-gpu (61 fields) matches the profile" csv "$prof" "$QUERY" "$TMP/csv.out"
	else fail "$name: --query-gpu exit $(rc_of csv)"; show csv; fi

	smi "$root" topo topo -m
	if [ "$(rc_of topo)" = 0 ]; then check_py "$name: topo -m" topo "$prof" "$TMP/topo.out"
	else fail "$name: topo -m exit $(rc_of topo)"; show topo; fi

	smi "$root" nvlink nvlink -s
	if [ "$(rc_of nvlink)" = 0 ]; then check_py "$name: nvlink -s" nvlink "$prof" "$TMP/nvlink.out"
	else fail "$name: nvlink -s exit $(rc_of nvlink)"; show nvlink; fi

	last=$((n - 1))
	smi "$root" one -i "$last" -q
	if [ "$(rc_of one)" = 0 ] && grep -q "$uuid" "$TMP/one.out" &&
	   [ "$(grep -c '^GPU [0-9A-F]\{8\}:' "$TMP/one.out")" = 1 ]; then
		pass "$name: -i $last -q shows that GPU alone"
	else
		fail "$name: -i $last -q (exit $(rc_of one))"; show one
	fi
	smi "$root" i0 -i 0
	ok_if "$name: -i 0 (exit $(rc_of i0))" [ "$(rc_of i0)" = 0 ] || show i0

	[ "$n" -ge 3 ] && fault_test "$name" "$root" "$uuid0"
}

# A GPU marked lost by hand in overrides.yaml: nvidia-smi sees it within
# 1.5 s, GPU 0 stays readable; clearing the document brings it back.
fault_test() { # fault_test NAME ROOT UUID-OF-GPU-0
	name=$1 root=$2 uuid0=$3 ov=$2$R/driver/config/overrides.yaml
	# An NVML event waiter (pynvml, the device plugin's health-check shape:
	# register XidCriticalError on every GPU, wait) runs across the edit.
	PYTHONPATH=$CONSUMERS/python3-pynvml/usr/lib/python3/dist-packages \
	LD_LIBRARY_PATH=$root$R/driver/usr/lib64 "$PY" - > "$TMP/xid.out" 2>&1 <<'PYX' &
import ctypes, time, pynvml as N
N.nvmlInit()
es = N.nvmlEventSetCreate()
# A lost GPU answers no identity getter: map the event's handle back to the
# UUID read before the fault, as a health checker does.
addr = lambda h: ctypes.cast(h, ctypes.c_void_p).value
uuids = {}
for i in range(N.nvmlDeviceGetCount()):
    h = N.nvmlDeviceGetHandleByIndex(i)
    uuids[addr(h)] = N.nvmlDeviceGetUUID(h)
    N.nvmlDeviceRegisterEvents(h, N.nvmlEventTypeXidCriticalError, es)
print("ready", flush=True)
got, end = [], time.time() + 4
while time.time() < end:
    try:
        e = N.nvmlEventSetWait_v2(es, 200)
        got.append((uuids.get(addr(e.device), "?"), e.eventData))
    except N.NVMLError as err:
        if err.value != N.NVML_ERROR_TIMEOUT:
            raise
for uuid, code in got:
    print("xid", code, uuid.decode() if isinstance(uuid, bytes) else uuid, flush=True)
PYX
	waiter=$!
	for _ in $(seq 50); do grep -q ready "$TMP/xid.out" && break; sleep 0.1; done
	uuid2=$(sed -n 's/^GPU 2: .*(UUID: \(GPU-[^)]*\)).*/\1/p' "$TMP/L.out" 2>/dev/null)
	printf 'version: 1\ndevices:\n  "2":\n    failure:\n      mode: lost\n      xid:\n        code: 79\n' > "$ov.tmp" && mv "$ov.tmp" "$ov"
	start=$(date +%s%N) seen=
	while [ $(( ($(date +%s%N) - start) / 1000000 )) -lt 1500 ]; do
		smi "$root" lost -q -i 2
		if grep -qi 'GPU is lost\|Unable to determine the device handle' "$TMP/lost.out"; then seen=1; break; fi
		sleep 0.1
	done
	ok_if "$name: GPU 2 lost within 1.5 s of the overrides edit" [ -n "$seen" ] || show lost
	wait "$waiter"
	n_xid=$(grep -c '^xid 79 ' "$TMP/xid.out")
	if [ "$n_xid" = 1 ] && { [ -z "$uuid2" ] || grep -q "^xid 79 $uuid2" "$TMP/xid.out"; }; then
		pass "$name: the event waiter received Xid 79 for GPU 2 exactly once"
	else
		fail "$name: event waiter: want one Xid 79 for GPU 2 ($uuid2), got: $(cat "$TMP/xid.out")"
	fi
	smi "$root" fine -q -i 0
	if [ "$(rc_of fine)" = 0 ] && grep -q "$uuid0" "$TMP/fine.out" && ! grep -qi 'lost' "$TMP/fine.out"; then
		pass "$name: GPU 0 unaffected"
	else
		fail "$name: GPU 0 affected by GPU 2's fault (exit $(rc_of fine))"; show fine
	fi
	: > "$ov"
	sleep 1.2
	smi "$root" back -q -i 2
	ok_if "$name: cleared overrides bring GPU 2 back" reads_fine back || show back
}

# 8 -> 4 GPUs: device nodes, procfs, NVML and lspci agree.
shrink_test() {
	root=$TMP/shrink full=$S/etc/profiles/h100.yaml cut=$TMP/h100-4.yaml
	mkdir -p "$root"
	"$PY" "$TMP/check.py" cut "$full" 4 "$cut" || { fail "shrink: cannot cut the profile"; return; }
	stage "$root" "$full" || { fail "shrink: stage 8"; sed 's/^/#   /' "$TMP/stage.log"; return; }
	[ -x "$PCIBUS" ] && "$PCIBUS" --host-root "$root" --config "$full" --log-level warn stage > "$TMP/pci.log" 2>&1
	stage "$root" "$cut" || { fail "shrink: stage 4"; sed 's/^/#   /' "$TMP/stage.log"; return; }
	gone=yes
	for i in 4 5 6 7; do [ -e "$root$R/driver/dev/nvidia$i" ] && gone=no; done
	for i in 0 1 2 3; do [ -c "$root$R/driver/dev/nvidia$i" ] || gone=no; done
	ok_if "shrink: /dev/nvidia4..7 removed, 0..3 kept" [ $gone = yes ] ||
		echo "#   $(cd "$root$R/driver/dev" && echo nvidia*)"
	ngpus=$(find "$root$R/driver/proc/driver/nvidia/gpus" -mindepth 1 -maxdepth 1 | wc -l)
	ok_if "shrink: 4 procfs gpus/ entries (found $ngpus)" [ "$ngpus" = 4 ]
	smi "$root" shrinkL -L
	check_py "shrink: nvidia-smi -L lists 4" list "$cut" "$TMP/shrinkL.out"
	if [ -x "$PCIBUS" ] && command -v lspci >/dev/null; then
		"$PCIBUS" --host-root "$root" --config "$cut" --log-level warn stage >> "$TMP/pci.log" 2>&1 ||
			{ fail "shrink: pcibus stage"; cat "$TMP/pci.log"; }
		nl=$(lspci -A linux-sysfs -O sysfs.path="$root$R/sys/bus/pci" -O hwdb.disable=1 -n -d 10de::0302 2>/dev/null | wc -l)
		ok_if "shrink: lspci sees 4 GPUs (found $nl)" [ "$nl" = 4 ]
	else
		fail "shrink: mokka-worker-pcibus or lspci missing"
	fi
}

found=0
for prof in "$S"/etc/profiles/*.yaml; do
	[ -f "$prof" ] || continue
	found=$((found + 1))
	run_profile "$(basename "$prof" .yaml)" "$prof"
done
[ "$found" -gt 0 ] || fail "no profiles in $S/etc/profiles"
shrink_test
exit $rc
