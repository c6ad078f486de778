#!/bin/bash
# Benchmark (a report): the chaos test's long form (issue 19).
# CHAOS_ROUNDS (default 200) random SIGKILLs of workers and daemons, the
# profile flipping 8 <-> 4 GPUs every tenth round, 10 supervisor SIGKILLs
# with restarts; prints kills, survivals and recovery times (median,
# worst).  The assertions are tests/integration/chaos.sh's.
here=$(cd "$(dirname "$0")" && pwd)
export CHAOS_ROUNDS=${CHAOS_ROUNDS:-200} CHAOS_FLIP=${CHAOS_FLIP:-10} CHAOS_BURST=${CHAOS_BURST:-1}
export CHAOS_SUP_KILLS=${CHAOS_SUP_KILLS:-10}
report=$(mktemp)
bash "$here/../integration/chaos.sh" > "$report.log" 2>&1
rc=$?
export CHAOS_REPORT=
line=$(grep '^chaos:' "$report.log" | tail -1)
grep '^FAIL' "$report.log" | head -5
echo "${line:-chaos: no figures (exit $rc); see $report.log}"
rm -f "$report"
exit "$rc"
