#!/bin/bash
# Benchmark (a report, never a pass/fail test) of MIG and the device state
# store in the mock NVML (tests/bench/mig_bench.c, built here), on the
# a100 profile staged by mokka-worker-gpudriver: the cost of creating and
# destroying a GPU instance with its compute instance (a locked
# read-modify-write of the store, twice each way) against the same call on
# a GPU without MIG (refused before the store) and against one setter's
# write; and a getter's cost with MIG on (two instances) against MIG off.
# Prints ratios; medians of 15 batches.
. "$(dirname "$0")/../lib.sh"
CC=${CC:-cc}
GPUDRIVER=$B/mokka-worker-gpudriver
[ -x "$GPUDRIVER" ] || die "$GPUDRIVER not built"
MOKKA_MIG_NO_WATCH=1 MOKKA_PKGLIBDIR=${MOKKA_PKGLIBDIR:-$B/.libs} \
	"$GPUDRIVER" --host-root "$ROOT" --config "$S/etc/profiles/a100.yaml" stage > "$T/stage.log" 2>&1 ||
	die "gpudriver stage failed: $(tail -5 "$T/stage.log")"
"$CC" -O2 -o "$T/mig_bench" "$S/tests/bench/mig_bench.c" -ldl || die "cannot build mig_bench"
"$T/mig_bench" "$ROOT$R/driver/usr/lib64/libnvidia-ml.so.1" > "$T/out" 2> "$T/err" ||
	die "mig_bench failed: $(cat "$T/err")"
v() { awk -v k="$1" '$1 == k { print $2 }' "$T/out"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }'; }
echo "bench: MIG GI+CI create+destroy $(v pair_create_destroy_mig_on) us" \
	"(x$(ratio "$(v pair_create_destroy_mig_on)" "$(v create_call_mig_off)") the same calls on a GPU without MIG," \
	"$(v create_call_mig_off) us; x$(ratio "$(v pair_create_destroy_mig_on)" "$(v setter_write)") one setter's store write, $(v setter_write) us)"
echo "bench: getter with MIG on: memory $(v getter_memory_mig_on) us" \
	"(x$(ratio "$(v getter_memory_mig_on)" "$(v getter_memory_mig_off)") MIG off, $(v getter_memory_mig_off) us)," \
	"utilization $(v getter_util_mig_on) us (x$(ratio "$(v getter_util_mig_on)" "$(v getter_util_mig_off)") MIG off, $(v getter_util_mig_off) us)"
finish
