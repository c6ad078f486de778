#!/bin/bash
# Benchmark (a report): the chaos test's long form (issue 19).
# CHAOS_ROUNDS (default 200) random SIGKILLs of workers and daemons, one
# at a time, the profile flipping 8 <-> 4 GPUs every tenth kill, 10
# supervisor SIGKILLs with restarts; prints kills, survivals and recovery
# times (median, worst).  The assertions are tests/integration/chaos.sh's;
# their failures are printed too (the log is kept then).
here=$(cd "$(dirname "$0")" && pwd)
export CHAOS_ROUNDS=${CHAOS_ROUNDS:-200} CHAOS_FLIP=${CHAOS_FLIP:-10} CHAOS_BURST=${CHAOS_BURST:-1}
export CHAOS_SUP_KILLS=${CHAOS_SUP_KILLS:-10}
log=$(mktemp /tmp/mokka-chaos.XXXXXX)
bash "$here/../integration/chaos.sh" > "$log" 2>&1
rc=$?
line=$(grep '^chaos:' "$log" | tail -1)
grep '^FAIL' "$log" | head -5 | sed 's/^/bench: chaos: /'
echo "bench: ${line:-chaos: no figures (exit $rc)}"
if [ "$rc" = 0 ]; then rm -f "$log"; else echo "bench: chaos: log kept in $log"; fi
exit "$rc"
