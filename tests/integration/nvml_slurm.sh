#!/bin/bash
# Real Slurm 22.05 gpu/nvml over the mock libnvidia-ml that
# mokka-worker-gpudriver stages, for every shipped profile:
# `slurmd -G` with gres.conf AutoDetect=nvml (no slurmctld, no munged;
# CONSUMERS.md section 3) must report every GPU of the profile with its
# type, index, device file and NVLink links (Links= field).
#
# slurmd comes from Debian's slurmd package (installed); the gpu_nvml.so
# plugin from slurm-wlm-nvml-plugin, unpacked by scripts/fetch-consumers.sh
# (apt cannot install it) and put on PluginDir.  slurmd dlopens the
# unversioned libnvidia-ml.so, so the staged driver root must carry it.
#
# Links= is Slurm's count of active NVLinks from this GPU to each other GPU
# (-1 for itself), matched by the remote PCI bus id.  Where the profile
# decides it (no NVLink, or NVLinks to NVSwitches only) the expected string
# comes from the profile; in every case it must equal what the same NVML
# calls answer when asked directly.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nvml_lib.sh"

CONS=${MOKKA_CONSUMERS:-/var/cache/mokka-consumers}
PLUGDIR=$CONS/slurm-wlm-nvml-plugin/usr/lib/x86_64-linux-gnu/slurm-wlm
SYSPLUG=/usr/lib/x86_64-linux-gnu/slurm-wlm

command -v slurmd >/dev/null || die "slurmd missing (Debian package slurmd; install-deps.sh)"
[ -f "$PLUGDIR/gpu_nvml.so" ] || die "gpu_nvml.so not unpacked at $PLUGDIR (run scripts/fetch-consumers.sh)"
[ -d "$SYSPLUG" ] || die "$SYSPLUG missing (slurm-wlm-basic-plugins)"
nvml_require_python
nvml_require_workers
NODE=$(hostname -s)

# slurmd stats each GPU's device file.  The node's /dev/nvidia<minor> live
# under the driver root (a container gets them through CDI), so slurmd runs
# in a private mount namespace whose /dev is a copy of the host's plus the
# staged nodes -- what a container on the node sees.  Without the right to
# make mount namespaces it runs on the host /dev and only the resulting
# "stat(/dev/nvidiaN)" errors are tolerated.
NS=yes
mkdir -p "$T/probe"
unshare -m --propagation private sh -c "mount --bind '$T/probe' '$T/probe'" 2>/dev/null ||
	{ NS=no; note "no private mount namespace here: slurmd sees the host /dev"; }
cat > "$T/devview.sh" <<'EOF'
# devview.sh HOSTROOT DRIVERDEV MINORS COMMAND...: run COMMAND with /dev =
# the host's /dev plus the node's nvidia device nodes (inside unshare -m).
set -e
h=$1 ddev=$2 minors=$3
shift 3
mkdir -p "$h/olddev"
mount --bind /dev "$h/olddev"
mount -t tmpfs -o mode=755 mokka-dev /dev
for e in "$h"/olddev/* "$h"/olddev/.[!.]*; do
	[ -e "$e" ] || [ -L "$e" ] || continue
	case ${e##*/} in
	pts|shm) mkdir -p "/dev/${e##*/}"; mount --bind "$e" "/dev/${e##*/}" ;;
	*) cp -a "$e" /dev/ ;;
	esac
done
for m in $minors ctl; do
	n=nvidia$m
	[ "$m" = ctl ] && n=nvidiactl
	if [ -c "$ddev/$n" ]; then
		rm -f "/dev/$n"; cp -a "$ddev/$n" /dev/
	elif [ "${MOKKA_NVML_HAND_STAGE:-}" = 1 ]; then
		rm -f "/dev/$n"; mknod -m 666 "/dev/$n" c 195 "$([ "$m" = ctl ] && echo 255 || echo "$m")"
	else
		echo "devview: $ddev/$n is not a character device" >&2; exit 99
	fi
done
exec "$@"
EOF

# expect.py PROFILE LIBDIR: one line per GPU of the profile:
#   <minor> <type> <links from the profile or "?"> <links from NVML>
cat > "$T/expect.py" <<'PYEOF'
import ctypes, sys
from nvml_profile import load
prof, dd, ents, n, nvl = load(sys.argv[1])
lpg = int(nvl.get("links_per_gpu", 0) or 0)
explicit = nvl.get("links") or nvl.get("device_links")

