#!/bin/bash
# Benchmark (a report, never a pass/fail test): cold and no-op reconcile
# time of the default profile, each as a ratio to `cp -a` of the resulting
# tree measured in the same run, and the RSS of the whole supervisor tree.
. "$(dirname "$0")/../lib.sh"
RUNS=${RUNS:-5}

ms_now() { echo $(( $(date +%s%N) / 1000000 )); }
published_ms() { # nth "published in N ms" line of the log
	grep -o 'published in [0-9]* ms' "$T/sup.log" | sed -n "${1}p" | awk '{print $3}'
}
median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }

start_supervisor --log-level info
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

# The floor: copying the staged tree.
files=$(find "$ROOT$R" | wc -l)
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

echo "bench: default profile (8x H100), $files paths staged"
echo "bench: startup to /readyz 200: ${startup} ms"
echo "bench: cp -a of the tree (median of $RUNS): ${cp_ms} ms"
awk -v c="$cold" -v n="$noop" -v f="$cp_ms" 'BEGIN{
	if (f <= 0) f = 0.001
	printf "bench: cold reconcile: %d ms = %.1f x cp -a\n", c, c / f
	printf "bench: no-op reconcile (median of runs): %d ms = %.1f x cp -a\n", n, n / f }'
echo "bench: RSS of the supervisor tree ($nproc_tree processes): $((rss / 1024)) MiB ($rss KiB)"
finish
