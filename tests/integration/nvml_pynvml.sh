#!/bin/bash
# Real pynvml (Debian contrib python3-pynvml 11.525, unpacked by
# scripts/fetch-consumers.sh, run with Debian's /usr/bin/python3) over the
# mock libnvidia-ml.so.1 that mokka-worker-gpudriver stages, for every
# shipped profile: enumerate every GPU and call every getter issue 3 lists
# (identity, PCI, memory, BAR1, PCIe, power, thermal, fans, clocks,
# throttle reasons and counters, utilization, encoder/FBC, ECC/SRAM ECC/
# retired pages/remapped rows, modes, accounting, topology and affinity,
# NVLink state/remote PCI/counters, fabric info V and non-V, field values,
# events, GPM, processes).  Each value must equal the profile's, or be
# NVML_ERROR_NOT_SUPPORTED where the profile has no value.  One more run
# over an a100 variant with non-zero values everywhere (processes, retired
# pages, ECC and SRAM counters, remapped rows, fans, utilization, encoder/
# FBC, throttle) proves the getters read the profile rather than zeros, and
# fabric state "auto" is checked both before and after the fabric manager
# readiness marker exists.
#
# The mock is put first with LD_LIBRARY_PATH=<driver root>/usr/lib64 and
# the test checks it answered (driver version string from the profile):
# the real libnvidia-ml1 is usually installed too (pulled in by pynvml and
# hwloc's plugins).  Missing consumer or worker = FAIL, never skip.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nvml_lib.sh"

CONS=${MOKKA_CONSUMERS:-/var/cache/mokka-consumers}
# MOKKA_PYNVML_DIR: another pynvml.py to check (nvidia_ml_py.sh: PyPI's nvidia-ml-py).
PYDIR=${MOKKA_PYNVML_DIR:-$CONS/python3-pynvml/usr/lib/python3/dist-packages}

nvml_require_python
[ -f "$PYDIR/pynvml.py" ] || die "pynvml not unpacked at $PYDIR (run scripts/fetch-consumers.sh)"
nvml_require_workers

cat > "$T/check.py" <<'PYEOF'
import copy, ctypes, os, sys, time
import yaml

pydir, profile_path, mode = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, pydir)
import pynvml as N
from ctypes import byref, c_uint, c_ulonglong, c_int, c_char, c_ubyte, sizeof

assert N.__file__.startswith(pydir), N.__file__
tag = os.environ.get("TAG", os.path.basename(profile_path))

NS = 3                      # NVML_ERROR_NOT_SUPPORTED
FNF = 13                    # NVML_ERROR_FUNCTION_NOT_FOUND
nchecks = 0
fails = []                  # (where, call, why)
bad_calls = {}              # call -> {rc: count}
lenient = {}                # call -> count of NOT_SUPPORTED accepted

# Names outside the four consumer symbol lists and the reference inventory:
# absent symbols are tolerated for these only.
OPTIONAL_SYMS = {"nvmlDeviceGetNumaNodeId"}


class Skip(Exception):
    pass


def fail(where, call, why, rc=None):
    fails.append((where, call, why))
    if rc is not None:
        bad_calls.setdefault(call, {}).setdefault(rc, 0)
        bad_calls[call][rc] += 1


def s(v):
    if isinstance(v, ctypes._SimpleCData):
        v = v.value
    return v.decode() if isinstance(v, bytes) else v


def run(where, call, fn, want, optional=False):
    """want: ("eq", v) | ("ns",) | ("eq_or_ns", v) | ("pred", f, desc) |
    ("pred_or_ns", f, desc) | ("err", code) | ("any",)"""
    global nchecks
    nchecks += 1
    try:
        got = fn()
        rc = 0
    except N.NVMLError as e:
        got, rc = None, e.value
    except Skip:
        return None
    except Exception as e:  # a pynvml-side error (bad struct, bad value): the call's fault or ours
        fail(where, call, "raised %s: %s" % (type(e).__name__, e))
        return None
    kind = want[0]
    if rc == FNF and (optional or call in OPTIONAL_SYMS):
        return None
    if rc == NS and kind in ("eq_or_ns", "pred_or_ns", "any"):
        lenient[call] = lenient.get(call, 0) + 1
    if rc != 0:
        ok = (rc == NS and kind in ("ns", "eq_or_ns", "pred_or_ns", "any")) or \
             (kind == "err" and rc in want[1:])
        if not ok:
            exp = {"ns": "NOT_SUPPORTED", "err": "rc %s" % (want[1:],)}.get(kind, "SUCCESS")
            fail(where, call, "returned %d (%s), want %s" % (rc, N.nvmlErrorString(rc) if rc != FNF else "Function Not Found", exp), rc)
        return None
    if kind == "ns":
        fail(where, call, "returned SUCCESS (%r), want NOT_SUPPORTED" % (got,), 0)
    elif kind == "err":
        fail(where, call, "returned SUCCESS (%r), want rc %s" % (got, want[1:]), 0)
    elif kind in ("eq", "eq_or_ns"):
        if s(got) != want[1]:
            fail(where, call, "got %r, want %r" % (s(got), want[1]), 0)
    elif kind in ("pred", "pred_or_ns"):
        try:
            good = want[1](got)
        except Exception as e:  # noqa
            good = False
        if not good:
            fail(where, call, "got %r, want %s" % (s(got), want[2]), 0)
    return got


def EQ(v): return ("eq", v)
def EQNS(v): return ("eq_or_ns", v)
def PRED(f, d): return ("pred", f, d)
def PREDNS(f, d): return ("pred_or_ns", f, d)
NOTSUP = ("ns",)
ANY = ("any",)
OK = ("pred", lambda v: True, "SUCCESS")


def raw(name, *args):
    """Call an NVML entry point not wrapped by this pynvml; raise NVMLError."""
    fn = N._nvmlGetFunctionPointer(name)     # raises FunctionNotFound
    rc = fn(*args)
    if rc != 0:
        raise N.NVMLError(rc)


# ---------------------------------------------------------------- profile
with open(profile_path) as f:
    prof = yaml.safe_load(f)


