#!/bin/sh
# issue 12 through real pynvml (Debian's python3-pynvml, unpacked by
# scripts/fetch-consumers.sh) over the mock library gpudriver stages:
#
# 1. The setters through the bindings (persistence, compute mode, power
#    limit with its bounds, application and locked clocks, ECC pending,
#    accounting), each read back by a separate process.
# 2. MIG: SetMigMode, GPU instance profiles v1/v2, placements, capacity,
#    create with and without placement (a taken placement and an unknown
#    profile give the real codes), compute instances, MIG device handles
#    (IsMigDeviceHandle, GetDeviceHandleFromMigDeviceHandle, Gpu/Compute
#    InstanceId, UUID MIG-, name, memory, attributes), the parent's free
#    memory following, destroy (IN_USE while compute instances remain).
# 3. A DRA-driver-like prepare/unprepare (read profiles and placements,
#    create a 1g instance with its compute instance, find its MIG device,
#    CDI name and cap minor, destroy), two of them at once on the same GPU,
#    20 rounds each: never the same instance, nothing left behind.
# Skips (77) only without root or the unpacked pynvml.
set -u
B=${MOKKA_BUILDDIR:?}
S=${MOKKA_SRCDIR:?}
CONS=${MOKKA_CONSUMERS:-/var/cache/mokka-consumers}
PYDIR=$CONS/python3-pynvml/usr/lib/python3/dist-packages
WORKER=$B/mokka-worker-gpudriver
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (device nodes)"; exit 77; }
[ -f "$PYDIR/pynvml.py" ] || { echo "SKIP: pynvml not unpacked at $PYDIR (run scripts/fetch-consumers.sh)"; exit 77; }
[ -x "$WORKER" ] || { echo "FAIL: $WORKER not built"; exit 1; }
export MOKKA_PKGLIBDIR=${MOKKA_PKGLIBDIR:-$B/.libs} MOKKA_MIG_NO_WATCH=1
TMP=$(mktemp -d /tmp/mokka-migpy-XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
H=$TMP/root
mkdir -p "$H"
"$WORKER" --host-root "$H" --config "$S/etc/profiles/a100.yaml" stage > "$TMP/stage.log" 2>&1 ||
	{ sed 's/^/# /' "$TMP/stage.log"; echo "FAIL: stage"; exit 1; }
DR=$H/var/lib/nvml-mock/driver
export LIB=$DR/usr/lib64/libnvidia-ml.so.1 PYTHONPATH=$PYDIR DR

cat > "$TMP/common.py" <<'PYEOF'
import ctypes, os, sys
import pynvml as N
# pynvml dlopens "libnvidia-ml.so.1" by name: load ours first, by path.
N.nvmlLib = ctypes.CDLL(os.environ["LIB"])
N.nvmlInit()
fails = 0
def check(desc, ok):
    global fails
    print(("ok: " if ok else "FAIL: ") + desc)
    if not ok:
        fails += 1
def create_at(h, pid, place):
    """CreateGpuInstanceWithPlacement with the placement by pointer, as the
    C API takes it (pynvml 11.525 passes the struct by value)."""
    gi = N.c_nvmlGpuInstance_t()
    fn = N._nvmlGetFunctionPointer("nvmlDeviceCreateGpuInstanceWithPlacement")
    N._nvmlCheckReturn(fn(h, ctypes.c_uint(pid), ctypes.byref(place), ctypes.byref(gi)))
    return gi
def code(fn, *a):
    try:
        fn(*a)
        return 0
    except N.NVMLError as e:
        return e.value
PYEOF

cat > "$TMP/set.py" <<'PYEOF'
from common import *
h = N.nvmlDeviceGetHandleByIndex(0)
step = sys.argv[1]
if step == "set":
    N.nvmlDeviceSetPersistenceMode(h, 0)
    N.nvmlDeviceSetComputeMode(h, N.NVML_COMPUTEMODE_PROHIBITED)
    lo, hi = N.nvmlDeviceGetPowerManagementLimitConstraints(h)
    check("power limit above max: INVALID_ARGUMENT", code(N.nvmlDeviceSetPowerManagementLimit, h, hi + 1000) == N.NVML_ERROR_INVALID_ARGUMENT)
    N.nvmlDeviceSetPowerManagementLimit(h, lo)
    N.nvmlDeviceSetApplicationsClocks(h, 1215, 1410)
    check("application clocks outside the table: INVALID_ARGUMENT", code(N.nvmlDeviceSetApplicationsClocks, h, 1215, 1411) == N.NVML_ERROR_INVALID_ARGUMENT)
    N.nvmlDeviceSetGpuLockedClocks(h, 1000, 1100)
    N.nvmlDeviceSetEccMode(h, 0)
    N.nvmlDeviceSetAccountingMode(h, 1)
else:
    lo, hi = N.nvmlDeviceGetPowerManagementLimitConstraints(h)
    check("persistence mode read back", N.nvmlDeviceGetPersistenceMode(h) == 0)
    check("compute mode read back", N.nvmlDeviceGetComputeMode(h) == N.NVML_COMPUTEMODE_PROHIBITED)
    check("power limit read back", N.nvmlDeviceGetPowerManagementLimit(h) == lo)
    check("application clocks read back", N.nvmlDeviceGetApplicationsClock(h, N.NVML_CLOCK_MEM) == 1215)
    sm = N.nvmlDeviceGetClockInfo(h, N.NVML_CLOCK_SM)
    check("locked clocks hold the SM clock (%d)" % sm, 1000 <= sm <= 1100)
    check("ECC disable pending", N.nvmlDeviceGetEccMode(h) == [1, 0])
    check("accounting read back", N.nvmlDeviceGetAccountingMode(h) == 1)
    check("GPU 1 untouched", N.nvmlDeviceGetComputeMode(N.nvmlDeviceGetHandleByIndex(1)) == 0)
sys.exit(1 if fails else 0)
PYEOF

cat > "$TMP/mig.py" <<'PYEOF'
from common import *
h = N.nvmlDeviceGetHandleByIndex(0)
N.nvmlDeviceSetMigMode(h, 1)
check("MIG mode enabled", N.nvmlDeviceGetMigMode(h) == [1, 1])
p = N.nvmlDeviceGetGpuInstanceProfileInfo(h, N.NVML_GPU_INSTANCE_PROFILE_1_SLICE)
check("1g profile: id 19, 7 instances, 14 SMs, 4864 MiB, 'MIG 1g.5gb'",
      (p.id, p.instanceCount, p.multiprocessorCount, p.memorySizeMB, p.name) == (19, 7, 14, 4864, "MIG 1g.5gb"))
p1 = N.nvmlDeviceGetGpuInstanceProfileInfo(h, N.NVML_GPU_INSTANCE_PROFILE_7_SLICE, version=1)
check("7g profile (v1 struct): id 0, 8 memory slices' worth", (p1.id, p1.sliceCount, p1.copyEngineCount) == (0, 7, 7))
check("no 6-slice profile on A100: NOT_SUPPORTED",
      code(N.nvmlDeviceGetGpuInstanceProfileInfo, h, N.NVML_GPU_INSTANCE_PROFILE_6_SLICE) == N.NVML_ERROR_NOT_SUPPORTED)
pl = (N.c_nvmlGpuInstancePlacement_t * 8)(); cnt = ctypes.c_uint(0)
N.nvmlDeviceGetGpuInstancePossiblePlacements(h, 9, pl, ctypes.byref(cnt))
check("3g placements {0,4}:4", [(pl[i].start, pl[i].size) for i in range(cnt.value)] == [(0, 4), (4, 4)])
check("remaining 3g capacity 2", N.nvmlDeviceGetGpuInstanceRemainingCapacity(h, 9) == 2)
free0 = N.nvmlDeviceGetMemoryInfo(h).free
place = N.c_nvmlGpuInstancePlacement_t(); place.start = 4; place.size = 4
gi = create_at(h, 9, place)
info = N.nvmlGpuInstanceGetInfo(gi)
check("3g at placement 4 is GPU instance 2", (info.id, info.profileId, info.placement.start) == (2, 9, 4))
check("the same placement again: INSUFFICIENT_RESOURCES",
      code(create_at, h, 9, place) == N.NVML_ERROR_INSUFFICIENT_RESOURCES)
bad = N.c_nvmlGpuInstancePlacement_t(); bad.start = 2; bad.size = 4
check("a placement the profile lacks: INVALID_ARGUMENT",
      code(create_at, h, 9, bad) == N.NVML_ERROR_INVALID_ARGUMENT)
check("an unknown profile id: INVALID_ARGUMENT", code(N.nvmlDeviceCreateGpuInstance, h, 99) == N.NVML_ERROR_INVALID_ARGUMENT)
check("a 7g no longer fits: INSUFFICIENT_RESOURCES", code(N.nvmlDeviceCreateGpuInstance, h, 0) == N.NVML_ERROR_INSUFFICIENT_RESOURCES)
check("parent free memory drops by 19968 MiB",
      free0 - N.nvmlDeviceGetMemoryInfo(h).free == 19968 << 20)
cp = N.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, N.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, 0)
check("1c.3g profile: 3 instances, name", (cp.instanceCount, cp.name) == (3, "MIG 1c.3g.20gb"))
ci2 = N.nvmlGpuInstanceCreateComputeInstance(gi, N.NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE)
ci = N.nvmlGpuInstanceCreateComputeInstance(gi, N.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE)
check("2c + 1c fill the 3g: no 1c left", N.nvmlGpuInstanceGetComputeInstanceRemainingCapacity(gi, 0) == 0)
check("the 1c went to placement 2", N.nvmlComputeInstanceGetInfo(ci).placement.start == 2)
check("max MIG devices 7", N.nvmlDeviceGetMaxMigDeviceCount(h) == 7)
m = N.nvmlDeviceGetMigDeviceHandleByIndex(h, 1)
check("MIG device handle is one", N.nvmlDeviceIsMigDeviceHandle(m).value == 1 and N.nvmlDeviceIsMigDeviceHandle(h).value == 0)
par = N.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(m)
check("its parent is GPU 0", N.nvmlDeviceGetUUID(par) == N.nvmlDeviceGetUUID(h))
check("GPU instance 2, compute instance 1", (N.nvmlDeviceGetGpuInstanceId(m), N.nvmlDeviceGetComputeInstanceId(m)) == (2, 1))
u = N.nvmlDeviceGetUUID(m)
check("MIG- UUID " + str(u), (u.decode() if isinstance(u, bytes) else u).startswith("MIG-"))
nm = N.nvmlDeviceGetName(m)
check("name " + str(nm), (nm.decode() if isinstance(nm, bytes) else nm).endswith("MIG 1c.3g.20gb"))
check("its memory is the instance's", N.nvmlDeviceGetMemoryInfo(m).total == 19968 << 20)
check("a full GPU has no GPU instance id: NOT_SUPPORTED", code(N.nvmlDeviceGetGpuInstanceId, h) == N.NVML_ERROR_NOT_SUPPORTED)
check("destroying the GI with CIs: IN_USE", code(N.nvmlGpuInstanceDestroy, gi) == N.NVML_ERROR_IN_USE)
check("disabling MIG with instances: IN_USE", code(N.nvmlDeviceSetMigMode, h, 0) == N.NVML_ERROR_IN_USE)
N.nvmlComputeInstanceDestroy(ci); N.nvmlComputeInstanceDestroy(ci2); N.nvmlGpuInstanceDestroy(gi)
check("a destroyed instance's handle is refused", code(N.nvmlGpuInstanceGetInfo, gi) == N.NVML_ERROR_INVALID_ARGUMENT)
check("parent free memory back", N.nvmlDeviceGetMemoryInfo(h).free == free0)
sys.exit(1 if fails else 0)
PYEOF

