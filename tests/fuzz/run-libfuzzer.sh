#!/bin/bash
# `make fuzz` (tests/fuzz.am): run-libfuzzer.sh SRCDIR FUZZ_BUILDDIR TARGET...
# Builds the targets with libFuzzer + ASan + UBSan in FUZZ_BUILDDIR (a tree
# configured with FUZZ_CC; tests/fuzz/driver.c is empty there), then runs
# each for FUZZ_SECONDS (0: no run, only the corpus step), FUZZ_JOBS at a
# time, on a work corpus seeded from tests/fuzz/corpus/<target>/ and
# tests/fuzz/regress/<target>/.  Afterwards tests/fuzz/corpus/<target>/ is
# its hand-named seeds plus a minimal set covering every edge reached, and
# every crash, leak, timeout or out-of-memory input is copied to
# tests/fuzz/regress/<target>/ (replayed by `make check`).  Prints one line
# per target; exits 1 when anything was found or could not run.
set -u
src=$1 fb=$2
shift 2
secs=${FUZZ_SECONDS:-180}
jobs=${FUZZ_JOBS:-1}

if [ -z "${FUZZ_CC:-}" ]; then
	echo "make fuzz: configure found no C compiler with libFuzzer (clang -fsanitize=fuzzer):" \
		"install clang and libclang-rt-dev (scripts/install-deps.sh) and rerun configure," \
		"or run configure FUZZ_CC=/path/to/clang" >&2
	exit 1
fi
[ $# -gt 0 ] || { echo "make fuzz: no fuzz targets" >&2; exit 1; }
case $secs in '' | *[!0-9]*) echo "make fuzz: FUZZ_SECONDS='$secs' is not a number" >&2; exit 1 ;; esac

. "$src/tests/fuzz/libfuzzer-build.sh"
libfuzzer_build "make fuzz" "$FUZZ_CC" "$src" "$fb" "$@" || exit 1

# keep_minimal TARGET CORPUS WORK: CORPUS becomes its hand-named seeds plus
# a set of inputs (named by their SHA-1, as libFuzzer names them) that
# covers every edge CORPUS and WORK reach; WORK keeps everything for the
# next run here.  Edges, not hit counts, keep the committed corpus small.
keep_minimal() {
	local t=$1 corp=$2 work=$3 min=$fb/merge/$1 f n named
	rm -rf "$min"
	mkdir -p "$min"
	(cd "$fb" && "./$t" -merge=1 -use_counters=0 "$min" "$corp" "$work") > "$fb/$t.merge.log" 2>&1 ||
		{ echo "fuzz: $t: merge failed (see $fb/$t.merge.log); corpus left as it was"; return; }
	named=$(find "$corp" -type f ! -regex '.*/[0-9a-f]\{40\}' -exec sha1sum {} + | cut -d' ' -f1)
	for f in "$corp"/*; do
		n=${f##*/}
		[[ $n =~ ^[0-9a-f]{40}$ ]] && [ ! -e "$min/$n" ] && rm -f "$f"
	done
	for f in "$min"/*; do
		n=${f##*/}
		[ -e "$f" ] && [ ! -e "$corp/$n" ] && ! grep -qx "$n" <<<"$named" && cp "$f" "$corp/$n"
	done
	return 0
}

run_one() { # run_one TARGET: writes $fb/TARGET.result
	local t=$1 corp=$src/tests/fuzz/corpus/$1 reg=$src/tests/fuzz/regress/$1
	local work=$fb/corpus/$1 art=$fb/artifacts/$1 log=$fb/$1.log
	local dirs rc execs before after found=() f

	rm -rf "$art"
	mkdir -p "$work" "$art" "$corp"
	dirs=("$work" "$corp")
	[ -d "$reg" ] && dirs+=("$reg")
	rc=0
	if [ "$secs" -gt 0 ]; then
		(cd "$fb" && "./$t" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 \
			-print_final_stats=1 -artifact_prefix="$art/" "${dirs[@]}") > "$log" 2>&1
		rc=$?
	fi
	execs=-
	[ "$secs" -gt 0 ] && execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	before=$(find "$corp" -type f | wc -l)
	keep_minimal "$t" "$corp" "$work"
	after=$(find "$corp" -type f | wc -l)
	for f in "$art"/crash-* "$art"/leak-* "$art"/timeout-* "$art"/oom-*; do
		[ -f "$f" ] || continue
		mkdir -p "$reg" && cp "$f" "$reg/" && found+=("tests/fuzz/regress/$t/${f##*/}")
	done
	if [ ${#found[@]} -eq 0 ] && [ $rc -ne 0 ]; then
		found+=("exit $rc without an input (see $log)")
	fi
	echo "fuzz: $t: ${secs} s, ${execs:-?} execs, corpus $before -> $after," \
		"${#found[@]} finding(s)${found[*]:+: ${found[*]}}" | tee "$fb/$t.result"
}

for t in "$@"; do
	rm -f "$fb/$t.result"
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
	run_one "$t" &
done
wait
echo "make fuzz: summary (logs in $fb/<target>.log)"
status=0
for t in "$@"; do
	if [ ! -f "$fb/$t.result" ]; then
		echo "fuzz: $t: did not run"
		status=1
		continue
	fi
	cat "$fb/$t.result"
	grep -q ', 0 finding(s)$' "$fb/$t.result" || status=1
done
[ $status -eq 0 ] || echo "make fuzz: findings are regression inputs now; fix them, commit both" >&2
exit $status