# From NVML, exactly as Slurm's _nvml_get_nvlink_info does it.
class Pci(ctypes.Structure):
    _fields_ = [("busIdLegacy", ctypes.c_char * 16), ("domain", ctypes.c_uint), ("bus", ctypes.c_uint),
                ("device", ctypes.c_uint), ("pciDeviceId", ctypes.c_uint), ("pciSubSystemId", ctypes.c_uint),
                ("busId", ctypes.c_char * 32)]
L = ctypes.CDLL(sys.argv[2] + "/libnvidia-ml.so")
assert L.nvmlInit_v2() == 0, "nvmlInit_v2 failed"
cnt = ctypes.c_uint()
assert L.nvmlDeviceGetCount_v2(ctypes.byref(cnt)) == 0
hs, lut = [], []
for i in range(cnt.value):
    h = ctypes.c_void_p()
    assert L.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(h)) == 0
    p = Pci()
    assert L.nvmlDeviceGetPciInfo_v3(h, ctypes.byref(p)) == 0
    hs.append(h); lut.append(p.busId)
nvml_links = []
for i, h in enumerate(hs):
    links = [0] * len(hs); links[i] = -1
    for l in range(18):
        act = ctypes.c_uint(0)
        rc = L.nvmlDeviceGetNvLinkState(h, l, ctypes.byref(act))
        if rc == 2:
            continue
        if rc == 3:
            break
        if act.value == 1:
            p = Pci()
            L.nvmlDeviceGetNvLinkRemotePciInfo_v2(h, l, ctypes.byref(p))
            if p.busId in lut and lut.index(p.busId) != i:
                links[lut.index(p.busId)] += 1
    nvml_links.append(",".join(map(str, links)))
L.nvmlShutdown()

def norm(b):
    dom, bus, rest = str(b).split(":")
    dev, fn = rest.split(".")
    return (int(dom, 16), int(bus, 16), int(dev, 16), int(fn, 16))

buses = [norm((e.get("pci") or {}).get("bus_id") or dd["pci"]["bus_id"]) for e in ents]


def links_of(i):
    """The profile's links of GPU i: device_links[] entry, else links[];
    None when the profile does not name the remote ends."""
    for dl in nvl.get("device_links") or []:
        if dl.get("index") == ents[i].get("index", i) and dl.get("links"):
            return dl["links"]
    return nvl.get("links") or None


for i, e in enumerate(ents):
    name = str(e.get("name") or dd.get("name"))
    typ = name.lower().replace(" ", "_")
    ls = links_of(i) if explicit else None
    if lpg == 0 or (nvl.get("switches") and not explicit):
        prof_links = ",".join("-1" if j == i else "0" for j in range(n))
    elif ls is not None:
        cnt = [0] * n
        cnt[i] = -1
        for l in ls:
            if str(l.get("state", "active")).lower() not in ("active", "up", "enabled", "true"):
                continue
            j = None
            if l.get("remote_pci_bus_id") and norm(l["remote_pci_bus_id"]) in buses:
                j = buses.index(norm(l["remote_pci_bus_id"]))
            elif l.get("remote_index") is not None and int(l["remote_index"]) < n:
                j = int(l["remote_index"])
            if j is not None and j != i:
                cnt[j] += 1
        prof_links = ",".join(map(str, cnt))
    else:
        prof_links = "?"
    print(e.get("minor_number", e.get("index", i)), typ, prof_links,
          nvml_links[i] if i < len(nvml_links) else "?")
PYEOF

# The a100-p2p variant, so Links= has real counts to check.
nvml_write_a100_p2p "$T/a100-p2p.yaml" || fail "could not write the a100-p2p variant"