# The DRA-like driver: prepare (profiles, placements, create, find the CDI
# name and the cap minor) and unprepare, ROUNDS times; prints each claim.
cat > "$TMP/dra.py" <<'PYEOF'
from common import *
import time
who, rounds = sys.argv[1], int(sys.argv[2])
h = N.nvmlDeviceGetHandleByIndex(0)
prof = None
for i in range(N.NVML_GPU_INSTANCE_PROFILE_COUNT):
    try:
        p = N.nvmlDeviceGetGpuInstanceProfileInfo(h, i)
    except N.NVMLError:
        continue
    if p.sliceCount == 1 and "+me" not in str(p.name) and prof is None:
        prof = p
minors = dict(l.rsplit(" ", 1) for l in open(os.environ["DR"] + "/proc/driver/nvidia-caps/mig-minors").read().split("\n") if l)
for r in range(rounds):
    pl = (N.c_nvmlGpuInstancePlacement_t * 8)(); cnt = ctypes.c_uint(0)
    N.nvmlDeviceGetGpuInstancePossiblePlacements(h, prof.id, pl, ctypes.byref(cnt))
    gi = None
    for k in range(cnt.value):          # try placements in order, as DRA drivers do
        try:
            gi = create_at(h, prof.id, pl[k]); break
        except N.NVMLError as e:
            if e.value != N.NVML_ERROR_INSUFFICIENT_RESOURCES:
                raise
    t0 = time.monotonic()      # after the create returned: the GI is held from before t0
    ci = N.nvmlGpuInstanceCreateComputeInstance(gi, N.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE)
    gid = N.nvmlGpuInstanceGetInfo(gi).id
    cid = N.nvmlComputeInstanceGetInfo(ci).id
    uuid = None
    for k in range(N.nvmlDeviceGetMaxMigDeviceCount(h)):
        try:
            m = N.nvmlDeviceGetMigDeviceHandleByIndex(h, k)
        except N.NVMLError:
            continue
        if (N.nvmlDeviceGetGpuInstanceId(m), N.nvmlDeviceGetComputeInstanceId(m)) == (gid, cid):
            uuid = N.nvmlDeviceGetUUID(m)
    minor = minors["gpu0/gi%d/ci%d/access" % (gid, cid)]
    time.sleep(0.02)           # the claim in use, so the two drivers' claims overlap
    t1 = time.monotonic()      # held from before t0 to after t1 (destroy comes later)
    print("claim %s %d gi=%d ci=%d minor=%s uuid=%s %.6f %.6f" % (who, r, gid, cid, minor, uuid, t0, t1))
    sys.stdout.flush()
    N.nvmlComputeInstanceDestroy(ci)
    N.nvmlGpuInstanceDestroy(gi)
