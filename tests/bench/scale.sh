#!/bin/bash
# Benchmark (a report, never a pass/fail test), issue 16 "linear scale" and
# "incremental reconcile": per profile, 8 to 64 GPUs and 8 to 256 HCAs
# (etc/profiles/h100.yaml and etc/profiles/large/), the supervisor's cold
# reconcile (its "published in N ms" of generation 1) and its ratio to the
# 8-GPU time, the no-op pass (SIGHUP on an unchanged state, median of
# $RUNS) and a one-GPU edit (GPU 3's performance state: a new generation)
# as a percentage of that cold pass, the published paths, and whether any
# worker operation ran into its deadline ("timed out").  Goals: 64 GPUs
# <= 9x the 8-GPU cold time; no-op <= 5 %, one-GPU edit <= 10 % of cold.
. "$(dirname "$0")/../lib.sh"
RUNS=${RUNS:-3}
PROFILES=${PROFILES:-"h100 large/h100-16gpu large/h100-32gpu large/h100-64gpu large/h100-64gpu-256hca"}

published_ms() { # nth "published in N ms" line of the log
	grep -o 'published in [0-9]* ms' "$T/sup.log" | sed -n "${1}p" | awk '{print $3}'
}
median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
npassed() { grep -c 'published in' "$T/sup.log"; }

one() { # one PROFILE: prints "gpus hcas paths cold noop edit timeouts"
	local p=$1 n
	rm -rf "$ROOT" && mkdir -p "$ROOT"
	cp "$S/etc/profiles/$p.yaml" "$T/profile.yaml"
	start_supervisor --config "$T/profile.yaml" --log-level info
	wait_for 120 is_code /readyz 200 || { stop_supervisor; echo "- - - - - - not-ready"; return; }
	for i in $(seq 2 $((RUNS + 1))); do
		kill -HUP "$SUP_PID"
		wait_for 60 sh -c "[ \$(grep -c 'published in' '$T/sup.log') -ge $i ]" || break
	done
	local noop=$(for i in $(seq 2 $((RUNS + 1))); do published_ms "$i"; done | median)
	n=$(npassed)
	python3 - "$T/profile.yaml" <<'PY'
import re, sys
p = sys.argv[1]
s = open(p).read()
s = re.sub(r'(\n  - index: 3\n)', r'\1    performance_state: "P8"\n', s, count=1)
open(p, "w").write(s)
PY
	wait_for 60 sh -c "[ \$(grep -c 'published in' '$T/sup.log') -gt $n ]"
	local edit=$(published_ms $((n + 1)))
	local gpus=$(grep -c '^  - index:' "$T/profile.yaml")
	local hcas=$(find "$ROOT$R/ib/sys/class/infiniband" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
	local paths=$( (cd "$ROOT$R" && find . -path ./.staged -prune -o -print) | wc -l)
	local tmo=$(grep -c 'timed out' "$T/sup.log")
	stop_supervisor
	echo "$gpus $hcas $paths $(published_ms 1) ${noop:--} ${edit:--} $tmo"
}

base=
for p in $PROFILES; do
	read -r gpus hcas paths cold noop edit tmo < <(one "$p")
	[ -n "$base" ] || base=$cold
	awk -v p="$p" -v g="$gpus" -v h="$hcas" -v n="$paths" -v c="$cold" -v o="$noop" \
		-v e="$edit" -v t="$tmo" -v b="$base" 'BEGIN{
		if (c !~ /^[0-9]+$/) { printf "bench: scale %s: not ready (%s)\n", p, t; exit }
		printf "bench: scale %s: %d GPUs, %d HCAs, %d paths: cold %d ms = %.2f x 8-GPU; ", p, g, h, n, c, c / b
		printf "no-op %s ms = %.1f %% of cold; one-GPU edit %s ms = %.1f %% of cold; ", o, 100 * o / c, e, 100 * e / c
		printf "deadlines hit: %d\n", t }'
done
finish
