#!/bin/bash
# Benchmark (a report, never a pass/fail test) of mokka-pcifs:
#  - one unbind+bind round trip of a GPU (two write(2)s through FUSE, each
#    applied before it returns) against the same two writes on plain files;
#  - reading the whole PCI tree (every attribute of every function, as
#    `lspci -vv` and NFD do) through the view against the plain staged tree.
# Medians of RUNS batches of N operations, measured in one process.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../integration/pci_lib.sh"
RUNS=${RUNS:-5}
N=${N:-500}
stage_node "$S/etc/profiles/${PROFILE:-h100}.yaml"
start_pcifs
mkdir -p "$T/plain"
: > "$T/plain/unbind"
: > "$T/plain/bind"

python3 - "$VIEW/sys" "$NODE/sys" "$T/plain" "$RUNS" "$N" <<'PY'
import os, sys, time, statistics
view, plain_sys, plain, runs, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
bdf = b"0000:1a:00.0\n"

def trip(unbind, bind):
    t = time.perf_counter()
    for _ in range(n):
        for p in (unbind, bind):
            fd = os.open(p, os.O_WRONLY)
            os.write(fd, bdf)
            os.close(fd)
    return (time.perf_counter() - t) / n

def walk(root):
    t, files = time.perf_counter(), 0
    for base in ("bus/pci/devices",):
        for name in sorted(os.listdir(os.path.join(root, base))):
            d = os.path.realpath(os.path.join(root, base, name))
            for a in os.listdir(d):
                p = os.path.join(d, a)
                if os.path.isfile(p) and os.access(p, os.R_OK):
                    try:
                        with open(p, "rb") as f:
                            f.read()
                        files += 1
                    except OSError:
                        pass
    return time.perf_counter() - t, files

drv = os.path.join(view, "bus/pci/drivers/nvidia")
fuse = statistics.median(trip(drv + "/unbind", drv + "/bind") for _ in range(runs))
flat = statistics.median(trip(plain + "/unbind", plain + "/bind") for _ in range(runs))
print("bench: pcifs unbind+bind round trip %.1f us, plain-file writes %.1f us, ratio %.1f"
      % (fuse * 1e6, flat * 1e6, fuse / flat))
rv = [walk(view) for _ in range(runs)]
rp = [walk(plain_sys) for _ in range(runs)]
tv, tp = statistics.median(r[0] for r in rv), statistics.median(r[0] for r in rp)
print("bench: pcifs whole-tree read %.1f ms (%d files), plain staged tree %.1f ms (%d files), ratio %.1f"
      % (tv * 1e3, rv[0][1], tp * 1e3, rp[0][1], tv / tp))
PY
finish
