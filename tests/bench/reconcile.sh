#!/bin/bash
# Benchmark (a report, never a pass/fail test): cold and no-op reconcile
# time of the default profile, each as a ratio to `cp -a` of the resulting
# tree measured in the same run, the no-op pass and a one-GPU profile edit
# (GPU 3's performance state, a new generation) as a percentage of the cold
# pass (issue 16 goals: <= 5 %, <= 10 %), and the RSS of the whole
# supervisor tree.  Paths: the published tree (R less its shadows R/.staged).
. "$(dirname "$0")/../lib.sh"
RUNS=${RUNS:-5}

ms_now() { echo $(( $(date +%s%N) / 1000000 )); }
published_ms() { # nth "published in N ms" line of the log
	grep -o 'published in [0-9]* ms' "$T/sup.log" | sed -n "${1}p" | awk '{print $3}'
}
median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }

cp "$S/etc/profiles/h100.yaml" "$T/profile.yaml"	# the built-in profile, editable
start_supervisor --config "$T/profile.yaml" --log-level info
t0=$(ms_now)
wait_for 30 is_code /readyz 200 || die "supervisor did not become ready"
startup=$(( $(ms_now) - t0 ))
cold=$(published_ms 1)

# No-op passes: SIGHUP re-runs the pass on an unchanged state.
for i in $(seq 2 $((RUNS + 1))); do
	kill -HUP "$SUP_PID"
	wait_for 10 sh -c "[ \$(grep -c 'published in' '$T/sup.log') -ge $i ]" || die "no-op pass $i did not finish"
done
noop=$(for i in $(seq 2 $((RUNS + 1))); do published_ms "$i"; done | median)

# One GPU changes (a profile edit): a new generation.
python3 - "$T/profile.yaml" <<'PY'
import re, sys
p = sys.argv[1]
s = open(p).read()
s = re.sub(r'(\n  - index: 3\n)', r'\1    performance_state: "P8"\n', s, count=1)
open(p, "w").write(s)
PY
wait_for 30 grep -q 'generation 2 published' "$T/sup.log" || die "the one-GPU edit was not published"
edit=$(grep -o 'generation 2 published in [0-9]* ms' "$T/sup.log" | awk '{print $5}')

# The floor: copying the published tree.
files=$( (cd "$ROOT$R" && find . -path ./.staged -prune -o -print) | wc -l)
cps=$(for i in $(seq "$RUNS"); do
	rm -rf "$T/copy"; a=$(date +%s%N); cp -a "$ROOT$R" "$T/copy"; b=$(date +%s%N)
	echo $(( (b - a) / 1000 ))
done | median)
cp_ms=$(awk -v u="$cps" 'BEGIN{printf "%.3f", u/1000}')

rss=0
for p in $SUP_PID $(pgrep -P "$SUP_PID"); do
	r=$(awk '/^VmRSS:/{print $2}' "/proc/$p/status" 2>/dev/null)
	rss=$((rss + ${r:-0}))
done
nproc_tree=$(( 1 + $(pgrep -P "$SUP_PID" | wc -l) ))

echo "bench: default profile (8x H100), $files paths published"
echo "bench: startup to /readyz 200: ${startup} ms"
echo "bench: cp -a of the tree (median of $RUNS): ${cp_ms} ms"
awk -v c="$cold" -v n="$noop" -v f="$cp_ms" 'BEGIN{
	if (f <= 0) f = 0.001
	printf "bench: cold reconcile: %d ms = %.1f x cp -a\n", c, c / f
	printf "bench: no-op reconcile (median of runs): %d ms = %.1f x cp -a = %.1f %% of cold (goal <= 5 %%)\n", n, n / f, 100 * n / c }'
awk -v c="$cold" -v e="$edit" 'BEGIN{
	printf "bench: one-GPU profile edit: %d ms = %.1f %% of cold (goal <= 10 %%)\n", e, 100 * e / c }'
echo "bench: RSS of the supervisor tree ($nproc_tree processes): $((rss / 1024)) MiB ($rss KiB)"
finish