def merge(a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        out = dict(a)
        for k, v in b.items():
            out[k] = merge(a[k], v) if k in a else copy.deepcopy(v)
        return out
    return copy.deepcopy(b)


def get(d, path, default=None):
    for k in path.split("."):
        if not isinstance(d, dict) or k not in d or d[k] is None:
            return default
        d = d[k]
    return d


system = prof.get("system") or {}
dd = prof.get("device_defaults") or {}
entries = sorted(prof.get("devices") or [], key=lambda e: e.get("index", 0))
ndev = len(entries)
if system.get("num_devices"):
    ndev = min(ndev, int(system["num_devices"]))
# devices[] entries as the profile schema merges them at boot (NVML.md
# section 4): non-empty scalars copied, pci and platform merged field by
# field, these blocks replaced wholesale, every other key ignored.
SCALARS = ("name", "serial", "brand", "board_part_number", "vbios_version", "architecture")
BLOCKS = ("memory", "bar1_memory", "power", "thermal", "clocks", "clocks_throttle_reasons", "utilization",
          "ecc", "dynamic_metrics", "failure", "fabric", "nvlink_error", "processes")
devs = []
for e in entries[:ndev]:
    d = copy.deepcopy(dd)
    for k, v in e.items():
        if k in SCALARS and v not in (None, ""):
            d[k] = v
        elif k in ("pci", "platform") and isinstance(v, dict):
            d[k] = merge(d.get(k) or {}, {kk: vv for kk, vv in v.items() if vv not in (None, "", 0)})
        elif k in BLOCKS:
            d[k] = copy.deepcopy(v)
    d["_index"] = e.get("index", len(devs))
    d["_uuid"] = e.get("uuid")
    d["_minor"] = e.get("minor_number", d["_index"])
    devs.append(d)
nvl = prof.get("nvlink") or {}
topo = prof.get("pcie_topology") or {}


def onoff(v):
    if isinstance(v, bool):
        return int(v)
    return {"enabled": 1, "disabled": 0, "on": 1, "off": 0, "true": 1, "false": 0}[str(v).lower()]


def na(v):
    return v is None or str(v).upper() == "N/A"


def bdf_parts(b):
    dom, bus, rest = b.split(":")
    dev, fn = rest.split(".")
    return int(dom, 16), int(bus, 16), int(dev, 16), int(fn, 16)


def nvml_busid(b):
    dom, bus, dev, fn = bdf_parts(b)
    return "%08X:%02X:%02X.%X" % (dom, bus, dev, fn)


def legacy_busid(b):
    dom, bus, dev, fn = bdf_parts(b)
    return "%04X:%02X:%02X.%X" % (dom, bus, dev, fn)


def cpulist_words(lst, nwords):
    w = [0] * nwords
    for part in str(lst).split(","):
        part = part.strip()
        if not part:
            continue
        a, _, b = part.partition("-")
        for c in range(int(a), int(b or a) + 1):
            if c < 64 * nwords:
                w[c // 64] |= 1 << (c % 64)
    return w


with open("/sys/devices/system/cpu/online") as f:
    ONLINE = cpulist_words(f.read().strip(), 8)


def rc_of(bus):
    for rc in topo.get("root_complexes") or []:
        if any(str(x).lower() == bus.lower() for x in rc.get("devices") or []):
            return rc
    return None


BRAND = {"unknown": 0, "quadro": 1, "tesla": 2, "nvs": 3, "grid": 4, "geforce": 5, "titan": 6,
         "nvidia_vapps": 7, "nvidia_vpc": 8, "nvidia_vcs": 9, "nvidia_vws": 10,
         "nvidia_cloud_gaming": 11, "quadro_rtx": 12, "nvidia_rtx": 13, "nvidia": 14,
         "geforce_rtx": 15, "titan_rtx": 16}
ARCH = {"kepler": 2, "maxwell": 3, "pascal": 4, "volta": 5, "turing": 6, "ampere": 7,
        "ada": 8, "ada_lovelace": 8, "hopper": 9, "blackwell": 10}
CMODE = {"default": 0, "exclusive_thread": 1, "prohibited": 2, "exclusive_process": 3}
OPMODE = {"all_on": 0, "compute": 1, "low_dp": 2}
VIRT = {"none": 0, "passthrough": 1, "vgpu": 2, "host_vgpu": 3, "host_vsga": 4}
THROTTLE = [("gpu_idle", 0x1), ("applications_clocks_setting", 0x2), ("sw_power_cap", 0x4),
            ("hw_slowdown", 0x8), ("sync_boost", 0x10), ("sw_thermal_slowdown", 0x20),
            ("hw_thermal_slowdown", 0x40), ("hw_power_brake_slowdown", 0x80),
            ("display_clocks_setting", 0x100)]
GEN_MBPS = {1: 2500, 2: 5000, 3: 8000, 4: 16000, 5: 32000, 6: 64000}
MiB = 1 << 20


def pstate(v):
    return int(str(v).upper().lstrip("P"))


# ---------------------------------------------------------------- structs
class FabricV1(ctypes.Structure):          # nvmlGpuFabricInfo_t
    _fields_ = [("clusterUuid", c_ubyte * 16), ("status", c_uint),
                ("cliqueId", c_uint), ("state", c_ubyte)]


class FabricV2(ctypes.Structure):          # nvmlGpuFabricInfo_v2_t
    _fields_ = [("version", c_uint), ("clusterUuid", c_ubyte * 16), ("status", c_uint),
                ("cliqueId", c_uint), ("state", c_ubyte), ("healthMask", c_uint)]


class FabricV3(ctypes.Structure):          # nvmlGpuFabricInfo_v3_t
    _fields_ = [("version", c_uint), ("clusterUuid", c_ubyte * 16), ("status", c_uint),
                ("cliqueId", c_uint), ("state", c_ubyte), ("healthMask", c_uint),
                ("healthSummary", c_ubyte)]


class SramEcc(ctypes.Structure):           # nvmlEccSramErrorStatus_v1_t
    _fields_ = [("version", c_uint)] + [(n, c_ulonglong) for n in (
        "aggregateUncParity", "aggregateUncSecDed", "aggregateCor",
        "volatileUncParity", "volatileUncSecDed", "volatileCor",
        "aggregateUncBucketL2", "aggregateUncBucketSm", "aggregateUncBucketPcie",
        "aggregateUncBucketMcu", "aggregateUncBucketOther")] + [("bThresholdExceeded", c_uint)]


def ver(struct, v):
    return sizeof(struct) | (v << 24)


def uuid_bytes(u):
    h = str(u).replace("-", "")
    return list(bytes.fromhex(h)) if len(h) == 32 else None


# ---------------------------------------------------------------- run
N.nvmlInit()
drv = s(N.nvmlSystemGetDriverVersion())
want_drv = str(system.get("driver_version"))
if drv != want_drv:
    print("FAIL: %s: nvmlSystemGetDriverVersion %r != profile %r: the mock did not answer "
          "(LD_LIBRARY_PATH order?)" % (tag, drv, want_drv))
    sys.exit(1)
print("ok: %s: the mock answered (driver %s)" % (tag, drv))

G = tag
run(G, "nvmlSystemGetNVMLVersion", N.nvmlSystemGetNVMLVersion,
    EQ(str(system["nvml_version"])) if system.get("nvml_version") else ANY)
cuda = system.get("cuda_version")
if cuda:
    maj, _, mnr = str(cuda).partition(".")
    cv = int(maj) * 1000 + int(mnr or 0) * 10
    run(G, "nvmlSystemGetCudaDriverVersion", N.nvmlSystemGetCudaDriverVersion, EQ(cv))
    run(G, "nvmlSystemGetCudaDriverVersion_v2", N.nvmlSystemGetCudaDriverVersion_v2, EQ(cv))
count = run(G, "nvmlDeviceGetCount_v2", N.nvmlDeviceGetCount, EQ(len(devs)))
if count != len(devs):
    print("FAIL: %s: %r GPUs enumerated, profile has %d; stopping" % (tag, count, len(devs)))
    sys.exit(1)

handles = [N.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
buses = [nvml_busid(get(d, "pci.bus_id")) for d in devs]
switches = [nvml_busid(sw["bdf"]) for sw in nvl.get("switches") or [] if sw.get("bdf")]
fabric_auto = int(os.environ.get("FABRIC_AUTO", "3"))   # what "auto" resolves to here


def idx_of(h):
    return N.nvmlDeviceGetIndex(h)


def check_fabric(W, h, d):
    fab = d.get("fabric")
    if not fab:
        for name, st in (("nvmlDeviceGetGpuFabricInfo", FabricV1), ):
            run(W, name, lambda: raw(name, h, byref(st())), NOTSUP)
        for st, v in ((FabricV2, 2), (FabricV3, 3)):
            o = st(); o.version = ver(st, v)
            run(W, "nvmlDeviceGetGpuFabricInfoV(v%d)" % v,
                lambda: raw("nvmlDeviceGetGpuFabricInfoV", h, byref(o)), NOTSUP)
        return
    state = str(fab.get("state", "auto")).lower()
    want_state = {"auto": fabric_auto, "not_supported": 0, "not_started": 1,
                  "in_progress": 2, "completed": 3}.get(state)
    cu = uuid_bytes(fab.get("cluster_uuid", ""))
    clique = int(fab.get("clique_id", 0))
    hs = str(fab.get("health_summary", "auto")).lower()
    want_sum = {"auto": 1, "healthy": 1, "unhealthy": 2, "limited_capacity": 3, "not_supported": 0}.get(hs)
    want_mask = fab.get("health_mask")
    if want_mask is None and not fab.get("health") and hs in ("auto", "healthy"):
        want_mask = 0x1aa

    def chk(o, label, v):
        r = run(W, label, lambda: (raw("nvmlDeviceGetGpuFabricInfo" + ("V" if v > 1 else ""), h, byref(o)), o)[1], OK)
        if r is None:
            return
        # status is the probe's result, meaningful once the state is COMPLETED
        got = (list(o.clusterUuid) if cu else None, o.status if o.state == 3 else 0, o.cliqueId, o.state)
        exp = (cu, 0, clique, want_state)
        if got != exp:
            fail(W, label, "(clusterUuid, status, cliqueId, state) = %r, want %r" % (got, exp), 0)
        if v >= 2 and want_mask is not None and o.healthMask != want_mask:
            fail(W, label, "healthMask 0x%x, want 0x%x" % (o.healthMask, want_mask), 0)
        if v >= 3 and want_sum is not None and o.healthSummary != want_sum:
            fail(W, label, "healthSummary %d, want %d" % (o.healthSummary, want_sum), 0)

    chk(FabricV1(), "nvmlDeviceGetGpuFabricInfo", 1)
    for st, v in ((FabricV2, 2), (FabricV3, 3)):
        o = st(); o.version = ver(st, v)
        chk(o, "nvmlDeviceGetGpuFabricInfoV(v%d)" % v, v)


if mode == "fabric":
    for i, (h, d) in enumerate(zip(handles, devs)):
        check_fabric("%s gpu%d" % (tag, i), h, d)
    N.nvmlShutdown()
    for w, c, why in fails:
        print("FAIL: %s: %s: %s" % (w, c, why))
    print("%s: %d checks, %d failed" % (tag, nchecks, len(fails)))
    sys.exit(1 if fails else 0)

board_ids = []
for i, (h, d) in enumerate(zip(handles, devs)):
    W = "%s gpu%d" % (tag, i)
    bus = get(d, "pci.bus_id")
    arch = str(d.get("architecture", "")).lower()
    archn = ARCH.get(arch, 0)
    # ---- identity
    run(W, "nvmlDeviceGetIndex", lambda: N.nvmlDeviceGetIndex(h), EQ(i))
    run(W, "nvmlDeviceGetName", lambda: N.nvmlDeviceGetName(h), EQ(d["name"]))
    run(W, "nvmlDeviceGetUUID", lambda: N.nvmlDeviceGetUUID(h), EQ(d["_uuid"]))
    run(W, "nvmlDeviceGetSerial", lambda: N.nvmlDeviceGetSerial(h), EQ(str(d["serial"])) if d.get("serial") else NOTSUP)
    run(W, "nvmlDeviceGetBrand", lambda: N.nvmlDeviceGetBrand(h), EQ(BRAND[str(d.get("brand", "unknown")).lower()]))
    run(W, "nvmlDeviceGetBoardPartNumber", lambda: N.nvmlDeviceGetBoardPartNumber(h),
        EQ(str(d["board_part_number"])) if d.get("board_part_number") else NOTSUP)
    run(W, "nvmlDeviceGetVbiosVersion", lambda: N.nvmlDeviceGetVbiosVersion(h), EQ(str(d["vbios_version"])))
    run(W, "nvmlDeviceGetMinorNumber", lambda: N.nvmlDeviceGetMinorNumber(h), EQ(d["_minor"]))
    run(W, "nvmlDeviceGetArchitecture", lambda: N.nvmlDeviceGetArchitecture(h), EQ(archn))
    cc = d.get("compute_capability") or {}
    run(W, "nvmlDeviceGetCudaComputeCapability", lambda: tuple(N.nvmlDeviceGetCudaComputeCapability(h)),
        EQ((cc.get("major"), cc.get("minor"))))
    run(W, "nvmlDeviceGetNumGpuCores", lambda: N.nvmlDeviceGetNumGpuCores(h),
        EQ(d["num_gpu_cores"]) if d.get("num_gpu_cores") else NOTSUP)
    run(W, "nvmlDeviceGetMemoryBusWidth", lambda: N.nvmlDeviceGetMemoryBusWidth(h),
        EQ(get(d, "memory.memory_bus_width")) if get(d, "memory.memory_bus_width") else NOTSUP)
    inf = d.get("inforom") or {}
    run(W, "nvmlDeviceGetInforomImageVersion", lambda: N.nvmlDeviceGetInforomImageVersion(h),
        NOTSUP if na(inf.get("image_version")) else EQ(str(inf["image_version"])))
    for obj, key in ((0, "oem_object"), (1, "ecc_object"), (2, "pwr_object")):
        run(W, "nvmlDeviceGetInforomVersion(%s)" % key, lambda: N.nvmlDeviceGetInforomVersion(h, obj),
            NOTSUP if na(inf.get(key)) else EQ(str(inf[key])))
    bid = run(W, "nvmlDeviceGetBoardId", lambda: N.nvmlDeviceGetBoardId(h), PREDNS(lambda v: v != 0, "non-zero"))
    if bid:
        board_ids.append(bid)
    run(W, "nvmlDeviceGetMultiGpuBoard", lambda: N.nvmlDeviceGetMultiGpuBoard(h), PREDNS(lambda v: v in (0, 1), "0 or 1"))
    gsp = d.get("gsp_firmware") or {}

    def gspmode():
        a, b = c_uint(9), c_uint(9)
        N.nvmlDeviceGetGspFirmwareMode(h, byref(a), byref(b))
        return a.value
    run(W, "nvmlDeviceGetGspFirmwareMode", gspmode, EQ(onoff(gsp["mode"])) if gsp.get("mode") else NOTSUP)
    def gspver():
        buf = ctypes.create_string_buffer(80)
        N.nvmlDeviceGetGspFirmwareVersion(h, buf)
        return buf.value.decode()
    run(W, "nvmlDeviceGetGspFirmwareVersion", gspver,
        NOTSUP if na(gsp.get("version")) else EQ(str(gsp["version"])))

    def modid():
        v = c_uint(0xdead)
        raw("nvmlDeviceGetModuleId", h, byref(v))
        return v.value
    mid = get(d, "platform.module_id")
    run(W, "nvmlDeviceGetModuleId", modid, EQ(mid) if mid is not None else PREDNS(lambda v: v != 0xdead, "written"))

    # ---- PCI
    def pci():
        p = N.nvmlDeviceGetPciInfo_v3(h)
        return (s(p.busId), s(p.busIdLegacy), p.domain, p.bus, p.device, p.pciDeviceId, p.pciSubSystemId)
    dom, b_, dv, fn_ = bdf_parts(bus)
    run(W, "nvmlDeviceGetPciInfo_v3", pci, EQ((nvml_busid(bus), legacy_busid(bus), dom, b_, dv,
                                               int(get(d, "pci.device_id")), int(get(d, "pci.subsystem_id", 0)))))
    run(W, "nvmlDeviceGetHandleByPciBusId_v2", lambda: idx_of(N.nvmlDeviceGetHandleByPciBusId(nvml_busid(bus))), EQ(i))
    run(W, "nvmlDeviceGetHandleByPciBusId_v2(short)", lambda: idx_of(N.nvmlDeviceGetHandleByPciBusId(bus.lower())), EQ(i))
    run(W, "nvmlDeviceGetHandleByUUID", lambda: idx_of(N.nvmlDeviceGetHandleByUUID(d["_uuid"])), EQ(i))

    # ---- memory, BAR1
    mem = d.get("memory") or {}

    def mem1():
        m = N.nvmlDeviceGetMemoryInfo(h)
        return (m.total, m.free, m.used)
    run(W, "nvmlDeviceGetMemoryInfo", mem1,
        PRED(lambda v: v[0] == mem["total_bytes"] and v[1] == mem["free_bytes"] and
             v[2] in (mem.get("used_bytes", 0), mem.get("used_bytes", 0) + mem.get("reserved_bytes", 0)),
             "total/free %d/%d, used = used or used+reserved" % (mem["total_bytes"], mem["free_bytes"])))

    def mem2():
        m = N.nvmlDeviceGetMemoryInfo(h, version=N.nvmlMemory_v2)
        return (m.total, m.reserved, m.free, m.used)
    run(W, "nvmlDeviceGetMemoryInfo_v2", mem2, EQ((mem["total_bytes"], mem.get("reserved_bytes", 0),
                                                   mem["free_bytes"], mem.get("used_bytes", 0))))
    bar = d.get("bar1_memory") or {}

    def bar1():
        m = N.nvmlDeviceGetBAR1MemoryInfo(h)
        return (m.bar1Total, m.bar1Free, m.bar1Used)
    run(W, "nvmlDeviceGetBAR1MemoryInfo", bar1,
        EQ((bar["total_bytes"], bar["free_bytes"], bar.get("used_bytes", 0))) if bar else NOTSUP)

    # ---- PCIe
    pcie = d.get("pcie") or {}
    run(W, "nvmlDeviceGetMaxPcieLinkGeneration", lambda: N.nvmlDeviceGetMaxPcieLinkGeneration(h), EQ(pcie["max_link_gen"]))
    # The device's own maximum (pcie.gpu_max_link_gen) may exceed the link's.
    run(W, "nvmlDeviceGetGpuMaxPcieLinkGeneration", lambda: N.nvmlDeviceGetGpuMaxPcieLinkGeneration(h),
        EQ(pcie.get("gpu_max_link_gen", pcie["max_link_gen"])))
    run(W, "nvmlDeviceGetCurrPcieLinkGeneration", lambda: N.nvmlDeviceGetCurrPcieLinkGeneration(h), EQ(pcie["current_link_gen"]))
    run(W, "nvmlDeviceGetMaxPcieLinkWidth", lambda: N.nvmlDeviceGetMaxPcieLinkWidth(h), EQ(pcie["max_link_width"]))
    run(W, "nvmlDeviceGetCurrPcieLinkWidth", lambda: N.nvmlDeviceGetCurrPcieLinkWidth(h), EQ(pcie["current_link_width"]))
    run(W, "nvmlDeviceGetPcieReplayCounter", lambda: N.nvmlDeviceGetPcieReplayCounter(h), EQ(pcie.get("replay_counter", 0)))
    run(W, "nvmlDeviceGetPcieThroughput(TX)", lambda: N.nvmlDeviceGetPcieThroughput(h, 0), EQ(pcie.get("tx_throughput_kbps", 0)))
    run(W, "nvmlDeviceGetPcieThroughput(RX)", lambda: N.nvmlDeviceGetPcieThroughput(h, 1), EQ(pcie.get("rx_throughput_kbps", 0)))
    mg, cg = pcie["max_link_gen"], pcie["current_link_gen"]
    run(W, "nvmlDeviceGetPcieLinkMaxSpeed", lambda: N.nvmlDeviceGetPcieLinkMaxSpeed(h),
        PREDNS(lambda v: v in (mg, GEN_MBPS[mg]), "gen %d as enum %d or %d MBps" % (mg, mg, GEN_MBPS[mg])))
    run(W, "nvmlDeviceGetPcieSpeed", lambda: N.nvmlDeviceGetPcieSpeed(h),
        PREDNS(lambda v: v == GEN_MBPS[cg], "%d (gen %d)" % (GEN_MBPS[cg], cg)))

    # ---- power
    pw = d.get("power") or {}
    if pw.get("management_supported", True) is False:
        for name, f in (("nvmlDeviceGetPowerManagementLimit", N.nvmlDeviceGetPowerManagementLimit),
                        ("nvmlDeviceGetPowerManagementDefaultLimit", N.nvmlDeviceGetPowerManagementDefaultLimit)):
            run(W, name, lambda: f(h), NOTSUP)
    else:
        run(W, "nvmlDeviceGetPowerManagementMode", lambda: N.nvmlDeviceGetPowerManagementMode(h),
            EQ(onoff(pw.get("management_mode", "enabled"))))
        run(W, "nvmlDeviceGetPowerManagementLimit", lambda: N.nvmlDeviceGetPowerManagementLimit(h), EQ(pw["enforced_limit_mw"]))
        run(W, "nvmlDeviceGetPowerManagementDefaultLimit", lambda: N.nvmlDeviceGetPowerManagementDefaultLimit(h), EQ(pw["default_limit_mw"]))
        run(W, "nvmlDeviceGetPowerManagementLimitConstraints", lambda: tuple(N.nvmlDeviceGetPowerManagementLimitConstraints(h)),
            EQ((pw["min_limit_mw"], pw["max_limit_mw"])))
    run(W, "nvmlDeviceGetEnforcedPowerLimit", lambda: N.nvmlDeviceGetEnforcedPowerLimit(h), EQ(pw["enforced_limit_mw"]))
    run(W, "nvmlDeviceGetPowerUsage", lambda: N.nvmlDeviceGetPowerUsage(h), EQ(pw["current_draw_mw"]))
    run(W, "nvmlDeviceGetPowerState", lambda: N.nvmlDeviceGetPowerState(h), EQ(pstate(pw.get("power_state", d.get("performance_state", "P0")))))
    run(W, "nvmlDeviceGetPerformanceState", lambda: N.nvmlDeviceGetPerformanceState(h), EQ(pstate(d.get("performance_state", "P0"))))
    te = pw.get("total_energy_consumption_mj")
    run(W, "nvmlDeviceGetTotalEnergyConsumption", lambda: N.nvmlDeviceGetTotalEnergyConsumption(h),
        PRED(lambda v: v >= te, ">= %d" % te) if te is not None else NOTSUP)
    run(W, "nvmlDeviceGetPowerSource", lambda: N.nvmlDeviceGetPowerSource(h), PREDNS(lambda v: v in (0, 1, 2), "AC/battery/undersized"))

    # ---- thermal
    th = d.get("thermal") or {}
    run(W, "nvmlDeviceGetTemperature(GPU)", lambda: N.nvmlDeviceGetTemperature(h, 0), EQ(th["temperature_gpu_c"]))
    # Ada and later report T.Limit margins (NVML.md section 4): there an
    # absolute threshold may be NOT_SUPPORTED, but never another value.
    for t, key in ((0, "shutdown_threshold_c"), (1, "slowdown_threshold_c"), (3, "max_operating_c")):
        run(W, "nvmlDeviceGetTemperatureThreshold(%s)" % key, lambda: N.nvmlDeviceGetTemperatureThreshold(h, t),
            NOTSUP if not th.get(key) else EQNS(th[key]) if archn >= ARCH["ada"] else EQ(th[key]))
    if th.get("target_temperature_c"):
        run(W, "nvmlDeviceGetTemperatureThreshold(ACOUSTIC_CURR)", lambda: N.nvmlDeviceGetTemperatureThreshold(h, 5),
            EQNS(th["target_temperature_c"]))

    def thermal_settings():
        # nvmlGpuThermalSettings_t: count + 3 x {controller, defaultMin, defaultMax, currentTemp, target}
        buf = (c_uint * (1 + 3 * 5))()
        N.nvmlDeviceGetThermalSettings(h, 0, byref(buf))
        return buf[0]
    run(W, "nvmlDeviceGetThermalSettings", thermal_settings, PREDNS(lambda v: v <= 3, "count <= 3"))

    # ---- fans
    fan = d.get("fan") or {}
    nf = int(fan.get("count", 0) or 0)
    if nf == 0:
        run(W, "nvmlDeviceGetNumFans", lambda: N.nvmlDeviceGetNumFans(h), EQNS(0))
        run(W, "nvmlDeviceGetFanSpeed", lambda: N.nvmlDeviceGetFanSpeed(h), NOTSUP)
        run(W, "nvmlDeviceGetFanSpeed_v2(0)", lambda: N.nvmlDeviceGetFanSpeed_v2(h, 0), ("err", 3, 2))
        run(W, "nvmlDeviceGetTargetFanSpeed(0)", lambda: N.nvmlDeviceGetTargetFanSpeed(h, 0), ("err", 3, 2))
    else:
        sp = None if na(fan.get("speed_percent")) else int(fan["speed_percent"])
        tg = None if na(fan.get("target_speed_percent")) else int(fan["target_speed_percent"])
        run(W, "nvmlDeviceGetNumFans", lambda: N.nvmlDeviceGetNumFans(h), EQ(nf))
        run(W, "nvmlDeviceGetFanSpeed", lambda: N.nvmlDeviceGetFanSpeed(h), EQ(sp) if sp is not None else NOTSUP)
        for fi in range(nf):
            run(W, "nvmlDeviceGetFanSpeed_v2(%d)" % fi, lambda: N.nvmlDeviceGetFanSpeed_v2(h, fi), EQ(sp) if sp is not None else NOTSUP)
            run(W, "nvmlDeviceGetTargetFanSpeed(%d)" % fi, lambda: N.nvmlDeviceGetTargetFanSpeed(h, fi), EQ(tg) if tg is not None else NOTSUP)

    # ---- clocks
    ck = d.get("clocks") or {}
    for ct, key in ((0, "graphics"), (1, "sm"), (2, "memory"), (3, "video")):
        run(W, "nvmlDeviceGetClockInfo(%s)" % key, lambda: N.nvmlDeviceGetClockInfo(h, ct),
            EQ(ck[key + "_current"]) if ck.get(key + "_current") else NOTSUP)
        run(W, "nvmlDeviceGetMaxClockInfo(%s)" % key, lambda: N.nvmlDeviceGetMaxClockInfo(h, ct),
            EQ(ck[key + "_max"]) if ck.get(key + "_max") else NOTSUP)
        run(W, "nvmlDeviceGetClock(%s,CURRENT)" % key, lambda: N.nvmlDeviceGetClock(h, ct, 0),
            EQNS(ck[key + "_current"]) if ck.get(key + "_current") else NOTSUP)
    for ct, key in ((0, "graphics"), (2, "memory")):
        run(W, "nvmlDeviceGetApplicationsClock(%s)" % key, lambda: N.nvmlDeviceGetApplicationsClock(h, ct),
            EQ(ck[key + "_app"]) if ck.get(key + "_app") else NOTSUP)
        run(W, "nvmlDeviceGetDefaultApplicationsClock(%s)" % key, lambda: N.nvmlDeviceGetDefaultApplicationsClock(h, ct),
            EQ(ck[key + "_app_default"]) if ck.get(key + "_app_default") else NOTSUP)
        run(W, "nvmlDeviceGetMaxCustomerBoostClock(%s)" % key, lambda: N.nvmlDeviceGetMaxCustomerBoostClock(h, ct),
            EQNS(ck[key + "_max"]) if ck.get(key + "_max") else NOTSUP)
    mcs = get(d, "supported_clocks.memory_clocks") or []
    run(W, "nvmlDeviceGetSupportedMemoryClocks", lambda: list(N.nvmlDeviceGetSupportedMemoryClocks(h)),
        EQ([m["freq_mhz"] for m in mcs]) if mcs else NOTSUP)
    for m in mcs:
        run(W, "nvmlDeviceGetSupportedGraphicsClocks(%d)" % m["freq_mhz"],
            lambda: list(N.nvmlDeviceGetSupportedGraphicsClocks(h, m["freq_mhz"])), EQ(list(m.get("graphics_clocks") or [])))
    run(W, "nvmlDeviceGetAutoBoostedClocksEnabled", lambda: N.nvmlDeviceGetAutoBoostedClocksEnabled(h),
        PREDNS(lambda v: v[0] in (0, 1), "0/1"))

    # ---- throttle reasons and counters
    tr = d.get("clocks_throttle_reasons") or {}
    mask = sum(bit for key, bit in THROTTLE if tr.get(key))
    run(W, "nvmlDeviceGetCurrentClocksThrottleReasons", lambda: N.nvmlDeviceGetCurrentClocksThrottleReasons(h), EQ(mask))
    run(W, "nvmlDeviceGetSupportedClocksThrottleReasons", lambda: N.nvmlDeviceGetSupportedClocksThrottleReasons(h),
        PRED(lambda v: v & mask == mask and v != 0, "a non-zero superset of 0x%x" % mask))
    ctr = tr.get("counters") or {}
    for pol, flag, ckey in ((0, "sw_power_cap", "sw_power_cap_us"), (1, "sw_thermal_slowdown", "sw_thermal_slowdown_us"),
                            (2, "sync_boost", "sync_boost_us")):
        base = int(ctr.get(ckey, 0) or 0)
        if not tr.get(flag) and base == 0:
            want = PRED(lambda v: v.violationTime == 0, "violationTime 0 (flag off, no counter)")
        else:
            want = PRED(lambda v, base=base: v.violationTime >= base, "violationTime >= %d" % base)
        run(W, "nvmlDeviceGetViolationStatus(%d)" % pol, lambda: N.nvmlDeviceGetViolationStatus(h, pol), want)

    # ---- utilization
    ut = d.get("utilization") or {}

    def util():
        u = N.nvmlDeviceGetUtilizationRates(h)
        return (u.gpu, u.memory)
    run(W, "nvmlDeviceGetUtilizationRates", util, EQ((ut.get("gpu", 0), ut.get("memory", 0))))
    run(W, "nvmlDeviceGetEncoderUtilization", lambda: N.nvmlDeviceGetEncoderUtilization(h)[0], EQ(ut.get("encoder", 0)))
    run(W, "nvmlDeviceGetDecoderUtilization", lambda: N.nvmlDeviceGetDecoderUtilization(h)[0], EQ(ut.get("decoder", 0)))
    for name, key in (("nvmlDeviceGetJpgUtilization", "jpeg"), ("nvmlDeviceGetOfaUtilization", "ofa")):
        def mu(name=name):
            a, b = c_uint(0xdead), c_uint(0xdead)
            raw(name, h, byref(a), byref(b))
            return a.value
        run(W, name, mu, EQ(ut.get(key, 0)))

    # ---- encoder / FBC
    es = d.get("encoder_stats") or {}
    run(W, "nvmlDeviceGetEncoderStats", lambda: tuple(N.nvmlDeviceGetEncoderStats(h)),
        EQ((es.get("session_count", 0), es.get("average_fps", 0), es.get("average_latency_us", 0))))
    run(W, "nvmlDeviceGetEncoderSessions", lambda: len(N.nvmlDeviceGetEncoderSessions(h)),
        PREDNS(lambda v: v in (0, es.get("session_count", 0)), "0 or %d sessions" % es.get("session_count", 0)))
    run(W, "nvmlDeviceGetEncoderCapacity(H264)", lambda: N.nvmlDeviceGetEncoderCapacity(h, 0), PREDNS(lambda v: v <= 100, "<= 100"))
    fs = d.get("fbc_stats") or {}

    def fbc():
        f = N.nvmlDeviceGetFBCStats(h)
        return (f.sessionsCount, f.averageFPS, f.averageLatency)
    run(W, "nvmlDeviceGetFBCStats", fbc, EQ((fs.get("session_count", 0), fs.get("average_fps", 0), fs.get("average_latency_us", 0))))
    run(W, "nvmlDeviceGetFBCSessions", lambda: len(N.nvmlDeviceGetFBCSessions(h)),
        PREDNS(lambda v: v in (0, fs.get("session_count", 0)), "0 or %d sessions" % fs.get("session_count", 0)))

    # ---- ECC, SRAM ECC, retired pages, remapped rows
    ecc = d.get("ecc") or {}
    ecc_on = onoff(ecc.get("mode_current", "disabled"))
    run(W, "nvmlDeviceGetEccMode", lambda: tuple(N.nvmlDeviceGetEccMode(h)),
        EQ((ecc_on, onoff(ecc.get("mode_pending", ecc.get("mode_current"))))) if ecc.get("mode_current") else NOTSUP)
    run(W, "nvmlDeviceGetDefaultEccMode", lambda: N.nvmlDeviceGetDefaultEccMode(h)[0],
        EQ(onoff(ecc["default_mode"])) if ecc.get("default_mode") else NOTSUP)
    errs = ecc.get("errors") or {}
    for et, bits in ((0, "single_bit"), (1, "double_bit")):
        for ctn, scope in ((0, "volatile"), (1, "aggregate")):
            blk = get(errs, "%s.%s" % (scope, bits)) or {}
            if ecc_on:
                run(W, "nvmlDeviceGetTotalEccErrors(%s,%s)" % (bits, scope), lambda: N.nvmlDeviceGetTotalEccErrors(h, et, ctn),
                    EQ(blk.get("total", 0)))
                run(W, "nvmlDeviceGetMemoryErrorCounter(%s,%s,device_memory)" % (bits, scope),
                    lambda: N.nvmlDeviceGetMemoryErrorCounter(h, et, ctn, 2), EQ(blk.get("device_memory", 0)))
                for loc, key in ((0, "l1_cache"), (1, "l2_cache"), (3, "register_file"), (4, "texture_memory")):
                    run(W, "nvmlDeviceGetMemoryErrorCounter(%s,%s,%s)" % (bits, scope, key),
                        lambda: N.nvmlDeviceGetMemoryErrorCounter(h, et, ctn, loc),
                        EQ(blk[key]) if blk.get(key) else EQNS(0))
            else:
                run(W, "nvmlDeviceGetTotalEccErrors(%s,%s)" % (bits, scope), lambda: N.nvmlDeviceGetTotalEccErrors(h, et, ctn), NOTSUP)
    sram = ecc.get("sram") or {}

    def sram_status():
        o = SramEcc(); o.version = ver(SramEcc, 1)
        raw("nvmlDeviceGetSramEccErrorStatus", h, byref(o))
        return (o.volatileCor, o.volatileUncParity, o.volatileUncSecDed, o.aggregateCor, o.aggregateUncParity,
                o.aggregateUncSecDed, o.aggregateUncBucketL2, o.aggregateUncBucketSm, o.aggregateUncBucketMcu,
                o.aggregateUncBucketPcie, o.aggregateUncBucketOther, o.bThresholdExceeded)
    want_sram = tuple([get(sram, "%s.%s" % (sc, k), 0) for sc in ("volatile", "aggregate")
                       for k in ("correctable", "uncorrectable_parity", "uncorrectable_secded")] +
                      [get(sram, "uncorrectable_sources.%s" % k, 0) for k in ("l2", "sm", "microcontroller", "pcie", "other")] +
                      [int(bool(sram.get("threshold_exceeded", False)))])
    if archn >= ARCH["ampere"] and ecc_on:
        run(W, "nvmlDeviceGetSramEccErrorStatus", sram_status, EQ(want_sram))
    else:
        run(W, "nvmlDeviceGetSramEccErrorStatus", sram_status, NOTSUP if not sram else EQNS(want_sram))
    rp = d.get("retired_pages")
    if rp is None:
        run(W, "nvmlDeviceGetRetiredPages", lambda: N.nvmlDeviceGetRetiredPages(h, 0), NOTSUP)
    else:
        for cause, key in ((0, "single_bit_retirement"), (1, "double_bit_retirement")):
            addrs = [int(a) for a in get(rp, key + ".addresses") or []]
            run(W, "nvmlDeviceGetRetiredPages(%s)" % key, lambda: N.nvmlDeviceGetRetiredPages(h, cause), EQ(addrs))
            run(W, "nvmlDeviceGetRetiredPages_v2(%s)" % key,
                lambda: [p["address"] for p in N.nvmlDeviceGetRetiredPages_v2(h, cause)], EQ(addrs))
        run(W, "nvmlDeviceGetRetiredPagesPendingStatus", lambda: N.nvmlDeviceGetRetiredPagesPendingStatus(h),
            EQ(int(bool(rp.get("pending_retirement")))))
    rr = d.get("remapped_rows")
    if rr is None:
        run(W, "nvmlDeviceGetRemappedRows", lambda: N.nvmlDeviceGetRemappedRows(h), NOTSUP)
        run(W, "nvmlDeviceGetRowRemapperHistogram", lambda: N.nvmlDeviceGetRowRemapperHistogram(h), NOTSUP)
    else:
        run(W, "nvmlDeviceGetRemappedRows", lambda: tuple(N.nvmlDeviceGetRemappedRows(h)),
            EQ((rr.get("correctable", 0), rr.get("uncorrectable", 0), int(bool(rr.get("pending"))),
                int(bool(rr.get("failure_occurred"))))))
        hist = rr.get("availability_histogram")

        def histo():
            v = N.nvmlDeviceGetRowRemapperHistogram(h)
            return (v.max, v.high, v.partial, v.low, v.none)
        run(W, "nvmlDeviceGetRowRemapperHistogram", histo,
            EQ(tuple(hist.get(k, 0) for k in ("max", "high", "partial", "low", "none"))) if hist else ANY)

    # ---- modes
    disp = d.get("display") or {}
    run(W, "nvmlDeviceGetDisplayMode", lambda: N.nvmlDeviceGetDisplayMode(h), EQ(onoff(disp.get("mode", "disabled"))))
    run(W, "nvmlDeviceGetDisplayActive", lambda: N.nvmlDeviceGetDisplayActive(h), EQ(onoff(disp.get("active", "disabled"))))
    run(W, "nvmlDeviceGetPersistenceMode", lambda: N.nvmlDeviceGetPersistenceMode(h), EQ(onoff(d.get("persistence_mode", "disabled"))))
    run(W, "nvmlDeviceGetComputeMode", lambda: N.nvmlDeviceGetComputeMode(h), EQ(CMODE[str(d.get("compute_mode", "default")).lower()]))
    mig = d.get("mig") or {}
    mig_max = int(mig.get("max_gpu_instances", 0) or 0)
    if mig_max:
        run(W, "nvmlDeviceGetMigMode", lambda: tuple(N.nvmlDeviceGetMigMode(h)),
            EQ((onoff(mig.get("mode_current", "disabled")), onoff(mig.get("mode_pending", mig.get("mode_current", "disabled"))))))
        mig_on = onoff(mig.get("mode_current", "disabled"))
        run(W, "nvmlDeviceGetMaxMigDeviceCount", lambda: N.nvmlDeviceGetMaxMigDeviceCount(h),
            EQ(mig_max) if mig_on else EQ(0))
    else:
        run(W, "nvmlDeviceGetMigMode", lambda: tuple(N.nvmlDeviceGetMigMode(h)), EQNS((0, 0)))
        run(W, "nvmlDeviceGetMaxMigDeviceCount", lambda: N.nvmlDeviceGetMaxMigDeviceCount(h), EQNS(0))
    run(W, "nvmlDeviceIsMigDeviceHandle", lambda: N.nvmlDeviceIsMigDeviceHandle(h), EQ(0))
    run(W, "nvmlDeviceGetMigDeviceHandleByIndex(0)", lambda: N.nvmlDeviceGetMigDeviceHandleByIndex(h, 0), ("err", 6, 3, 2))
    gom = d.get("gpu_operation_mode") or {}
    run(W, "nvmlDeviceGetGpuOperationMode", lambda: tuple(N.nvmlDeviceGetGpuOperationMode(h)),
        NOTSUP if na(gom.get("current")) else EQ((OPMODE[gom["current"]], OPMODE[gom.get("pending", gom["current"])])))
    dm = d.get("driver_model") or {}
    run(W, "nvmlDeviceGetDriverModel", lambda: tuple(N.nvmlDeviceGetDriverModel(h)),
        NOTSUP if na(dm.get("current")) else PRED(lambda v: True, "any"))
    vm = d.get("virtualization") or {}
    run(W, "nvmlDeviceGetVirtualizationMode", lambda: N.nvmlDeviceGetVirtualizationMode(h), EQ(VIRT[str(vm.get("mode", "none")).lower()]))
    run(W, "nvmlDeviceGetHostVgpuMode", lambda: N.nvmlDeviceGetHostVgpuMode(h),
        NOTSUP if na(vm.get("host_vgpu_mode")) else PRED(lambda v: v in (0, 1), "0/1"))

    # ---- accounting
    ac = d.get("accounting") or {}
    acc_on = onoff(ac.get("mode", "disabled"))
    run(W, "nvmlDeviceGetAccountingMode", lambda: N.nvmlDeviceGetAccountingMode(h), EQ(acc_on))
    run(W, "nvmlDeviceGetAccountingBufferSize", lambda: N.nvmlDeviceGetAccountingBufferSize(h),
        EQ(ac["buffer_size"]) if ac.get("buffer_size") else NOTSUP)
    procs = d.get("processes") or []
    ppids = [int(p["pid"]) for p in procs]
    if acc_on:
        apids = run(W, "nvmlDeviceGetAccountingPids", lambda: sorted(N.nvmlDeviceGetAccountingPids(h)),
                    PRED(lambda v: set(v) <= set(ppids), "a subset of the profile's pids %r" % sorted(ppids))) or []
        for p in procs:
            if p["pid"] in apids:
                run(W, "nvmlDeviceGetAccountingStats(%d)" % p["pid"], lambda: N.nvmlDeviceGetAccountingStats(h, p["pid"]),
                    PRED(lambda v: v.maxMemoryUsage in (None, p.get("used_memory_mib", 0) * MiB, 0), "maxMemoryUsage as the process"))
            else:
                run(W, "nvmlDeviceGetAccountingStats(%d)" % p["pid"], lambda: N.nvmlDeviceGetAccountingStats(h, p["pid"]),
                    ("err", 6))
    else:
        run(W, "nvmlDeviceGetAccountingPids", lambda: N.nvmlDeviceGetAccountingPids(h), PREDNS(lambda v: v == [], "[]"))

    # ---- processes
    def plist(fn):
        return sorted((p.pid, p.usedGpuMemory, p.gpuInstanceId, p.computeInstanceId) for p in fn(h))
    for name, fn, typ in (("nvmlDeviceGetComputeRunningProcesses_v3", N.nvmlDeviceGetComputeRunningProcesses_v3, "C"),
                          ("nvmlDeviceGetGraphicsRunningProcesses_v3", N.nvmlDeviceGetGraphicsRunningProcesses_v3, "G")):
        exp = sorted((int(p["pid"]), int(p.get("used_memory_mib", 0)) * MiB, 0xFFFFFFFF, 0xFFFFFFFF)
                     for p in procs if typ in str(p.get("type", "C")).upper())
        run(W, name, lambda: plist(fn), EQ(exp))
    run(W, "nvmlDeviceGetMPSComputeRunningProcesses_v3", lambda: plist(N.nvmlDeviceGetMPSComputeRunningProcesses_v3),
        EQNS([]))
    for p in procs:
        if p.get("name"):
            run(W, "nvmlSystemGetProcessName(%d)" % p["pid"], lambda: N.nvmlSystemGetProcessName(p["pid"]), EQ(p["name"]))

    # ---- topology and affinity
    rc = rc_of(bus)
    if rc and rc.get("cpu_affinity"):
        # The profile's cpulist, or the same clamped to the CPUs this host
        # has (else consumers such as Slurm reject CPUs that do not exist);
        # all of them when none of the profile's exists here.
        words = cpulist_words(rc["cpu_affinity"], 8)
        clamped = [a & b for a, b in zip(words, ONLINE)]
        if not any(clamped):
            clamped = list(ONLINE)
        aff = PRED(lambda v: v in (words, clamped), "the profile's %s (%s) or clamped to this host's CPUs (%s)"
                   % (rc["cpu_affinity"], [hex(x) for x in words if x], [hex(x) for x in clamped if x]))
        run(W, "nvmlDeviceGetCpuAffinity", lambda: list(N.nvmlDeviceGetCpuAffinity(h, 8)), aff)
        run(W, "nvmlDeviceGetCpuAffinityWithinScope(NODE)", lambda: list(N.nvmlDeviceGetCpuAffinityWithinScope(h, 8, 0)), aff)
    else:
        run(W, "nvmlDeviceGetCpuAffinity", lambda: list(N.nvmlDeviceGetCpuAffinity(h, 8)), PREDNS(lambda v: any(v), "non-empty"))
    if rc and rc.get("numa_node") is not None:
        numa = int(rc["numa_node"])
        run(W, "nvmlDeviceGetMemoryAffinity(NODE)", lambda: list(N.nvmlDeviceGetMemoryAffinity(h, 1, 0)), EQ([1 << numa]))

        def numa_id():
            v = c_uint(0xdead)
            raw("nvmlDeviceGetNumaNodeId", h, byref(v))
            return v.value
        run(W, "nvmlDeviceGetNumaNodeId", numa_id, EQ(numa))
    for j, h2 in enumerate(handles):
        if j == i:
            continue
        rc2 = rc_of(get(devs[j], "pci.bus_id"))
        if rc and rc2:
            if rc is rc2:
                lvl = 30                      # same root complex: PHB
            elif rc.get("numa_node") == rc2.get("numa_node"):
                lvl = 40                      # NODE
            else:
                lvl = 50                      # SYS
            run(W, "nvmlDeviceGetTopologyCommonAncestor(gpu%d)" % j,
                lambda: N.nvmlDeviceGetTopologyCommonAncestor(h, h2), EQ(lvl))
        p2p_nv = 0 if int(nvl.get("links_per_gpu", 0) or 0) > 0 else None
        run(W, "nvmlDeviceGetP2PStatus(gpu%d,NVLINK)" % j, lambda: N.nvmlDeviceGetP2PStatus(h, h2, 2),
            EQ(0) if p2p_nv == 0 else PRED(lambda v: v != 0, "not OK (no NVLink)"))
        run(W, "nvmlDeviceGetP2PStatus(gpu%d,READ)" % j, lambda: N.nvmlDeviceGetP2PStatus(h, h2, 0),
            PRED(lambda v: 0 <= v <= 6, "a P2P status"))
    others = sorted(k for k in range(count) if k != i)
    run(W, "nvmlDeviceGetTopologyNearestGpus(SYSTEM)",
        lambda: sorted(idx_of(x) for x in N.nvmlDeviceGetTopologyNearestGpus(h, 50)), EQ(others))

    # ---- NVLink
    lpg = int(nvl.get("links_per_gpu", 0) or 0)
    nvv = nvl.get("version")
    if lpg == 0:
        run(W, "nvmlDeviceGetNvLinkState(0)", lambda: N.nvmlDeviceGetNvLinkState(h, 0), NOTSUP)
        run(W, "nvmlDeviceGetNvLinkRemotePciInfo_v2(0)", lambda: N.nvmlDeviceGetNvLinkRemotePciInfo(h, 0), NOTSUP)
    for link in range(N.NVML_NVLINK_MAX_LINKS if lpg else 0):
        LW = "%s link%d" % (W, link)
        if link >= lpg:
            run(LW, "nvmlDeviceGetNvLinkState", lambda: N.nvmlDeviceGetNvLinkState(h, link), ("err", 2, 3))
            continue
        st = run(LW, "nvmlDeviceGetNvLinkState", lambda: N.nvmlDeviceGetNvLinkState(h, link), EQ(1))
        if nvv is not None:
            run(LW, "nvmlDeviceGetNvLinkVersion", lambda: N.nvmlDeviceGetNvLinkVersion(h, link), EQ(int(nvv)))

        def rpci():
            p = N.nvmlDeviceGetNvLinkRemotePciInfo(h, link)
            return s(p.busId).upper()
        allowed = set(buses) | set(switches)
        rb = run(LW, "nvmlDeviceGetNvLinkRemotePciInfo_v2", rpci,
                 PRED(lambda v: v in allowed and v != buses[i], "a GPU or NVSwitch bus id of the profile (not itself)")
                 if switches else PREDNS(lambda v: len(v) == 16 and v != buses[i], "a well-formed bus id, not itself"))
        want_type = 0 if rb in buses else 2 if rb in switches else None
        run(LW, "nvmlDeviceGetNvLinkRemoteDeviceType", lambda: N.nvmlDeviceGetNvLinkRemoteDeviceType(h, link),
            EQ(want_type) if want_type is not None else PREDNS(lambda v: v in (0, 1, 2), "GPU/IBMNPU/SWITCH"))
        run(LW, "nvmlDeviceGetNvLinkCapability(P2P)", lambda: N.nvmlDeviceGetNvLinkCapability(h, link, 0),
            PRED(lambda v: v in (0, 1), "0/1"))
        if not d.get("nvlink_error"):
            for cnt in range(5):
                run(LW, "nvmlDeviceGetNvLinkErrorCounter(%d)" % cnt, lambda: N.nvmlDeviceGetNvLinkErrorCounter(h, link, cnt), EQ(0))
        if link == 0:
            run(LW, "nvmlDeviceGetNvLinkUtilizationCounter", lambda: N.nvmlDeviceGetNvLinkUtilizationCounter(h, link, 0),
                PREDNS(lambda v: True, "any"))

    # ---- fabric
    check_fabric(W, h, d)

    # ---- field values (every element's nvmlReturn must be written)
    fids = [(1, onoff(ecc.get("mode_current", "disabled")) if ecc.get("mode_current") else None),
            (2, onoff(ecc.get("mode_pending", ecc.get("mode_current"))) if ecc.get("mode_current") else None),
            (82, th.get("temperature_memory_c") or None),
            (187, pw.get("min_limit_mw")), (188, pw.get("max_limit_mw")), (189, pw.get("default_limit_mw")),
            (190, pw.get("enforced_limit_mw")), (186, pw.get("current_draw_mw")),
            (91, lpg if lpg else None), (94, pcie.get("replay_counter", 0)),
            (9999, "NS")]
    if ecc_on:
        for fid, path in ((3, "volatile.single_bit"), (4, "volatile.double_bit"),
                          (5, "aggregate.single_bit"), (6, "aggregate.double_bit")):
            fids.append((fid, (get(errs, path) or {}).get("total", 0)))
    if rp is not None:
        fids += [(29, len(get(rp, "single_bit_retirement.addresses") or [])),
                 (30, len(get(rp, "double_bit_retirement.addresses") or []))]
    if rr is not None:
        fids += [(142, rr.get("correctable", 0)), (143, rr.get("uncorrectable", 0))]

    def fv():
        arr = (N.c_nvmlFieldValue_t * len(fids))()
        for k, (fid, _) in enumerate(fids):
            arr[k].fieldId = fid
            arr[k].nvmlReturn = 0xdeadbeef
        rc_ = N._nvmlGetFunctionPointer("nvmlDeviceGetFieldValues")(h, c_int(len(fids)), byref(arr))
        if rc_ != 0:
            raise N.NVMLError(rc_)
        return arr
    arr = run(W, "nvmlDeviceGetFieldValues", fv, OK)
    if arr is not None:
        for k, (fid, exp) in enumerate(fids):
            e = arr[k]
            label = "nvmlDeviceGetFieldValues(id %d)" % fid
            if e.nvmlReturn == 0xdeadbeef:
                fail(W, label, "element nvmlReturn not written", 0)
                continue
            if exp == "NS":
                if e.nvmlReturn == 0:
                    fail(W, label, "unknown field id returned SUCCESS", 0)
                continue
            if exp is None:
                if e.nvmlReturn not in (0, NS):
                    fail(W, label, "nvmlReturn %d" % e.nvmlReturn, e.nvmlReturn)
                continue
            if e.nvmlReturn != 0:
                fail(W, label, "nvmlReturn %d, want SUCCESS with %r" % (e.nvmlReturn, exp), e.nvmlReturn)
                continue
            vt = e.valueType
            val = {0: e.value.dVal, 1: e.value.uiVal, 2: e.value.ulVal, 3: e.value.ullVal, 4: e.value.sllVal}.get(vt)
            if val != exp:
                fail(W, label, "value %r (type %d), want %r" % (val, vt, exp), 0)

    # ---- GPM
    gpm = d.get("gpm") or {}
    gpm_sup = gpm.get("supported")
    if gpm_sup is None:
        gpm_sup = archn >= ARCH["hopper"]
    sup = run(W, "nvmlGpmQueryDeviceSupport", lambda: N.nvmlGpmQueryDeviceSupport(h).isSupportedDevice,
              EQ(1) if gpm_sup else EQNS(0))
    if sup:
        def gpm_metrics():
            s1, s2 = N.nvmlGpmSampleAlloc(), N.nvmlGpmSampleAlloc()
            try:
                N.nvmlGpmSampleGet(h, s1)
                time.sleep(0.05)
                N.nvmlGpmSampleGet(h, s2)
                mg_ = N.c_nvmlGpmMetricsGet_t()
                mg_.version = N.NVML_GPM_METRICS_GET_VERSION
                mg_.numMetrics = 4
                mg_.sample1, mg_.sample2 = s1, s2
                for k, mid_ in enumerate((1, 2, 20, 21)):
                    mg_.metrics[k].metricId = mid_
                    mg_.metrics[k].nvmlReturn = 0xdeadbeef
                N.nvmlGpmMetricsGet(mg_)
                return [(mg_.metrics[k].nvmlReturn, mg_.metrics[k].value) for k in range(4)]
            finally:
                N.nvmlGpmSampleFree(s1)
                N.nvmlGpmSampleFree(s2)
        tx, rx = gpm.get("pcie_tx_mib_per_sec"), gpm.get("pcie_rx_mib_per_sec")

        def gpm_ok(v):
            if any(r != 0 for r, _ in v):
                return False
            if not all(0 <= x <= 100 for _, x in v[:2]):
                return False
            return (tx is None or abs(v[2][1] - tx) < 1e-6) and (rx is None or abs(v[3][1] - rx) < 1e-6)
        run(W, "nvmlGpmMetricsGet", gpm_metrics, PRED(gpm_ok, "every metric SUCCESS, utils 0-100, PCIe as the profile"))

if len(board_ids) > 1 and len(set(board_ids)) != len(board_ids):
    fail(G, "nvmlDeviceGetBoardId", "board ids not unique: %r" % board_ids, 0)

# ---- events
es_ = run(G, "nvmlEventSetCreate", N.nvmlEventSetCreate, OK)
if es_ is not None:
    for i, h in enumerate(handles):
        run("%s gpu%d" % (G, i), "nvmlDeviceGetSupportedEventTypes", lambda: N.nvmlDeviceGetSupportedEventTypes(h),
            PRED(lambda v: v & N.nvmlEventTypeXidCriticalError, "includes XidCriticalError"))
        run("%s gpu%d" % (G, i), "nvmlDeviceRegisterEvents", lambda: N.nvmlDeviceRegisterEvents(h, N.nvmlEventTypeXidCriticalError, es_), OK)
    t0 = time.monotonic()
    run(G, "nvmlEventSetWait_v2(100ms, no fault)", lambda: N.nvmlEventSetWait_v2(es_, 100), ("err", 10))
    dt = time.monotonic() - t0
    if not 0.05 <= dt <= 5:
        fail(G, "nvmlEventSetWait_v2", "waited %.3f s for a 100 ms timeout" % dt)
    run(G, "nvmlEventSetFree", lambda: N.nvmlEventSetFree(es_), OK)

N.nvmlShutdown()
run(G, "nvmlDeviceGetCount after nvmlShutdown", N.nvmlDeviceGetCount, ("err", 1))

for w, c, why in fails:
    print("FAIL: %s: %s: %s" % (w, c, why))
for c, rcs in sorted(bad_calls.items()):
    print("# bad call: %s: %s" % (c, ", ".join("rc %d x%d" % (r, n) for r, n in sorted(rcs.items()))))
if lenient:
    print("# NOT_SUPPORTED accepted (the profile gives no value, or the design allows it): " +
          ", ".join("%s x%d" % (c, k) for c, k in sorted(lenient.items())))
print("%s: %d checks on %d GPUs, %d failed" % (tag, nchecks, count, len(fails)))
sys.exit(1 if fails else 0)
PYEOF

# A variant of a100 with non-zero values wherever a getter could fall back
# to a constant, plus per-device blocks (given whole, so the deep merge and
# the reference's wholesale replace agree).
cat > "$T/rich.py" <<'PYEOF'
import sys, yaml
p = yaml.safe_load(open(sys.argv[1]))
dd = p["device_defaults"]
dd["fan"] = {"count": 2, "speed_percent": "45", "target_speed_percent": "50"}
dd["utilization"] = {"gpu": 37, "memory": 21, "encoder": 5, "decoder": 6, "jpeg": 7, "ofa": 8}
dd["encoder_stats"] = {"session_count": 2, "average_fps": 30, "average_latency_us": 1200}
dd["fbc_stats"] = {"session_count": 1, "average_fps": 60, "average_latency_us": 800}
dd["pcie"].update({"replay_counter": 7, "tx_throughput_kbps": 1000, "rx_throughput_kbps": 2000, "current_link_gen": 3, "current_link_width": 8})
dd["performance_state"] = "P2"
dd["power"]["power_state"] = "P2"
dd["persistence_mode"] = "disabled"
dd["compute_mode"] = "exclusive_process"
dd["accounting"] = {"mode": "enabled", "buffer_size": 4000}
dd["clocks_throttle_reasons"].update({"gpu_idle": False, "sw_power_cap": True, "counters": {"sw_power_cap_us": 1500}})
dd["ecc"]["errors"] = {
    "volatile": {"single_bit": {"device_memory": 3, "total": 3}, "double_bit": {"device_memory": 1, "total": 1}},
    "aggregate": {"single_bit": {"device_memory": 10, "total": 10}, "double_bit": {"device_memory": 2, "total": 2}}}
dd["ecc"]["sram"] = {
    "volatile": {"correctable": 5, "uncorrectable_parity": 1, "uncorrectable_secded": 2},
    "aggregate": {"correctable": 7, "uncorrectable_parity": 1, "uncorrectable_secded": 2},
    "uncorrectable_sources": {"l2": 1, "sm": 2, "microcontroller": 0, "pcie": 0, "other": 0},
    "threshold_exceeded": True}
dd["retired_pages"] = {"single_bit_retirement": {"count": 2, "addresses": [0x1000, 0x2000]},
                       "double_bit_retirement": {"count": 1, "addresses": [0x3000]},
                       "pending_blacklist": True, "pending_retirement": True}
dd["remapped_rows"] = {"correctable": 2, "uncorrectable": 1, "pending": True, "failure_occurred": False,
                       "availability_histogram": {"max": 600, "high": 10, "partial": 2, "low": 1, "none": 0}}
dd["processes"] = [{"pid": 4242, "type": "C", "name": "/usr/bin/python3", "used_memory_mib": 512},
                   {"pid": 4343, "type": "G", "name": "/usr/bin/Xorg", "used_memory_mib": 256}]
th = dict(dd["thermal"]); th["temperature_gpu_c"] = 55
pw = dict(dd["power"]); pw["current_draw_mw"] = 123456
p["devices"][1]["thermal"] = th
p["devices"][2]["power"] = pw
p["devices"][3]["processes"] = []
yaml.safe_dump(p, open(sys.argv[2], "w"), sort_keys=False)
PYEOF

# run_check TAG PROFILE MODE [FABRIC]: stage and run check.py.  FABRIC:
# "waiting" = the fabric manager state dir exists without the readiness
# marker (fabric state "auto" is IN_PROGRESS), "ready" = with the marker
# (COMPLETED); default: as staged (no state dir: no fabric manager is set
# up, COMPLETED).
run_check() {
	local tag=$1 p=$2 mode=$3 fab=${4:-} h=$T/$1 fm want=3
	rm -rf "$h"
	if ! stage "$h" "$p"; then
		fail "$tag: staging failed"
		return
	fi
	fm=$h$R/fabric-state
	case $fab in
	waiting) mkdir -p "$fm"; rm -f "$fm/fabricmanager.ready" ;;
	ready) mkdir -p "$fm"; : > "$fm/fabricmanager.ready" ;;
	esac
	[ -d "$fm" ] && [ ! -e "$fm/fabricmanager.ready" ] && want=2
	env -u MOCK_NVML_CONFIG -u MOCK_NVML_OVERRIDES -u MOCK_FABRICMANAGER_STATE_DIR -u MOCK_TOPOLOGY_CONFIG \
		LD_LIBRARY_PATH="$h$R/driver/usr/lib64" TAG=$tag FABRIC_AUTO=$want \
		timeout 300 "$PY" "$T/check.py" "$PYDIR" "$p" "$mode" > "$T/out.$tag" 2>&1
	local rc=$?
	grep -v '^FAIL: ' "$T/out.$tag" | grep -v '^# bad call' | tail -3 | sed 's/^\([^o#]\)/# \1/' | cut -c1-600
	if [ $rc -eq 0 ]; then
		pass "$tag: every pynvml getter agrees with the profile"
	else
		fail "$tag: pynvml ($(grep -c '^FAIL: ' "$T/out.$tag") failed checks, rc $rc)"
		grep '^FAIL: ' "$T/out.$tag" | head -${MAX_FAIL_LINES:-40} | sed 's/^/  /'
		grep '^# bad call' "$T/out.$tag" | sed 's/^/  /'
		grep -v '^FAIL: \|^# bad call\|^ok: \|checks' "$T/out.$tag" | tail -20 | sed 's/^/  # /'
	fi
	rm -rf "$h"
}

n=0
for p in "$S"/etc/profiles/*.yaml; do
	[ -f "$p" ] || continue
	n=$((n + 1))
	name=$(basename "$p" .yaml)
	run_check "$name" "$p" all
	if grep -q '^  fabric:' "$p"; then
		run_check "$name-fabric-waiting" "$p" fabric waiting
		run_check "$name-fabric-ready" "$p" fabric ready
	fi
done
[ "$n" -gt 0 ] || fail "no profiles in $S/etc/profiles"

if "$PY" "$T/rich.py" "$S/etc/profiles/a100.yaml" "$T/a100-rich.yaml"; then
	run_check a100-rich "$T/a100-rich.yaml" all
else
	fail "could not write the a100-rich variant"
fi
finish