n=0
for p in "$S"/etc/profiles/*.yaml "$T/a100-p2p.yaml"; do
	[ -f "$p" ] || continue
	n=$((n + 1))
	nvml_stage_profile "$p" || continue
	[ -e "$lib/libnvidia-ml.so" ] || fail "$name: the driver root has no unversioned libnvidia-ml.so (slurmd dlopens that name)"

	if ! env -u MOCK_NVML_CONFIG LD_LIBRARY_PATH="$lib" "$PY" "$T/expect.py" "$p" "$lib" > "$T/expect" 2> "$T/expect.err"; then
		fail "$name: could not ask the mock for the NVLink layout"
		sed 's/^/# /' "$T/expect.err" | tail -5
		continue
	fi
	ngpu=$(wc -l < "$T/expect")
	gtype=$(awk 'NR==1{print $2}' "$T/expect")

	mkdir -p "$h/slurm" "$h/spool"
	cat > "$h/slurm/slurm.conf" <<-EOF
	ClusterName=mokka
	SlurmctldHost=localhost
	GresTypes=gpu
	PluginDir=$SYSPLUG:$PLUGDIR
	SlurmdSpoolDir=$h/spool
	SlurmdPidFile=$h/slurmd.pid
	StateSaveLocation=$h/state
	ProctrackType=proctrack/linuxproc
	TaskPlugin=task/none
	NodeName=$NODE Gres=gpu:$gtype:$ngpu State=UNKNOWN
	PartitionName=p Nodes=ALL Default=YES
	EOF
	echo "AutoDetect=nvml" > "$h/slurm/gres.conf"
	run=(env -u MOCK_NVML_CONFIG SLURM_CONF="$h/slurm/slurm.conf" LD_LIBRARY_PATH="$lib" timeout 120 slurmd -G)
	if [ $NS = yes ]; then
		unshare -m --propagation private sh "$T/devview.sh" "$h" "$h$R/driver/dev" \
			"$(awk '{print $1}' "$T/expect" | tr '\n' ' ')" "${run[@]}" > "$T/slurmd.out" 2>&1
	else
		"${run[@]}" > "$T/slurmd.out" 2>&1
	fi
	rc=$?
	if [ $rc -eq 99 ]; then fail "$name: $(grep devview: "$T/slurmd.out")"; rm -rf "$h"; continue; fi
	[ $rc -eq 0 ] || fail "$name: slurmd -G exited $rc"
	if grep -q "lib wasn't found\|symbol lookup error\|undefined symbol" "$T/slurmd.out"; then
		fail "$name: slurmd could not use the mock:"
		grep "lib wasn't found\|symbol lookup error\|undefined symbol" "$T/slurmd.out" | head -3 | sed 's/^/  /'
	fi
	grep 'Gres Name=gpu' "$T/slurmd.out" > "$T/gres"
	got=$(grep -c . "$T/gres")
	if [ "$got" -eq "$ngpu" ]; then pass "$name: slurmd -G reports $ngpu GPUs"; else
		fail "$name: slurmd -G reports $got GPUs, profile has $ngpu"; fi
	det=$(grep -o '[0-9]* GPU system device(s) detected' "$T/slurmd.out" | awk '{print $1}')
	[ "${det:-x}" = "$ngpu" ] || fail "$name: gpu/nvml detected '${det:-none}' devices, want $ngpu"
	bad=0
	while read -r minor typ plinks nlinks; do
		line=$(grep " File=/dev/nvidia$minor " "$T/gres" | head -1)
		if [ -z "$line" ]; then
			fail "$name: no Gres line with File=/dev/nvidia$minor"; bad=1; continue
		fi
		gtype=$(sed -n 's/.* Type=\([^ ]*\).*/\1/p' <<<"$line")
		glinks=$(sed -n 's/.* Links=\([^ ]*\).*/\1/p' <<<"$line")
		gidx=$(sed -n 's/.* Index=\([^ ]*\).*/\1/p' <<<"$line")
		case $gtype in
		"$typ"|"${typ#nvidia_}") ;;
		*) fail "$name: /dev/nvidia$minor: Type=$gtype, want $typ"; bad=1 ;;
		esac
		[ "$gidx" = "$minor" ] || { fail "$name: /dev/nvidia$minor: Index=$gidx"; bad=1; }
		if [ "$plinks" != "?" ] && [ "$glinks" != "$plinks" ]; then
			fail "$name: /dev/nvidia$minor: Links=$glinks, the profile says $plinks"; bad=1
		fi
		if [ "$glinks" != "$nlinks" ]; then
			fail "$name: /dev/nvidia$minor: Links=$glinks, NVML answers $nlinks"; bad=1
		fi
	done < "$T/expect"
	[ $bad -eq 0 ] && pass "$name: every GPU has its type, index, device file and Links=$(awk 'NR==1{print $4}' "$T/expect")..."
	grep 'error:' "$T/slurmd.out" > "$T/errors"
	[ $NS = no ] && sed -i '/_set_gres_device_desc: stat(\/dev\/nvidia[0-9]*): No such file/d' "$T/errors"
	if grep -q 'xcpuinfo_mac_to_abs failed' "$T/errors"; then
		note "$name: slurmd dropped GPUs whose NVML CPU affinity names CPUs this host lacks (online: $(cat /sys/devices/system/cpu/online)); nvmlDeviceGetCpuAffinity must stay within the host's CPUs"
	fi
	if [ -s "$T/errors" ]; then
		fail "$name: slurmd -G logged errors:"
		sed 's/^.*error: *//' "$T/errors" | sort | uniq -c | head -10 | sed 's/^/  /'
	fi
	[ $bad -eq 0 ] || sed 's/^/  # /' "$T/slurmd.out" | head -20
	rm -rf "$h"
done
[ "$n" -gt 0 ] || fail "no profiles in $S/etc/profiles"
finish
