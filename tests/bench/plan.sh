#!/bin/bash
# The control plane's planner at the full envelope (issue 14): 100,000
# eligible Nodes, 64 rack groups (100,000 racks), 10,000 runtime policies.
#  1. in process (plan_bench): decode, full plan, emit of every document,
#     and the incremental re-plan with one Node added; peak RSS;
#  2. mokka-plan end to end on the same input written as a kubectl List
#     (wall time and peak RSS of the process; 100,000 files written, so
#     PLAN_CLI=0 skips it, as scripts/test.sh does).
# Run from the build tree: bash $srcdir/tests/bench/plan.sh
# Prints "bench: ..." lines (scripts/test.sh collects them).
set -eu
: "${MOKKA_BUILDDIR:=$(pwd)}"
B=$MOKKA_BUILDDIR
T=$(mktemp -d /tmp/mokka-bench-plan.XXXXXX)
trap 'rm -rf "$T"' EXIT
[ -x "$B/plan_bench" ] || make -C "$B" plan_bench mokka-plan > /dev/null
"$B/plan_bench"
[ "${PLAN_CLI:-1}" = 1 ] || exit 0
"$B/plan_bench" --write "$T/cluster.yaml"
/usr/bin/python3 - "$B/mokka-plan" "$T" <<'PY'
import resource, subprocess, sys, time, os
plan, t = sys.argv[1], sys.argv[2]
start = time.monotonic()
subprocess.run([plan, "-o", f"{t}/out", f"{t}/cluster.yaml"], check=True)
wall = time.monotonic() - start
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
size = os.path.getsize(f"{t}/cluster.yaml") >> 20
nodes = len(os.listdir(f"{t}/out/nodes"))
print(f"bench: mokka-plan cli {wall * 1000:.0f} ms peak-rss {rss} MiB "
      f"(input {size} MiB, {nodes} desired-state documents)")
PY