PYEOF

rc=0
cd "$TMP" || exit 1
python3 set.py set || rc=1
python3 set.py get || rc=1
python3 mig.py || rc=1
python3 dra.py A 20 > "$TMP/a.out" 2>&1 &
pa=$!
python3 dra.py B 20 > "$TMP/b.out" 2>&1 &
pb=$!
wait $pa || { echo "FAIL: DRA-like A: $(tail -3 "$TMP/a.out")"; rc=1; }
wait $pb || { echo "FAIL: DRA-like B: $(tail -3 "$TMP/b.out")"; rc=1; }
n=$(cat "$TMP/a.out" "$TMP/b.out" | grep -c '^claim .* uuid=MIG-')
[ "$n" = 40 ] && echo "ok: two DRA-like drivers at once: 40 claims with a MIG device each" ||
	{ echo "FAIL: $n of 40 claims found their MIG device"; rc=1; }
# Claims of A and B that were held at the same time (both held at both
# claims' t1, taken after creating and before destroying) never share an
# instance: a claim of A overlapping one of B must have another GPU
# instance id.
python3 - "$TMP/a.out" "$TMP/b.out" <<'PYEOF' || rc=1
import sys
rd = lambda f: [l.split() for l in open(f) if l.startswith("claim")]
a, b = rd(sys.argv[1]), rd(sys.argv[2])
both = 0; bad = 0
for x in a:
    for y in b:
        # x held over [x0-, x1+], y over [y0-, y1+]: certainly overlapping
        # when each was created (t0) before the other's t1.  (A t0 taken
        # before the create would also count a claim whose create waited
        # until the other was destroyed: same instance, no overlap.)
        if float(x[7]) < float(y[8]) and float(y[7]) < float(x[8]):
            both += 1
            bad += x[3] == y[3]
print(("ok: " if bad == 0 and both else "FAIL: ") + "claims held at the same time (%d pairs) never shared an instance (%d did)" % (both, bad))
sys.exit(1 if bad or not both else 0)
PYEOF
python3 - <<'PYEOF' || rc=1
import os, sys
sys.path.insert(0, ".")
from common import *
h = N.nvmlDeviceGetHandleByIndex(0)
left = N.nvmlDeviceGetGpuInstanceRemainingCapacity(h, 19)
check("nothing left behind (7 1g free again)", left == 7)
sys.exit(1 if fails else 0)
PYEOF
exit $rc
