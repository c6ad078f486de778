#!/bin/bash
# Set everything up on a fresh Debian 12 machine and run every test:
# dependencies; the container image test (in the background from the
# start: it mostly waits on the network and apt); a -Werror build with the
# unit and fuzz tests; an ASan/UBSan build with every test (unit, fuzz and
# the integration suite against real consumers); `make distcheck`; the
# benchmark report.  Needs root (mknod, namespaces).  Each phase prints
# its wall time, so CI's budget (15 minutes) can be watched.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
jobs=$(nproc 2>/dev/null || echo 2)

if [ "${MOKKA_SKIP_DEPS:-0}" != 1 ]; then
	./scripts/install-deps.sh
fi
./autogen.sh

summary=()
total_pass=0
total_fail=0
count() { # count BUILDDIR LABEL
	local p f
	p=$(cat "$1"/test-suite.log 2>/dev/null | awk '/^# PASS:/{print $3}')
	f=$(cat "$1"/test-suite.log 2>/dev/null | awk '/^# (FAIL|ERROR|XPASS):/{s+=$3} END{print s+0}')
	total_pass=$((total_pass + ${p:-0}))
	total_fail=$((total_fail + ${f:-0}))
	summary+=("$2: ${p:-0} passed, ${f:-0} failed")
}

t_start=$(date +%s)
phase() { echo "phase: $1 done after $(( $(date +%s) - t_start )) s"; }

run_check() { # run_check BUILDDIR LABEL TESTS CONFIGURE-ARGS...
	local dir=$1 label=$2 tests=$3; shift 3
	rm -rf "$dir"; mkdir -p "$dir"
	(cd "$dir" && "$top/configure" -q "$@" && make -j"$jobs" >/dev/null) || return 1
	local rc=0
	make -C "$dir" -j"$jobs" check ${tests:+"TESTS=$tests"} || rc=$?
	count "$dir" "$label"
	if [ $rc -ne 0 ]; then
		cat "$dir"/test-suite.log || true
		for f in "$dir"/tests/integration/*.log; do
			grep -q '^FAIL' "$f" 2>/dev/null && { echo "== $f"; cat "$f"; }
		done
	fi
	return $rc
}

rc=0
# The container image test (tests/integration/image.sh: debootstrap, podman
# build of the Dockerfile, a privileged container) spends minutes waiting on
# the network and apt and needs no build tree, so it starts first and runs
# beside everything else.
image_pid=
rm -rf build-image; mkdir -p build-image
if [ "${MOKKA_IMAGE_TEST-1}" = 1 ]; then
	MOKKA_IMAGE_TEST=1 MOKKA_BUILDDIR=$top/build-image MOKKA_SRCDIR=$top \
		bash tests/integration/image.sh >build-image/image.log 2>&1 &
	image_pid=$!
fi
# -Werror: the shipped build, with its unit and fuzz tests and the tests
# that mean something only without a sanitizer's allocator (the image test
# runs the shipped build end to end).
unit_tests='$(filter test_% fuzz_%,$(check_PROGRAMS))'
# NVIDIA's Go stack (make check-nvidia-stack) runs once, here: its programs
# load only the shims, which never carry a sanitizer.
plain_tests='tests/integration/refused_profile_rss.sh $(NVIDIA_STACK_TESTS)'
run_check build-ci "gcc -Werror" "$unit_tests $plain_tests" --enable-werror || rc=1
phase "gcc -Werror"
# distcheck: the tarball builds, installs and runs the unit and fuzz tests
# from a clean tree (the integration suite ships in the tarball as
# dist_check_SCRIPTS and runs below).  Not every check program is a test
# (ib_client, ib_shim_probe are helpers of integration tests).  It needs
# only the -Werror tree and mostly compiles, so it runs beside the
# sanitizer pass, whose integration tests mostly wait.
distcheck_pid=
if [ $rc -eq 0 ]; then
	FUZZ_ITERATIONS=2000 make -C build-ci distcheck "TESTS=$unit_tests" \
		>build-ci/distcheck.log 2>&1 &
	distcheck_pid=$!
fi
# Sanitizers: ASan + UBSan over the unit, fuzz and integration tests.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:verify_asan_link_order=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	run_check build-san "ASan+UBSan" "" --enable-sanitizers || rc=1
phase "ASan+UBSan"
if [ -n "$image_pid" ]; then
	if wait "$image_pid"; then
		total_pass=$((total_pass + 1)); summary+=("image: ok")
	else
		cat build-image/image.log; total_fail=$((total_fail + 1)); summary+=("image: FAILED"); rc=1
	fi
	phase "image"
fi
if [ -n "$distcheck_pid" ]; then
	if wait "$distcheck_pid"; then
		summary+=("distcheck: ok")
	else
		tail -60 build-ci/distcheck.log; summary+=("distcheck: FAILED"); rc=1
	fi
fi
phase "distcheck"
# Benchmark: a report of ratios measured in this run, never a verdict.
if [ $rc -eq 0 ]; then
	MOKKA_BUILDDIR=$top/build-ci MOKKA_SRCDIR=$top bash tests/bench/reconcile.sh | grep '^bench:' || true
	MOKKA_BUILDDIR=$top/build-ci MOKKA_SRCDIR=$top RUNS=2 bash tests/bench/scale.sh | grep '^bench:' || true
	MOKKA_BUILDDIR=$top/build-ci MOKKA_SRCDIR=$top bash tests/bench/nvml.sh | grep '^bench:' || true
	MOKKA_BUILDDIR=$top/build-ci MOKKA_SRCDIR=$top bash tests/bench/nvml_instr.sh | grep '^bench:' || true
	MOKKA_BUILDDIR=$top/build-ci MOKKA_SRCDIR=$top bash tests/bench/ib.sh | grep '^bench:' || true
	MOKKA_BUILDDIR=$top/build-ci MOKKA_SRCDIR=$top bash tests/bench/pci.sh | grep '^bench:' || true
	MOKKA_BUILDDIR=$top/build-ci MOKKA_SRCDIR=$top bash tests/bench/mig.sh | grep '^bench:' || true
	MOKKA_BUILDDIR=$top/build-ci MOKKA_SRCDIR=$top bash tests/bench/fidelity.sh | grep '^bench:\|^fidelity:' || true
	MOKKA_BUILDDIR=$top/build-ci MOKKA_SRCDIR=$top PLAN_CLI=0 bash tests/bench/plan.sh | grep '^bench:' || true
	# 200 kills (the release check) take ~7 min on 2 cores: CI runs 20
	# (make check's chaos test already ran 20 more under ASan).
	MOKKA_BUILDDIR=$top/build-ci MOKKA_SRCDIR=$top CHAOS_ROUNDS=${CHAOS_ROUNDS:-20} CHAOS_SUP_KILLS=2 \
		bash tests/bench/chaos.sh | grep '^bench:' || true
fi

phase "benchmarks"
printf '%s\n' "${summary[@]}"
[ $rc -eq 0 ] || total_fail=$((total_fail > 0 ? total_fail : 1))
echo "$total_pass passed, $total_fail failed"
exit $rc
