#!/bin/bash
# A release-check fuzz campaign: every fuzz target (or the ones named) under
# clang's libFuzzer with ASan + UBSan for SECONDS each (default 1800, the
# issue-19 bar), on a corpus kept in DIR/<target>/ across campaigns (seeded
# from tests/fuzz/corpus/ and tests/fuzz/regress/).  Prints, and writes to
# DIR/report.txt, one line per target: the CPU seconds it had (less than
# SECONDS when the machine is shared), executions, execs/s, coverage
# (libFuzzer's edges "cov" and features "ft" at the end), corpus size (the
# units libFuzzer holds; "kept": the inputs in DIR/<target>/), and
# findings (crash, leak, timeout, oom inputs, kept in DIR/<target>.found/;
# libFuzzer's output in DIR/<target>.log).
# Exits 1 when anything was found or a target could not run.
#
#   scripts/fuzz-campaign.sh [-s SECONDS] [-j JOBS] [-d DIR] [-b BUILDDIR] [TARGET...]
#   nice -n 15 scripts/fuzz-campaign.sh -s 60 fuzz_mockib fuzz_mockib_relay
#
# DIR defaults to BUILDDIR/corpus, the work corpus `make fuzz` uses: after a
# campaign, `make fuzz FUZZ_SECONDS=0` merges what it found into
# tests/fuzz/corpus/ (edge-minimal).  BUILDDIR (default ./fuzz-build, as
# `make fuzz`) is configured with FUZZ_CC (default clang) when needed.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
secs=1800 jobs=1 dir= fb=$PWD/fuzz-build

usage() { sed -n '2,19s/^# \{0,1\}//p' "$0"; exit "${1:-2}"; }
while getopts s:j:d:b:h o; do
	case $o in
	s) secs=$OPTARG ;;
	j) jobs=$OPTARG ;;
	d) dir=$OPTARG ;;
	b) fb=$OPTARG ;;
	h) usage 0 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
case $secs$jobs in '' | *[!0-9]*) echo "fuzz-campaign: -s and -j take numbers" >&2; exit 2 ;; esac
[ "$secs" -gt 0 ] && [ "$jobs" -gt 0 ] || { echo "fuzz-campaign: -s and -j must be > 0" >&2; exit 2; }
case $fb in /*) ;; *) fb=$PWD/$fb ;; esac
dir=${dir:-$fb/corpus}
case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
if [ $# -eq 0 ]; then
	set -- $(cd "$here/tests/fuzz" && ls fuzz_*.c | sed 's/\.c$//')
fi
cc=${FUZZ_CC:-clang}
echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return d && n; }' > "${TMPDIR:-/tmp}/fc-probe.$$.c"
if ! "$cc" -fsanitize=fuzzer -o "${TMPDIR:-/tmp}/fc-probe.$$" "${TMPDIR:-/tmp}/fc-probe.$$.c" 2>/dev/null; then
	rm -f "${TMPDIR:-/tmp}/fc-probe.$$"*
	echo "fuzz-campaign: $cc cannot build with -fsanitize=fuzzer (install clang and" \
		"libclang-rt-dev: scripts/install-deps.sh; or set FUZZ_CC)" >&2
	exit 1
fi
rm -f "${TMPDIR:-/tmp}/fc-probe.$$"*

# The same tree and flags as `make fuzz`.
mkdir -p "$dir" || exit 1
. "$here/tests/fuzz/libfuzzer-build.sh"
libfuzzer_build fuzz-campaign "$cc" "$here" "$fb" "$@" || exit 1

# run_one TARGET: the corpus in DIR/TARGET/ (the layout `make fuzz` keeps
# its work corpus in), findings in DIR/TARGET.found/, DIR/TARGET.log and
# DIR/TARGET.result.
run_one() {
	local t=$1 w=$dir/$1 seeds=() rc execs rate cov ft corp kept found n cpu
	mkdir -p "$w" "$w.found"
	for s in "$here/tests/fuzz/corpus/$t" "$here/tests/fuzz/regress/$t"; do
		[ -d "$s" ] && seeds+=("$s")
	done
	(cd "$fb" && "./$t" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$w.found/" "$w" "${seeds[@]}") \
		> "$w.log" 2>&1
	rc=$?
	# The CPU the fuzzer had (user + system, from this subshell's
	# children): SECONDS of wall time on a shared machine may be less.
	# `times` straight into a file: in a pipe or $(...) it would run in a
	# fresh subshell, whose children used nothing.
	times > "$w.times"
	cpu=$(tail -1 "$w.times" | awk '{ split($1, u, /[ms]/); split($2, s, /[ms]/);
		printf "%d", u[1] * 60 + u[2] + s[1] * 60 + s[2] }')
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$w.log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$w.log" | tail -1)
	# The last status line: "#N  REDUCE|NEW|pulse|DONE  cov: C ft: F corp: K/..."
	cov=$(grep -o 'cov: [0-9]*' "$w.log" | tail -1 | cut -d' ' -f2)
	ft=$(grep -o 'ft: [0-9]*' "$w.log" | tail -1 | cut -d' ' -f2)
	corp=$(grep -o 'corp: [0-9]*' "$w.log" | tail -1 | cut -d' ' -f2)
	kept=$(find "$w" -type f | wc -l)
	found=$(find "$w.found" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
		-o -name 'oom-*' \) | wc -l)
	n=$found
	[ "$found" -eq 0 ] && [ $rc -ne 0 ] && n="exit $rc, no input saved (see $w.log)"
	printf '%-20s %5s s (cpu %5s s) %11s execs %7s/s  cov %5s  ft %6s  corpus %5s (%s kept)  findings %s\n' \
		"$t" "$secs" "${cpu:-?}" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$kept" "$n" \
		| tee "$w.result"
}

for t in "$@"; do
	rm -f "$dir/$t.result"
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
	run_one "$t" &
done
wait
status=0
{
	echo "fuzz-campaign $(date -u +%FT%TZ): $secs s per target, $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')"
	for t in "$@"; do
		if [ -f "$dir/$t.result" ]; then
			cat "$dir/$t.result"
			grep -q 'findings 0$' "$dir/$t.result" || status=1
		else
			echo "$t: did not run"
			status=1
		fi
	done
} > "$dir/report.txt"
echo "fuzz-campaign: summary (also $dir/report.txt; findings in $dir/<target>.found/)"
cat "$dir/report.txt"
[ $status -eq 0 ] || echo "fuzz-campaign: copy findings to tests/fuzz/regress/<target>/, fix, commit both" >&2
exit $status
